package control_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Calendar quotas under reset and top-up (ADR-149, ADR-145). The env's
// clock reads 2026-11-29 12:00 UTC; a daily quota resets at midnight UTC,
// so a shard last materialised this morning is in the current period and
// one last materialised yesterday evening has a reset pending. The shards
// are written directly, as any client may leave them.

var (
	daily   = schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	monthly = schedule.Resets{schedule.MustParseCron("0 0 1 * *")}
)

// tpd is a daily quota of 1000 tokens.
func tpd() limit.Limit { return limit.Quota("tpd", 1000, daily, "") }

// quotaLimit is a shard's limit of quota q: tk, and gc and tu when not 0.
func quotaLimit(q limit.Limit, tk, gc, tu int64) bucketitem.NewLimit {
	return bucketitem.NewLimit{Name: q.Name, Tokens: tk, Consumed: 7_000, Params: q.Params(), ResetSchedule: q.ResetSchedule, GrantShards: gc, TopUp: tu}
}

// dripLimit is a shard's limit of dripping limit l holding tk.
func dripLimit(l limit.Limit, tk int64) bucketitem.NewLimit {
	return bucketitem.NewLimit{Name: l.Name, Tokens: tk, Consumed: 3_000, Params: l.Params(), Schedule: l.Schedule}
}

// putShard writes a shard of entity's bucket on r as given: shard count
// shards, refill stamp rf, vu ahead.
func (e *env) putShard(entity string, shard int, shards int64, rf time.Time, limits ...bucketitem.NewLimit) {
	e.t.Helper()
	n := bucketitem.New{
		ID: schema.BucketID{Namespace: e.ns, Entity: entity, Resource: "r", Shard: shard},
		RF: rf.UnixMilli(), ShardCount: shards, VU: e.clk.Now().Add(time.Hour).UnixMilli(), Limits: limits,
	}
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: n.Item()}); err != nil {
		e.t.Fatal(err)
	}
}

// shardOf reads shard of entity's bucket on r.
func (e *env) shardOf(entity string, shard int) map[string]types.AttributeValue {
	e.t.Helper()
	return e.bucket(entity, "r", shard)
}

func gcOf(it map[string]types.AttributeValue, name string) (int64, bool) {
	return num(it, schema.BucketAttr(name, schema.LimitGrantShards))
}

func tuOf(it map[string]types.AttributeValue, name string) (int64, bool) {
	return num(it, schema.BucketAttr(name, schema.LimitTopUp))
}

// TestResetDailyQuota: a reset of a calendar quota brings every shard to
// its share C // S with its grant sized at S and the period's top-up
// wiped, on one shard and on four with mixed grants (a half grant with a
// top-up, a shard in debt, a lagging shard written before grants, one
// with the day's reset pending); rf moves to now, vu = 0, tc is kept, and
// a lagging count is raised.
func TestResetDailyQuota(t *testing.T) {
	t.Run("one shard", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{tpd()}, ""); err != nil {
			t.Fatal(err)
		}
		now := e.clk.Now()
		e.putShard("a", 0, 1, now.Add(-6*time.Hour), quotaLimit(tpd(), 200_000, 1, 50_000))
		op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if op.Granted["tpd"] != 800 || op.ShardsWritten != 1 || op.ShardCount != 1 {
			t.Fatalf("result %+v, want 800 granted on 1 shard", op)
		}
		it := e.shardOf("a", 0)
		gc, _ := gcOf(it, "tpd")
		_, hasTU := tuOf(it, "tpd")
		rf, _ := num(it, schema.AttrRF)
		vu, _ := num(it, schema.AttrVU)
		if tk(it, "tpd") != 1_000_000 || gc != 1 || hasTU || rf != now.UnixMilli() || vu != 0 || consumed(it, "tpd") != 7_000 {
			t.Fatalf("after the reset: tk %d gc %d tu %v rf %d vu %d tc %d", tk(it, "tpd"), gc, hasTU, rf, vu, consumed(it, "tpd"))
		}
	})
	t.Run("four shards, mixed grants", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{tpd()}, ""); err != nil {
			t.Fatal(err)
		}
		now := e.clk.Now()
		morning, evening := now.Add(-6*time.Hour), now.Add(-16*time.Hour)
		e.putShard("a", 0, 4, morning, quotaLimit(tpd(), 300_000, 2, 20_000)) // balance 300, above the share
		e.putShard("a", 1, 4, morning, quotaLimit(tpd(), -10_000, 4, 0))      // in debt
		e.putShard("a", 2, 2, morning, quotaLimit(tpd(), 100_000, 0, 0))      // lagging, no gc: read as granted at 2
		e.putShard("a", 3, 4, evening, quotaLimit(tpd(), 50_000, 4, 5_000))   // the midnight reset pending
		op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", []string{"tpd"}, control.OperationOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Granted over the materialised balances: shard 0 is trimmed (none),
		// shard 1 gets 260, shard 2 150, shard 3 is at its share already
		// after its pending reset.
		if op.Granted["tpd"] != 410 || op.ShardsWritten != 4 || op.ShardCount != 4 {
			t.Fatalf("result %+v, want 410 granted on 4 shards", op)
		}
		for shard := range 4 {
			it := e.shardOf("a", shard)
			gc, _ := gcOf(it, "tpd")
			_, hasTU := tuOf(it, "tpd")
			sc, _ := num(it, schema.AttrShardCount)
			rf, _ := num(it, schema.AttrRF)
			vu, _ := num(it, schema.AttrVU)
			if tk(it, "tpd") != 250_000 || gc != 4 || hasTU || sc != 4 || rf != now.UnixMilli() || vu != 0 || consumed(it, "tpd") != 7_000 {
				t.Errorf("shard %d: tk %d gc %d tu %v shard_count %d rf %d vu %d tc %d, want the share 250000 granted at 4",
					shard, tk(it, "tpd"), gc, hasTU, sc, rf, vu, consumed(it, "tpd"))
			}
		}
	})
}

// TestTopUpQuotaIsExact (docs/design.md §8, §15): a top-up of a calendar quota adds
// exactly N over the shards, split by coverage weights S / gc with the
// remainder on the lowest shard — a shard written before grants weighted
// by the grant it is read as (R7), which is frozen into its gc as its
// count is raised; Σ tk and Σ tu both grow by exactly N, the shards'
// grants are otherwise kept, and Granted is N.
func TestTopUpQuotaIsExact(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{tpd()}, ""); err != nil {
		t.Fatal(err)
	}
	morning := e.clk.Now().Add(-6 * time.Hour)
	e.putShard("a", 0, 8, morning, quotaLimit(tpd(), 100_000, 8, 0))     // weight 1
	e.putShard("a", 1, 2, morning, quotaLimit(tpd(), 400_000, 0, 0))     // no gc, counted at 2: weight 4
	e.putShard("a", 3, 8, morning, quotaLimit(tpd(), 127_000, 8, 2_000)) // at its ceiling C // 8 + tu: weight 1
	e.putShard("a", 4, 8, morning, quotaLimit(tpd(), -5_000, 8, 0))      // in debt: weight 1
	shards := []int{0, 1, 3, 4}
	gcs := map[int]int64{0: 8, 1: 2, 3: 8, 4: 8}
	before := map[int]map[string]types.AttributeValue{}
	for _, s := range shards {
		before[s] = e.shardOf("a", s)
	}

	op, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpd": 10}, control.OperationOptions{OperationID: "buy-1"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Granted["tpd"] != 10 || op.ShardsWritten != 4 || op.ShardCount != 8 {
		t.Fatalf("result %+v, want exactly 10 granted", op)
	}
	// The expected portions, from the rule: w = S / gc, floor(N × w / Σw),
	// the remainder to the lowest shard.
	const S, n = 8, 10_000
	var sumW int64
	for _, s := range shards {
		sumW += S / gcs[s]
	}
	want := map[int]int64{}
	var given int64
	for _, s := range shards {
		want[s] = n * (S / gcs[s]) / sumW
		given += want[s]
	}
	want[0] += n - given
	if want[0] != 1430 || want[1] != 5714 || want[3] != 1428 || want[4] != 1428 {
		t.Fatalf("the rule gives %v (a wrong test)", want)
	}
	var dTK, dTU int64
	for _, s := range shards {
		it := e.shardOf("a", s)
		tu0, _ := tuOf(before[s], "tpd")
		tu1, _ := tuOf(it, "tpd")
		if got := tk(it, "tpd") - tk(before[s], "tpd"); got != want[s] {
			t.Errorf("shard %d: tk grew by %d, want %d", s, got, want[s])
		}
		if tu1-tu0 != want[s] {
			t.Errorf("shard %d: tu grew by %d, want %d", s, tu1-tu0, want[s])
		}
		gc, _ := gcOf(it, "tpd")
		sc, _ := num(it, schema.AttrShardCount)
		if gc != gcs[s] || sc != S {
			t.Errorf("shard %d: gc %d shard_count %d, want gc %d at 8", s, gc, sc, gcs[s])
		}
		if consumed(it, "tpd") != consumed(before[s], "tpd") {
			t.Errorf("shard %d: tc changed", s)
		}
		dTK += tk(it, "tpd") - tk(before[s], "tpd")
		dTU += tu1 - tu0
	}
	if dTK != n || dTU != n {
		t.Fatalf("Σ tk grew by %d and Σ tu by %d, want exactly %d", dTK, dTU, n)
	}
	// Replayed: nothing more.
	again, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpd": 10}, control.OperationOptions{OperationID: "buy-1"})
	if err != nil || !again.Replayed || again.Granted["tpd"] != 10 {
		t.Fatalf("replay %+v, %v", again, err)
	}
	if tu, _ := tuOf(e.shardOf("a", 1), "tpd"); tu != 5714 {
		t.Fatalf("the replay topped up again: tu %d", tu)
	}
}

// TestPendingResetOfAnUnnamedQuota: a reset or top-up of one limit applies
// the pending reset of a quota it does not name in the same write (the
// share at S, gc = S, the old period's tu gone), and (docs/design.md §8)
// leaves the state of the limits it does not name as their own
// materialisation has it: a dripping limit's accrued refill, a current
// quota's balance, grant and top-up.
func TestPendingResetOfAnUnnamedQuota(t *testing.T) {
	e := newEnv(t)
	tpm, rpm := limit.PerMinute("tpm", 1000), limit.PerMinute("rpm", 10)
	tpmo := limit.Quota("tpmo", 5000, monthly, "")
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{tpm, rpm, tpd(), tpmo}, ""); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	// a: materialised 30 s ago, nothing pending: rpm has accrued 5 tokens.
	e.putShard("a", 0, 1, now.Add(-30*time.Second),
		dripLimit(tpm, 100_000), dripLimit(rpm, 2_000), quotaLimit(tpd(), 400_000, 1, 0), quotaLimit(tpmo, 300_000, 1, 40_000))
	// b and c: two shards; shard 0 materialised yesterday evening, its
	// daily reset pending (it was granted alone, gc 1, and topped up).
	for _, ent := range []string{"b", "c"} {
		e.putShard(ent, 0, 2, now.Add(-16*time.Hour),
			dripLimit(tpm, 100_000), dripLimit(rpm, 2_000), quotaLimit(tpd(), 50_000, 1, 30_000), quotaLimit(tpmo, 300_000, 2, 40_000))
		e.putShard(ent, 1, 2, now.Add(-6*time.Hour),
			dripLimit(tpm, 100_000), dripLimit(rpm, 10_000), quotaLimit(tpd(), 200_000, 2, 0), quotaLimit(tpmo, 2_500_000, 2, 0))
	}

	if _, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", []string{"tpm"}, control.OperationOptions{}); err != nil {
		t.Fatal(err)
	}
	it := e.shardOf("a", 0)
	gc, _ := gcOf(it, "tpmo")
	tu, _ := tuOf(it, "tpmo")
	if tk(it, "tpm") != 1_000_000 || tk(it, "rpm") != 7_000 || tk(it, "tpd") != 400_000 || tk(it, "tpmo") != 300_000 || gc != 1 || tu != 40_000 {
		t.Fatalf("a: tpm %d rpm %d tpd %d tpmo %d (gc %d tu %d); want tpm reset, rpm's 5 accrued tokens, the quotas as they were",
			tk(it, "tpm"), tk(it, "rpm"), tk(it, "tpd"), tk(it, "tpmo"), gc, tu)
	}

	for ent, run := range map[string]func() error{
		"b": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "b", "r", []string{"tpm"}, control.OperationOptions{})
			return err
		},
		"c": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "c", "r", map[string]int64{"rpm": 3}, control.OperationOptions{})
			return err
		},
	} {
		if err := run(); err != nil {
			t.Fatalf("%s: %v", ent, err)
		}
		s0, s1 := e.shardOf(ent, 0), e.shardOf(ent, 1)
		gc0, _ := gcOf(s0, "tpd")
		_, hasTU := tuOf(s0, "tpd")
		if tk(s0, "tpd") != 500_000 || gc0 != 2 || hasTU || consumed(s0, "tpd") != 7_000 {
			t.Errorf("%s shard 0: tpd tk %d gc %d tu %v tc %d, want the pending reset applied: 500000 at gc 2, no tu",
				ent, tk(s0, "tpd"), gc0, hasTU, consumed(s0, "tpd"))
		}
		gc1, _ := gcOf(s1, "tpd")
		mo, _ := tuOf(s0, "tpmo")
		if tk(s1, "tpd") != 200_000 || gc1 != 2 || tk(s0, "tpmo") != 300_000 || mo != 40_000 || tk(s1, "tpmo") != 2_500_000 {
			t.Errorf("%s: current quotas changed: shard 1 tpd %d gc %d, tpmo %d (tu %d) and %d",
				ent, tk(s1, "tpd"), gc1, tk(s0, "tpmo"), mo, tk(s1, "tpmo"))
		}
	}
	// c's top-up of rpm: shard 0 had refilled to its share over the
	// night (5 tokens a minute per shard), shard 1 was full: nothing fit.
	if tk(e.shardOf("c", 0), "rpm") != 5_000 || tk(e.shardOf("c", 1), "rpm") != 5_000 {
		t.Errorf("c: rpm %d and %d, want both at the share 5000", tk(e.shardOf("c", 0), "rpm"), tk(e.shardOf("c", 1), "rpm"))
	}
}

// TestQuotaTopUpVersionGate: a top-up of a quota writes tu, which a reader
// before 0.17.0 would clamp away: with lambda_version 0.16.0 it is refused
// with the gate's VersionMismatchError and writes nothing (no bucket
// change, no record, no audit); a reset and a dripping top-up need no
// gate and leave client_min_version alone; at 0.17.0 the top-up commits
// and raises client_min_version to 0.17.0.
func TestQuotaTopUpVersionGate(t *testing.T) {
	e := newEnv(t)
	rpm := limit.PerMinute("rpm", 10)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{rpm, tpd()}, ""); err != nil {
		t.Fatal(err)
	}
	e.putShard("a", 0, 1, e.clk.Now().Add(-6*time.Hour), dripLimit(rpm, 2_000), quotaLimit(tpd(), 100_000, 1, 0))
	store := config.NewStore(e.tbl.DB, e.tbl.Name)
	if err := store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.16.0"}); err != nil {
		t.Fatal(err)
	}
	minVersion := func() string {
		t.Helper()
		rec, _, err := store.ReadVersion(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rec.ClientMinVersion
	}
	min0 := minVersion()
	if min0 == config.QuotaTopUpVersion {
		t.Fatalf("client_min_version starts at %s: nothing to ratchet", min0)
	}
	e.proxy.ResetStats()
	var vm *config.VersionMismatchError
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpd": 5}, control.OperationOptions{OperationID: "buy-1"}); !errors.As(err, &vm) || !vm.Gate {
		t.Fatalf("a quota top-up with readers at 0.16.0: %v, want the gate's refusal", err)
	}
	if n := e.proxy.StatsFor("TransactWriteItems").Forwarded; n != 0 {
		t.Fatalf("%d transactions sent past a refusing gate", n)
	}
	if it := e.shardOf("a", 0); tk(it, "tpd") != 100_000 {
		t.Fatalf("the refused top-up wrote: tpd %d", tk(it, "tpd"))
	}
	if evs, _ := e.ctl.AuditEvents(e.ctx, e.ns, "a"); len(evs) != 0 {
		t.Fatalf("a refused top-up was audited: %+v", evs)
	}
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpm": 5}, control.OperationOptions{}); err != nil {
		t.Fatalf("a dripping top-up is not gated: %v", err)
	}
	if _, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{}); err != nil {
		t.Fatalf("a reset is not gated: %v", err)
	}
	if got := minVersion(); got != min0 {
		t.Fatalf("ungated operations moved client_min_version to %s", got)
	}

	if err := store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.17.0"}); err != nil {
		t.Fatal(err)
	}
	op, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpd": 5}, control.OperationOptions{OperationID: "buy-1"})
	if err != nil || op.Granted["tpd"] != 5 {
		t.Fatalf("top-up at 0.17.0: %+v, %v", op, err)
	}
	if tu, _ := tuOf(e.shardOf("a", 0), "tpd"); tu != 5_000 {
		t.Fatalf("tu %d, want 5000", tu)
	}
	if got := minVersion(); got != config.QuotaTopUpVersion {
		t.Fatalf("client_min_version %s after a quota top-up, want %s", got, config.QuotaTopUpVersion)
	}
}

// TestResetScheduledDrip: a dripping limit under a parameter schedule is
// reset to its share of the capacity in force (half, in business hours),
// and topped up to no more than that; the stored capacity stays the
// configured one.
func TestResetScheduledDrip(t *testing.T) {
	e := newEnv(t)
	half := schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * *"), ScalePerMille: 500}}
	rpm := limit.PerMinute("rpm", 60).WithSchedule(half, "")
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{rpm}, ""); err != nil {
		t.Fatal(err)
	}
	// Two shards, as a Python client leaves them: 30 in force, 15 a shard.
	e.putShard("a", 0, 2, e.clk.Now(), dripLimit(rpm, 2_000))
	e.putShard("a", 1, 2, e.clk.Now(), dripLimit(rpm, -4_000))
	op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{})
	if err != nil || op.Granted["rpm"] != 13+19 {
		t.Fatalf("reset %+v, %v; want 32 granted", op, err)
	}
	for s := range 2 {
		it := e.shardOf("a", s)
		if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); tk(it, "rpm") != 15_000 || cp != 60_000 {
			t.Errorf("shard %d: tk %d cp %d, want the in-force share 15000 under the configured 60000", s, tk(it, "rpm"), cp)
		}
	}
	// An acquire on the limiter sees the reset.
	if _, err := e.lim.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 15}); err != nil {
		t.Fatalf("an acquire after the reset: %v", err)
	}
	op, err = e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpm": 100}, control.OperationOptions{})
	if err != nil || op.Granted["rpm"] != 15 {
		t.Fatalf("top-up %+v, %v; want the 15 that fit under the in-force ceiling", op, err)
	}
	for s := range 2 {
		if got := tk(e.shardOf("a", s), "rpm"); got != 15_000 {
			t.Errorf("shard %d: tk %d, want the in-force ceiling", s, got)
		}
	}
}

// TestTopUpCreatesAQuotaBucket (docs/design.md §8): a top-up of a quota
// of an entity that has no bucket yet creates shard 0 from the config
// read: the quota at its allowance plus the amount (in tu, granted at 1),
// dripping limits full, the reset schedule stored, the owner stamp, rf and
// vu at now, the expiry of a resource's limits; the record and the audit
// commit with it. A second top-up adds to it. A reset, or a top-up of
// dripping limits only, of a missing bucket is still refused.
func TestTopUpCreatesAQuotaBucket(t *testing.T) {
	e := newEnv(t)
	rpm := limit.PerMinute("rpm", 10)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{rpm, tpd()}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.CreateEntity(e.ctx, e.ns, "org", config.EntityOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	kid, err := e.ctl.CreateEntity(e.ctx, e.ns, "kid", config.EntityOptions{ParentID: "org"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"reset": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "kid", "r", nil, control.OperationOptions{})
			return err
		}(),
		"dripping top-up": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "kid", "r", map[string]int64{"rpm": 1}, control.OperationOptions{})
			return err
		}(),
	} {
		if !schema.IsValidationError(err) {
			t.Errorf("%s of a missing bucket: %v, want a validation error", name, err)
		}
	}
	op, err := e.ctl.TopUp(e.ctx, e.ns, "kid", "r", map[string]int64{"tpd": 100, "rpm": 4}, control.OperationOptions{OperationID: "buy-1", Principal: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Granted["tpd"] != 100 || op.Granted["rpm"] != 0 || op.ShardsWritten != 1 || op.ShardCount != 1 {
		t.Fatalf("result %+v, want tpd 100 and rpm 0 granted on a new shard", op)
	}
	it := e.shardOf("kid", 0)
	img, err := bucketitem.Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now().UnixMilli()
	q, d := img.Limit("tpd"), img.Limit("rpm")
	if q == nil || d == nil {
		t.Fatalf("limits %+v", img.Limits)
	}
	if q.Tokens != 1_100_000 || q.TopUp != 100_000 || q.GrantShards != 1 || q.ResetSchedule != daily.Encode() || q.Consumed != 0 {
		t.Errorf("tpd %+v, want 1100000 with tu 100000 granted at 1", *q)
	}
	if d.Tokens != 10_000 || d.Fields.Has(bucketitem.FieldTopUp) || d.Fields.Has(bucketitem.FieldGrantShards) {
		t.Errorf("rpm %+v, want full and no grant", *d)
	}
	if img.RF != now || img.VU != now || img.ShardCount != 1 || img.ParentID != "org" || img.PGen != kid.PGen || img.HasDisabled || !img.HasTTL || img.TTL <= now/1000 {
		t.Errorf("item %+v", img)
	}
	evs, err := e.ctl.AuditEvents(e.ctx, e.ns, "kid")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || (ev.Action == "bucket_topped_up" && ev.Details["operation_id"] == "buy-1" && ev.Details["granted"] == "rpm=0,tpd=100")
	}
	if !found {
		t.Errorf("audit %+v", evs)
	}
	// Replayed, then topped up again on the bucket that now exists.
	if again, err := e.ctl.TopUp(e.ctx, e.ns, "kid", "r", map[string]int64{"tpd": 100, "rpm": 4}, control.OperationOptions{OperationID: "buy-1"}); err != nil || !again.Replayed {
		t.Fatalf("replay %+v, %v", again, err)
	}
	e.clk.Advance(time.Minute)
	if op, err := e.ctl.TopUp(e.ctx, e.ns, "kid", "r", map[string]int64{"tpd": 50}, control.OperationOptions{}); err != nil || op.Granted["tpd"] != 50 {
		t.Fatalf("second top-up %+v, %v", op, err)
	}
	it = e.shardOf("kid", 0)
	tu, _ := tuOf(it, "tpd")
	gc, _ := gcOf(it, "tpd")
	if tk(it, "tpd") != 1_150_000 || tu != 150_000 || gc != 1 {
		t.Fatalf("after the second top-up: tk %d tu %d gc %d", tk(it, "tpd"), tu, gc)
	}
}

// TestOperationRefusals: a bucket whose limit no longer configured
// carries a reset schedule that does not decode is refused with the
// schedule's typed error, and nothing is written.
func TestOperationRefusals(t *testing.T) {
	e := newEnv(t)
	rpm := limit.PerMinute("rpm", 10)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{rpm, tpd()}, ""); err != nil {
		t.Fatal(err)
	}
	morning := e.clk.Now().Add(-6 * time.Hour)
	old := bucketitem.NewLimit{Name: "old", Tokens: 1_000, Params: bucket.Params{Capacity: 5_000, RefillPeriod: 1000}, ResetSchedule: "garbage!"}
	e.putShard("s", 0, 1, morning, dripLimit(rpm, 1_000), quotaLimit(tpd(), 100_000, 1, 0), old)
	e.proxy.ResetStats()

	var enc *schedule.EncodingError
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "s", "r", map[string]int64{"rpm": 1}, control.OperationOptions{}); !errors.As(err, &enc) {
		t.Errorf("an undecodable stored reset schedule: %v, want a *schedule.EncodingError", err)
	}
	if n := e.proxy.StatsFor("TransactWriteItems").Forwarded; n != 0 {
		t.Fatalf("%d transactions sent for refused operations", n)
	}
	if tk(e.shardOf("s", 0), "rpm") != 1_000 {
		t.Fatal("a refused operation wrote")
	}
}

// TestEntitySyncCarriesSchedules: an entity-level change of a quota's reset
// schedule and zone reaches its buckets with the parameters (docs/design.md
// §15), so that no writer reading the item — the aggregator's refill — can
// apply the old reset.
func TestEntitySyncCarriesSchedules(t *testing.T) {
	e := newEnv(t)
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	if _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "a", "r", []limit.Limit{limit.Quota("tpd", 100, daily, "Asia/Tokyo")}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lim.Acquire(e.ctx, "a", "r", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatal(err)
	}
	monthly := schedule.Resets{schedule.MustParseCron("0 0 1 * *")}
	p, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "a", "r", []limit.Limit{limit.Quota("tpd", 100, monthly, "Europe/Paris")}, "")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("sync: %+v, %v", p, err)
	}
	it := e.bucket("a", "r", 0)
	for attr, want := range map[string]string{"b_tpd_rsched": "m0h0D1", "sched_tz": "Europe/Paris"} {
		if s, _ := it[attr].(*types.AttributeValueMemberS); s == nil || s.Value != want {
			t.Errorf("%s = %v, want %s", attr, it[attr], want)
		}
	}
	// vu is the next edge of the new reset schedule: the first debit past
	// it applies the reset.
	paris, _ := time.LoadLocation("Europe/Paris")
	next, _ := monthly.NextEdge(e.clk.Now(), paris)
	if vu, _ := num(it, schema.AttrVU); vu != next.UnixMilli() {
		t.Errorf("vu %d, want the next monthly edge %d", vu, next.UnixMilli())
	}
	if tk(e.shardOf("a", 0), "tpd") != 99_000 {
		t.Errorf("tpd tk %d, want 99000: the change grants nothing", tk(e.shardOf("a", 0), "tpd"))
	}
}

// gatedTx holds the first TransactWriteItems it sees until released.
type gatedTx struct {
	config.DB
	reached, release chan struct{}
	once             sync.Once
}

func (g *gatedTx) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	g.once.Do(func() {
		g.reached <- struct{}{}
		<-g.release
	})
	return g.DB.TransactWriteItems(ctx, in, o...)
}

func gate(db config.DB) *gatedTx {
	return &gatedTx{DB: db, reached: make(chan struct{}), release: make(chan struct{})}
}

// TestResetRacesAFundedShard: a client funds a new quota shard by a move
// off shard 0 between an operator reset's read (shard 0 alone) and its
// commit. The reset then holds only while the slots it did not read are
// empty; it plans again from fresh reads and restores both shards, so the
// move's tokens are not left out of the new account (a reset that had
// committed over the move would have left 200 of the 400 ungranted).
func TestResetRacesAFundedShard(t *testing.T) {
	e := newEnv(t)
	q := limit.Quota("m", 400, monthly, "")
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{q}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lim.Acquire(e.ctx, "k", "r", limiter.Consume{"m": 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.tbl.Name),
		Key:                       schema.BucketKey(e.ns, "k", "r", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": schema.Num(2)}}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	client := gate(e.tbl.DB)
	b, err := limiter.New(client, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: func(n int) int { return n - 1 }})
	if err != nil {
		t.Fatal(err)
	}
	// b learns the count from shard 0, then draws shard 1.
	if _, err := b.Acquire(e.ctx, "k", "r", limiter.Consume{"m": 0}); err != nil {
		t.Fatal(err)
	}
	clientDone := make(chan error, 1)
	go func() {
		_, err := b.Acquire(e.ctx, "k", "r", limiter.Consume{"m": 10})
		clientDone <- err
	}()
	<-client.reached // the client read the siblings and planned its move
	operator := gate(e.tbl.DB)
	ops := control.New(operator, e.tbl.Name, control.Options{Clock: e.clk.Now})
	opDone := make(chan error, 1)
	go func() {
		_, err := ops.Reset(e.ctx, e.ns, "k", "r", nil, control.OperationOptions{})
		opDone <- err
	}()
	<-operator.reached // the reset read shard 0 alone
	close(client.release)
	if err := <-clientDone; err != nil {
		t.Fatalf("the funded create: %v", err)
	}
	close(operator.release)
	if err := <-opDone; err != nil {
		t.Fatalf("the reset: %v", err)
	}
	for shard := range 2 {
		it := e.bucket("k", "r", shard)
		if tk, _ := num(it, "b_m_tk"); tk != 200_000 {
			t.Errorf("shard %d holds %d after the reset, want its share 200000", shard, tk)
		}
		if gc, _ := num(it, "b_m_gc"); gc != 2 {
			t.Errorf("shard %d gc %d, want 2", shard, gc)
		}
	}
}
