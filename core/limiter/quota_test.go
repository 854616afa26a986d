package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// dailyQuota is 100 tokens a day, resetting at midnight UTC.
func dailyQuota(name string, amount int64) limit.Limit {
	return limit.Quota(name, amount, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "")
}

func msOf(s string) int64 {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return v.UnixMilli()
}

// A daily quota (docs/design.md §15): spent on the fast path, one
// conditional UpdateItem per acquire; exhausted, its 429 names the
// midnight reset; past midnight the first acquire restores it in one lump
// while tc keeps climbing.
func TestQuotaResetsAtTheEdge(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	// The clock reads 2026-11-29 12:00 UTC.
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 60}); err != nil {
		t.Fatal(err)
	}
	// The new shard's vu stops at its recheck deadline a minute on, where
	// one pass checks its limits against config; from then on it is the
	// reset edge (docs/design.md §8, §15).
	item := e.bucket("k", "gpt-4", 0)
	recheck := strconv.FormatInt(msOf("2026-11-29T12:01:00Z"), 10)
	if got := e.n(item, "vu"); got != recheck || e.n(item, "recheck") != recheck {
		t.Errorf("created: vu %s, recheck %s; want both %s", got, e.n(item, "recheck"), recheck)
	}
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 0}); err != nil {
		t.Fatal(err)
	}
	item = e.bucket("k", "gpt-4", 0)
	if _, ok := item["recheck"]; ok {
		t.Error("the check left the recheck stamp")
	}
	for attr, want := range map[string]string{
		"b_tpd_tk": "40000", "b_tpd_tc": "60000", "b_tpd_ra": "0", "b_tpd_gc": "1",
		"vu": strconv.FormatInt(msOf("2026-11-30T00:00:00Z"), 10),
	} {
		if got := e.n(item, attr); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
	if got := ddbtest.Render(item["b_tpd_rsched"]); got != "S:m0h0" {
		t.Errorf("b_tpd_rsched = %s", got)
	}

	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 40}); err != nil {
		t.Fatal(err)
	}
	if n := e.calls("UpdateItem"); n != 1 || e.totalCalls() != 1 {
		t.Errorf("fast path: %d UpdateItem, %d calls, want 1 and 1", n, e.totalCalls())
	}

	e.clk.Set(time.UnixMilli(msOf("2026-11-29T23:00:00Z")))
	_, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1})
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("exhausted quota: %v", err)
	}
	if d, never := rle.RetryAfter(); never || d != time.Hour {
		t.Errorf("retry after %v (never %v), want the reset an hour away", d, never)
	}

	e.clk.Set(time.UnixMilli(msOf("2026-11-30T00:00:01Z")))
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 10})
	if err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	if r, _ := lease.Remaining("tpd"); r != 90 {
		t.Errorf("remaining %d, want 90", r)
	}
	item = e.bucket("k", "gpt-4", 0)
	for attr, want := range map[string]string{
		"b_tpd_tk": "90000", "b_tpd_tc": "110000", "b_tpd_gc": "1",
		"vu": strconv.FormatInt(msOf("2026-12-01T00:00:00Z"), 10),
	} {
		if got := e.n(item, attr); got != want {
			t.Errorf("after the reset %s = %s, want %s", attr, got, want)
		}
	}
}

// A top-up raises a quota's ceiling for the period (C // gc + tu); the
// reset edge wipes it (ADR-149).
func TestQuotaTopUpCeilingEndsAtTheEdge(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 100}); err != nil {
		t.Fatal(err)
	}
	// An operator's top-up of 50 (core/control writes it the same way).
	e.update("k", "gpt-4", 0, "ADD b_tpd_tk :t, b_tpd_tu :t SET vu = :z", map[string]types.AttributeValue{":t": schema.Num(50_000), ":z": schema.Num(0)})
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 50}); err != nil {
		t.Fatalf("the top-up is not admitted: %v", err)
	}
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err == nil {
		t.Fatal("admitted past quota and top-up")
	}
	e.clk.Set(time.UnixMilli(msOf("2026-11-30T00:00:00Z")))
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatal(err)
	}
	item := e.bucket("k", "gpt-4", 0)
	if _, ok := item["b_tpd_tu"]; ok {
		t.Error("the reset kept the top-up")
	}
	if got := e.n(item, "b_tpd_tk"); got != "99000" {
		t.Errorf("b_tpd_tk = %s, want 99000", got)
	}
}

// A quota's new shard is funded by a move off the sibling whose grant
// covers its slot, in one transaction (ADR-145): nothing is minted.
func TestQuotaShardFundedByAMove(t *testing.T) {
	draw := 0
	e := newEnv(t, limiter.Options{Rand: func(n int) int { return min(draw, n-1) }})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 30}); err != nil {
		t.Fatal(err)
	}
	// Another client doubled the pair: shard 0 now says 2, its grant
	// still the whole quota (gc 1, 70 left).
	e.update("k", "gpt-4", 0, "SET shard_count = :two", map[string]types.AttributeValue{":two": schema.Num(2)})
	// The next acquire lands on shard 0 and learns the count; then the
	// draw goes to shard 1, which does not exist yet.
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 0}); err != nil {
		t.Fatal(err)
	}
	draw = 1
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 5}); err != nil {
		t.Fatal(err)
	}
	s0, s1 := e.bucket("k", "gpt-4", 0), e.bucket("k", "gpt-4", 1)
	if s1 == nil {
		t.Fatal("shard 1 was not created")
	}
	// Slot 1 at 2 shards takes one share, 50, off shard 0 (which covers
	// every slot at gc 1): 20 stay there, 45 are left on shard 1 after 5.
	for _, c := range []struct {
		item       map[string]types.AttributeValue
		attr, want string
	}{{s0, "b_tpd_tk", "20000"}, {s0, "b_tpd_gc", "1"}, {s1, "b_tpd_tk", "45000"}, {s1, "b_tpd_gc", "2"}, {s1, "b_tpd_tc", "5000"}, {s1, "shard_count", "2"}} {
		if got := e.n(c.item, c.attr); got != c.want {
			t.Errorf("%s = %s, want %s", c.attr, got, c.want)
		}
	}
	// What it cost (docs/costs.md): the fast path's failed write on the
	// missing shard, the access walk, META and the shard, the siblings
	// (strongly consistent), and one transaction of the create and the move.
	for op, want := range map[string]int{"UpdateItem": 1, "BatchGetItem": 3, "TransactWriteItems": 1, "PutItem": 0, "GetItem": 0} {
		if got := e.calls(op); got != want {
			t.Errorf("%d %s, want %d", got, op, want)
		}
	}
	// Conserved: 30 + 5 admitted, 20 + 45 held, nothing left to grant.
}

// A reset on a shard whose count lags is sized at the count shard 0
// holds, and raises the shard's count (docs/design.md §15).
func TestQuotaResetOnALaggingShard(t *testing.T) {
	e := newEnv(t, limiter.Options{Rand: func(n int) int { return min(1, n-1) }})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	// Both shards were last written yesterday (their vu the midnight
	// reset, as every writer stamps it); shard 0 has since been doubled
	// twice, shard 1 still says 2.
	yesterday := msOf("2026-11-28T18:00:00Z")
	q := limit.Quota("tpd", 100, nil, "").Params()
	for shard, count := range map[int]int64{0: 4, 1: 2} {
		n := bucketitem.New{ID: schema.BucketID{Namespace: ns, Entity: "k", Resource: "gpt-4", Shard: shard}, RF: yesterday, ShardCount: count, VU: msOf("2026-11-29T00:00:00Z"),
			Limits: []bucketitem.NewLimit{{Name: "tpd", Tokens: 3_000, Params: q, ResetSchedule: "m0h0", GrantShards: 2}}}
		if _, err := e.tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: n.Item()}); err != nil {
			t.Fatal(err)
		}
	}
	// The first acquire draws shard 0 (the client knows one shard) and
	// learns the count; the second draws shard 1.
	for range 2 {
		if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
			t.Fatal(err)
		}
	}
	for shard, want := range map[int]map[string]string{
		0: {"b_tpd_tk": "24000", "b_tpd_gc": "4", "shard_count": "4"},
		1: {"b_tpd_tk": "24000", "b_tpd_gc": "4", "shard_count": "4"},
	} {
		it := e.bucket("k", "gpt-4", shard)
		for attr, w := range want {
			if got := e.n(it, attr); got != w {
				t.Errorf("shard %d: %s = %s, want %s", shard, attr, got, w)
			}
		}
	}
}

func (e *env) update(entity, resource string, shard int, expr string, values map[string]types.AttributeValue) {
	e.t.Helper()
	_, err := e.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, entity, resource, shard).AttributeValues(),
		UpdateExpression: aws.String(expr), ExpressionAttributeValues: values,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// An exhausted quota is refused from what DynamoDB already said: the
// failed write's image (one call), then the rejection cache (no call),
// until its reset edge, past which the cache never rejects (docs/design.md
// §15, ADR-147).
func TestExhaustedQuotaRejectionsAreCheap(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 99}); err != nil {
		t.Fatal(err)
	}
	// The new shard's one check of its limits, at its recheck deadline
	// (docs/design.md §8).
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.UnixMilli(msOf("2026-11-29T23:59:58Z")))
	e.proxy.ResetStats()
	var rle *limiter.RateLimitExceeded
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); !errors.As(err, &rle) {
		t.Fatalf("exhausted: %v", err)
	}
	if n := e.totalCalls(); n != 1 {
		t.Errorf("the first 429 took %d calls, want 1 (the failed write's image decides)", n)
	}
	if d, _ := rle.RetryAfter(); d != 2*time.Second {
		t.Errorf("retry after %v, want the 2 s to midnight", d)
	}
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); !errors.As(err, &rle) {
		t.Fatalf("exhausted again: %v", err)
	}
	if n := e.totalCalls(); n != 0 {
		t.Errorf("the second 429 took %d calls, want 0 (the rejection cache)", n)
	}
	// Midnight: the cached state is past its vu and its reset edge; the
	// request goes to DynamoDB and is admitted from the reset.
	e.clk.Set(time.UnixMilli(msOf("2026-11-30T00:00:00Z")))
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatalf("after the reset edge: %v", err)
	}
	if st := e.lim.Stats(); st.LocalRejections != 1 {
		t.Errorf("stats %+v, want one local rejection", st)
	}
}

// A quota bucket as a Python client of the same table stamps it — the
// reset schedule item-level (rsched), the zone in sched_tz, and, from a
// writer before grants, no gc — is read and reset at its edge by a refill
// pass from its image (gc set, the stored spelling kept); a read-then-write
// pass writes it back in this client's spelling: b_{n}_rsched on the
// limit, the item-level rsched removed (docs/compatibility.md C23).
func TestQuotaBucketFromPython(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", limit.Quota("tpd", 100, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "Asia/Tokyo"))
	ctx := context.Background()
	// 2026-11-29 12:00 UTC is 21:00 in Tokyo; the bucket was last written
	// the day before, so Tokyo's midnight came since.
	item := map[string]types.AttributeValue{
		"rf": schema.Num(msOf("2026-11-28T12:00:00Z")), "vu": schema.Num(msOf("2026-11-28T15:00:00Z")),
		"rsched": schema.Str("m0h0"), "sched_tz": schema.Str("Asia/Tokyo"), "shard_count": schema.Num(1),
		"b_tpd_tk": schema.Num(3_000), "b_tpd_cp": schema.Num(100_000), "b_tpd_ra": schema.Num(0), "b_tpd_rp": schema.Num(1000), "b_tpd_tc": schema.Num(97_000),
		"b_wcu_tk": schema.Num(1_000_000), "b_wcu_cp": schema.Num(1_000_000), "b_wcu_ra": schema.Num(1_000_000), "b_wcu_rp": schema.Num(1000), "b_wcu_tc": schema.Num(0),
		"entity_id": schema.Str("k"), "resource": schema.Str("gpt-4"),
	}
	for k, v := range schema.BucketItemKeys(ns, "k", "gpt-4", 0).Item() {
		item[k] = v
	}
	if _, err := e.tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: item}); err != nil {
		t.Fatal(err)
	}
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 10})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := lease.Remaining("tpd"); r != 90 {
		t.Errorf("remaining %d, want 90 (reset to 100 at Tokyo's midnight)", r)
	}
	got := e.bucket("k", "gpt-4", 0)
	if ddbtest.Render(got["rsched"]) != "S:m0h0" || ddbtest.Render(got["sched_tz"]) != "S:Asia/Tokyo" || e.n(got, "b_tpd_gc") != "1" || e.n(got, "b_tpd_tc") != "107000" {
		t.Errorf("the refill pass wrote %v", got)
	}
	// A read-then-write pass (here forced by vu = 0, as a parameter sync
	// sets it) writes the limit's own spelling and drops the item's.
	e.update("k", "gpt-4", 0, "SET vu = :z", map[string]types.AttributeValue{":z": schema.Num(0)})
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatal(err)
	}
	got = e.bucket("k", "gpt-4", 0)
	if _, ok := got["rsched"]; ok || ddbtest.Render(got["b_tpd_rsched"]) != "S:m0h0" {
		t.Errorf("written back as %v", got)
	}
	// The next midnight in Tokyo is 15:00 UTC.
	if e.n(got, "vu") != strconv.FormatInt(msOf("2026-11-29T15:00:00Z"), 10) {
		t.Errorf("vu %s", e.n(got, "vu"))
	}
}

// A lease settled after the reset edge applies the reset in the same
// refill pass as its adjustment: the reset is never lost to an rf the
// adjustment moved (docs/design.md §15).
func TestQuotaLeaseSettledAcrossTheEdge(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	e.clk.Set(time.UnixMilli(msOf("2026-11-29T23:59:59Z")))
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 90})
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.UnixMilli(msOf("2026-11-30T00:00:01Z")))
	if err := lease.Adjust("tpd", 5); err != nil {
		t.Fatal(err)
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.bucket("k", "gpt-4", 0)
	// Reset to 100 at midnight, then the 5 more the lease used.
	if e.n(got, "b_tpd_tk") != "95000" || e.n(got, "b_tpd_tc") != "95000" {
		t.Errorf("tk %s tc %s, want 95000 and 95000", e.n(got, "b_tpd_tk"), e.n(got, "b_tpd_tc"))
	}
	l, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 95})
	if err != nil {
		t.Fatalf("taking the 95 left: %v", err)
	}
	if r, _ := l.Remaining("tpd"); r != 0 {
		t.Errorf("after taking the 95 left: %d remaining", r)
	}
}

// ADR-151 decision 6 on a calendar quota: a bypassed pass counts tc and
// never resets the quota (its rf stays, so the reset waits for the first
// enforced pass); a soft quota's reset forgives its debt.
func TestQuotaBypassAndSoft(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	e.setResourceLimits("gpt-4", limit.Quota("tpd", 100, daily, ""), limit.Quota("soft", 100, daily, "").AsSoft())
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 100, "soft": 130}); err != nil {
		t.Fatal(err)
	}
	item := e.bucket("k", "gpt-4", 0)
	if e.n(item, "b_soft_tk") != "-30000" {
		t.Fatalf("soft quota tk %s, want -30000 (in debt)", e.n(item, "b_soft_tk"))
	}
	rf := e.n(item, "rf")
	w := e.lim.Store().Writer(capability.ConfigWrite{})
	if err := w.SetAccess(ctx, ns, "k", "gpt-4", config.AccessBypass); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.UnixMilli(msOf("2026-11-30T00:00:01Z")))
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 5})
	if err != nil || !lease.Bypassed() {
		t.Fatalf("bypassed acquire: %v", err)
	}
	item = e.bucket("k", "gpt-4", 0)
	if e.n(item, "rf") != rf || e.n(item, "b_tpd_tk") != "0" || e.n(item, "b_tpd_tc") != "105000" {
		t.Errorf("bypassed pass: rf %s (was %s), tk %s, tc %s: want rf and tk as they were, tc counted", e.n(item, "rf"), rf, e.n(item, "b_tpd_tk"), e.n(item, "b_tpd_tc"))
	}
	if err := w.SetAccess(ctx, ns, "k", "gpt-4", config.AccessInherit); err != nil {
		t.Fatal(err)
	}
	// No fan-out here (the store, not core/control): the bypass stamp
	// lapses at its deadline and the next pass reads the config again.
	e.clk.Advance(61 * time.Second) // the default StampTTL is 60 s
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); err != nil {
		t.Fatalf("the first enforced pass after the edge: %v", err)
	}
	item = e.bucket("k", "gpt-4", 0)
	if e.n(item, "b_tpd_tk") != "99000" || e.n(item, "b_soft_tk") != "100000" {
		t.Errorf("after the reset: tpd tk %s, soft tk %s: want 99000 and 100000 (the soft quota's debt forgiven)", e.n(item, "b_tpd_tk"), e.n(item, "b_soft_tk"))
	}
}

// gateTx holds the first TransactWriteItems until released.
type gateTx struct {
	limiter.DB
	reached, release chan struct{}
	once             sync.Once
}

func (g *gateTx) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	g.once.Do(func() {
		g.reached <- struct{}{}
		<-g.release
	})
	return g.DB.TransactWriteItems(ctx, in, o...)
}

// A fresh grant of an uncovered slot is sized at the count the siblings
// showed, and holds only while shard 0 has not passed it: a doubling
// between the read and the write sends the pass back to read, and the
// slot is granted at the new count (ADR-145 race guard).
func TestQuotaFreshGrantPinsTheCount(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 400))
	ctx := context.Background()
	// Shard 0 at a count of 2, its grant sized at 2: slot 1 is uncovered.
	n := bucketitem.New{ID: schema.BucketID{Namespace: ns, Entity: "k", Resource: "gpt-4"}, RF: e.clk.Now().UnixMilli(), ShardCount: 2,
		VU:     msOf("2026-11-30T00:00:00Z"),
		Limits: []bucketitem.NewLimit{{Name: "tpd", Tokens: 200_000, Params: dailyQuota("tpd", 400).Params(), ResetSchedule: "m0h0", GrantShards: 2}}}
	if _, err := e.tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: n.Item()}); err != nil {
		t.Fatal(err)
	}
	g := &gateTx{DB: e.tbl.DB, reached: make(chan struct{}), release: make(chan struct{})}
	b, err := limiter.New(g, e.tbl.Name, ns, limiter.Options{Clock: e.clk.Now, Rand: func(n int) int { return n - 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 0}); err != nil { // learns the count
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 10})
		done <- err
	}()
	select {
	case <-g.reached: // planned: a fresh 200 for slot 1, in a transaction
	case err := <-done:
		t.Fatalf("the fresh grant was written without a transaction pinning shard 0's count (%v)", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no write within 30 s")
	}
	e.update("k", "gpt-4", 0, "SET shard_count = :n", map[string]types.AttributeValue{":n": schema.Num(4)})
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s1 := e.bucket("k", "gpt-4", 1)
	if e.n(s1, "b_tpd_tk") != "90000" || e.n(s1, "b_tpd_gc") != "4" || e.n(s1, "shard_count") != "4" {
		t.Errorf("slot 1: tk %s gc %s count %s, want a share at 4 (100) less 10, gc 4", e.n(s1, "b_tpd_tk"), e.n(s1, "b_tpd_gc"), e.n(s1, "shard_count"))
	}
}

// A config whose stored reset schedule this version cannot read (a newer
// client's encoding) is an outage of the pair's config, answered per
// on_unavailable (docs/design.md §14): RateLimiterUnavailable by default,
// a no-op lease with allow.
func TestUnreadableResetScheduleIsUnavailable(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", dailyQuota("tpd", 100))
	ctx := context.Background()
	// A newer client rewrote the reset schedule in an encoding version this
	// one does not know.
	if _, err := e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.tbl.Name),
		Key:                       schema.ResourceConfigKey(ns, "gpt-4").AttributeValues(),
		UpdateExpression:          aws.String("SET l_tpd_rsched = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": schema.Str("9m0h0")}}); err != nil {
		t.Fatal(err)
	}
	var un *limiter.RateLimiterUnavailable
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}); !errors.As(err, &un) {
		t.Fatalf("err = %v, want RateLimiterUnavailable", err)
	}
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"tpd": 1}, limiter.WithOnUnavailable(config.OnUnavailableAllow))
	if err != nil || !lease.Degraded() {
		t.Fatalf("with allow: %v, %v", lease, err)
	}
}
