package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
	"github.com/zae-limiter/zae-limiter-go/internal/verdict"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

const (
	dis = config.AccessDisabled
	on  = config.AccessEnforce
	byp = config.AccessBypass
	inh = config.AccessInherit
)

// env is one test's table (stamped, so gated features can be stored), a
// namespace, a limiter and the controls, on one manual clock; the controls
// go through a fault proxy.
type env struct {
	t     *testing.T
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	clk   *clock.Manual
	ns    string
	lim   *limiter.Limiter
	ctl   *control.Controls
	ctx   context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, tbl: ddbtest.NewTable(t), clk: clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)), ctx: context.Background()}
	e.proxy = faultproxy.Start(t, e.tbl.Endpoint)
	var err error
	if e.ns, _, err = config.NewStore(e.tbl.DB, e.tbl.Name).Writer(capability.ConfigWrite{}).RegisterNamespace(e.ctx, "ctl"); err != nil {
		t.Fatal(err)
	}
	if e.lim, err = limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, ConfigCacheTTL: -1}); err != nil {
		t.Fatal(err)
	}
	e.ctl = control.New(e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), e.tbl.Name, control.Options{Clock: e.clk.Now, Caches: []control.Cache{e.lim}})
	return e
}

// acquire tells the outcome of one acquire of rpm 1: "ok" (admitted and
// debited), "bypass" (admitted, not debited), "403" or "429".
func (e *env) acquire(entity, resource string) string {
	e.t.Helper()
	lease, err := e.lim.Acquire(e.ctx, entity, resource, limiter.Consume{"rpm": 1})
	v := verdict.Of(lease, err)
	if v == "" {
		e.t.Fatalf("acquire %s on %s: %v", entity, resource, err)
	}
	return v
}

func (e *env) bucket(entity, resource string, shard int) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, entity, resource, shard).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

func (e *env) set(entity, resource string, a config.Access) control.Progress {
	e.t.Helper()
	p, err := e.ctl.SetAccess(e.ctx, e.ns, entity, resource, a, "ops@example")
	if err != nil {
		e.t.Fatalf("SetAccess(%q, %q, %v): %v", entity, resource, a, err)
	}
	return p
}

// TestAccessResolutionTable: the rows of ADR-125's resolution table (and
// ADR-151's bypass value), on DynamoDB Local: each setting is stored with
// SetAccess, whose fan-out re-stamps the existing buckets, and the very
// next acquire of each (entity, resource) — on the fast path, from the
// stamp — shows what the first explicit value of entity(resource) →
// entity(_default_) → resource decides.
func TestAccessResolutionTable(t *testing.T) {
	type setting struct {
		entity, resource string
		a                config.Access
	}
	rows := []struct {
		name     string
		settings []setting
		want     map[string]string // "entity/resource" → outcome
	}{
		{"nothing set: enforced", nil,
			map[string]string{"a/r1": "ok", "b/r1": "ok", "a/r2": "ok"}},
		{"resource disabled: every entity refused", []setting{{"", "r1", dis}},
			map[string]string{"a/r1": "403", "b/r1": "403", "a/r2": "ok"}},
		{"resource disabled, entity false on it: carve-out", []setting{{"", "r1", dis}, {"a", "r1", on}},
			map[string]string{"a/r1": "ok", "b/r1": "403", "a/r2": "ok"}},
		{"resource disabled, entity default false: carve-out on every resource", []setting{{"", "r1", dis}, {"a", schema.DefaultResource, on}},
			map[string]string{"a/r1": "ok", "b/r1": "403", "a/r2": "ok"}},
		{"entity disabled on one resource", []setting{{"a", "r1", dis}},
			map[string]string{"a/r1": "403", "b/r1": "ok", "a/r2": "ok"}},
		{"entity default disabled: off everywhere", []setting{{"a", schema.DefaultResource, dis}},
			map[string]string{"a/r1": "403", "b/r1": "ok", "a/r2": "403"}},
		{"entity default disabled, entity false on one resource: the specific level wins", []setting{{"a", schema.DefaultResource, dis}, {"a", "r2", on}},
			map[string]string{"a/r1": "403", "b/r1": "ok", "a/r2": "ok"}},
		{"entity true beats resource false", []setting{{"", "r1", on}, {"a", "r1", dis}},
			map[string]string{"a/r1": "403", "b/r1": "ok", "a/r2": "ok"}},
		{"entity default false beats resource true", []setting{{"", "r1", dis}, {"b", schema.DefaultResource, on}},
			map[string]string{"a/r1": "403", "b/r1": "ok", "a/r2": "ok"}},
		{"re-asserting the resource keeps the carve-out", []setting{{"", "r1", dis}, {"a", "r1", on}, {"", "r1", dis}},
			map[string]string{"a/r1": "ok", "b/r1": "403", "a/r2": "ok"}},
		{"re-enabling the resource", []setting{{"", "r1", dis}, {"", "r1", inh}},
			map[string]string{"a/r1": "ok", "b/r1": "ok", "a/r2": "ok"}},
		{"clearing the carve-out", []setting{{"", "r1", dis}, {"a", "r1", on}, {"a", "r1", inh}},
			map[string]string{"a/r1": "403", "b/r1": "403", "a/r2": "ok"}},
		{"resource bypassed", []setting{{"", "r1", byp}},
			map[string]string{"a/r1": "bypass", "b/r1": "bypass", "a/r2": "ok"}},
		{"resource bypassed, entity enforced: carve-out from the bypass", []setting{{"", "r1", byp}, {"a", "r1", on}},
			map[string]string{"a/r1": "ok", "b/r1": "bypass", "a/r2": "ok"}},
		{"entity bypassed everywhere, resource disabled: the entity's level wins", []setting{{"", "r1", dis}, {"a", schema.DefaultResource, byp}},
			map[string]string{"a/r1": "bypass", "b/r1": "403", "a/r2": "bypass"}},
		{"bypass lifted back to disabled", []setting{{"", "r1", byp}, {"", "r1", dis}},
			map[string]string{"a/r1": "403", "b/r1": "403", "a/r2": "ok"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, []limit.Limit{limit.PerMinute("rpm", 100)}, config.SystemOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, pair := range []string{"a/r1", "b/r1", "a/r2"} {
				entity, resource, _ := strings.Cut(pair, "/")
				if got := e.acquire(entity, resource); got != "ok" {
					t.Fatalf("warming %s: %s", pair, got)
				}
			}
			for _, s := range row.settings {
				e.set(s.entity, s.resource, s.a)
			}
			for pair, want := range row.want {
				entity, resource, _ := strings.Cut(pair, "/")
				before := tk(e.bucket(entity, resource, 0), "rpm")
				if got := e.acquire(entity, resource); got != want {
					t.Errorf("%s: %s, want %s", pair, got, want)
				}
				after := e.bucket(entity, resource, 0)
				switch want {
				case "bypass":
					if tk(after, "rpm") != before {
						t.Errorf("%s: a bypassed acquire moved tk %d → %d", pair, before, tk(after, "rpm"))
					}
				case "403":
					if _, ok := after[schema.AttrDisabled]; !ok {
						t.Errorf("%s: refused without a disabled stamp", pair)
					}
				}
			}
		})
	}
}

func tk(it map[string]types.AttributeValue, name string) int64 {
	v, ok := it[schema.BucketAttr(name, schema.LimitTokens)].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	var n int64
	fmt.Sscan(v.Value, &n)
	return n
}

func num(it map[string]types.AttributeValue, attr string) (int64, bool) {
	v, ok := it[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	var n int64
	fmt.Sscan(v.Value, &n)
	return n, true
}

// TestBypassStamp (ADR-151 decisions 2 and 8): a bypass fan-out writes a
// deadline T after the config read; a bypassed acquire debits no balance,
// counts its consumption and still debits wcu; past the deadline the
// stamp is not honoured: the slow path renews it from config.
func TestBypassStamp(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 2)}); err != nil {
		t.Fatal(err)
	}
	e.acquire("a", "r")
	readAt := e.clk.Now()
	e.set("", "r", byp)
	it := e.bucket("a", "r", 0)
	if d, ok := num(it, schema.AttrBypass); !ok || d != readAt.Add(time.Minute).UnixMilli() {
		t.Fatalf("bypass stamp %v, want the read time + 60 s", it[schema.AttrBypass])
	}
	tk0, tc0 := tk(it, "rpm"), consumed(it, "rpm")
	wcu0 := tk(it, schema.WCULimit)
	for range 5 { // more than the limit allows
		if got := e.acquire("a", "r"); got != "bypass" {
			t.Fatalf("bypassed acquire: %s", got)
		}
	}
	it = e.bucket("a", "r", 0)
	if tk(it, "rpm") != tk0 || consumed(it, "rpm") != tc0+5000 {
		t.Fatalf("tk %d → %d, tc %d → %d: want tk kept and tc +5000", tk0, tk(it, "rpm"), tc0, consumed(it, "rpm"))
	}
	if tk(it, schema.WCULimit) >= wcu0 {
		t.Fatalf("wcu %d → %d: bypassed writes must still debit wcu", wcu0, tk(it, schema.WCULimit))
	}
	// Past the deadline the stamp is dead; the slow path renews it from
	// the config, which still says bypass.
	e.clk.Advance(61 * time.Second)
	if got := e.acquire("a", "r"); got != "bypass" {
		t.Fatalf("after the deadline: %s", got)
	}
	if d, _ := num(e.bucket("a", "r", 0), schema.AttrBypass); d <= e.clk.Now().UnixMilli() {
		t.Fatalf("the slow path did not renew the stamp: %d", d)
	}
	// Bypass lifted: enforced again at once (the stamp is removed).
	e.set("", "r", inh)
	if _, ok := e.bucket("a", "r", 0)[schema.AttrBypass]; ok {
		t.Fatal("the bypass stamp survived its removal")
	}
	got := []string{e.acquire("a", "r"), e.acquire("a", "r"), e.acquire("a", "r")}
	if strings.Join(got, ",") == "bypass,bypass,bypass" || got[2] != "429" {
		t.Fatalf("after the bypass ended: %v, want enforcement (a 429 by the third)", got)
	}
}

// TestBypassLearnedFromTheStamp (ADR-151 decision 3): a warm process learns
// bypass only from the stamp its own write returns. The first write after
// the fan-out is enforce-shaped: it debits, the returned item shows the
// live stamp, and the debit is refunded (one extra write). Later writes
// are bypass-shaped, conditioned on a live stamp, and leave tk alone. When
// the bypass is cleared the server refuses the next bypass-shaped write
// (one failed write) and the request is enforced at once.
func TestBypassLearnedFromTheStamp(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 5)}); err != nil {
		t.Fatal(err)
	}
	// A second process whose calls the proxy counts; warm on (a, r).
	lim, err := limiter.New(e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), e.tbl.Name, e.ns,
		limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, ConfigCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	acquire := func() *limiter.Lease {
		t.Helper()
		e.proxy.ResetStats()
		lease, err := lim.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 1})
		if err != nil {
			t.Fatal(err)
		}
		return lease
	}
	updates := func() (forwarded, failed int) {
		s := e.proxy.Stats()["UpdateItem"]
		return s.Forwarded, s.Forwarded - s.Succeeded
	}
	acquire()
	acquire()
	tk0 := tk(e.bucket("a", "r", 0), "rpm")
	if tk0 != 3000 {
		t.Fatalf("tk %d after two acquires of 5, want 3000", tk0)
	}
	e.set("", "r", byp)

	// First write after the fan-out: enforce-shaped, debited, refunded.
	if lease := acquire(); !lease.Bypassed() {
		t.Fatal("the returned stamp did not teach the process the bypass")
	}
	if n, failed := updates(); n != 2 || failed != 0 || e.proxy.Stats()["BatchGetItem"].Forwarded != 0 {
		t.Fatalf("discovery: %s, want the debit and its refund (UpdateItem 2, none failed)", e.calls())
	}
	it := e.bucket("a", "r", 0)
	if tk(it, "rpm") != tk0 || consumed(it, "rpm") != 3000 {
		t.Fatalf("after the refund tk %d tc %d, want tk %d (refunded) and tc 3000 (counted)", tk(it, "rpm"), consumed(it, "rpm"), tk0)
	}
	// From now on one bypass-shaped write each, tk untouched.
	for range 4 {
		if lease := acquire(); !lease.Bypassed() {
			t.Fatal("a bypass-shaped write was enforced")
		}
		if n, failed := updates(); n != 1 || failed != 0 {
			t.Fatalf("bypassed acquire: %s, want UpdateItem 1", e.calls())
		}
	}
	if got := tk(e.bucket("a", "r", 0), "rpm"); got != tk0 {
		t.Fatalf("tk %d under bypass, want %d", got, tk0)
	}

	// Cleared: the process still believes bypass; the server refuses its
	// write (the stamp is gone) and the same request is enforced.
	e.set("", "r", inh)
	if lease := acquire(); lease.Bypassed() {
		t.Fatal("an acquire after the bypass was cleared was not enforced")
	}
	if _, failed := updates(); failed != 1 {
		t.Fatalf("after clearing: %s with %d failed writes, want exactly one refused bypass-shaped write", e.calls(), failed)
	}
	if got := tk(e.bucket("a", "r", 0), "rpm"); got != tk0-1000 {
		t.Fatalf("tk %d after the bypass ended, want %d (debited)", got, tk0-1000)
	}
}

func consumed(it map[string]types.AttributeValue, name string) int64 {
	n, _ := num(it, schema.BucketAttr(name, schema.LimitConsumed))
	return n
}

// TestFanoutReachesEveryShardAndIsAudited: the fan-out stamps every shard
// of every entity in scope, counts them, and the change is in the audit
// trail with its principal.
func TestFanoutReachesEveryShardAndIsAudited(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	for _, ent := range []string{"a", "b", "c"} {
		e.acquire(ent, "r")
	}
	// Give b four shards (the limiter creates them lazily).
	lim4, err := limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: rotate()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, "b", "r", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(4)},
	}); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := lim4.Acquire(e.ctx, "b", "r", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	p := e.set("", "r", dis)
	if p.Buckets != 6 || p.Stamped != 6 || p.Failed != 0 {
		t.Fatalf("progress %+v, want 6 buckets (a, c and b's 4 shards) stamped", p)
	}
	for shard := range 4 {
		if _, ok := e.bucket("b", "r", shard)[schema.AttrDisabled]; !ok {
			t.Errorf("shard %d of b is not stamped", shard)
		}
	}
	evs, err := e.ctl.AuditEvents(e.ctx, e.ns, "$RESOURCE:r")
	if err != nil || len(evs) != 1 {
		t.Fatalf("audit events %+v, %v", evs, err)
	}
	ev := evs[0]
	if ev.Action != "access_set" || ev.Principal != "ops@example" || ev.Resource != "r" ||
		ev.Details["scope"] != "resource" || ev.Details["value"] != "disabled" || !ev.Timestamp.Equal(e.clk.Now()) {
		t.Fatalf("audit event %+v", ev)
	}
	e.set("", "r", inh)
	if evs, _ := e.ctl.AuditEvents(e.ctx, e.ns, "$RESOURCE:r"); len(evs) != 2 || evs[1].Action != "access_cleared" {
		t.Fatalf("after clearing: %+v", evs)
	}
}

// rotate draws shards 0, 1, 2, … in turn.
func rotate() func(int) int {
	i := 0
	return func(n int) int { i++; return (i - 1) % n }
}

// TestFanoutSecondPassCatchesANewBucket (ADR-125 consequence): an acquire
// that creates a bucket after the first discovery pass has listed the
// resource's buckets is stamped by the second pass.
func TestFanoutSecondPassCatchesANewBucket(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	e.acquire("a", "r")
	created := false
	e.proxy.Add(faultproxy.Rule{
		Operation: "Query", Count: 1, Fault: faultproxy.AfterForward(faultproxy.Delay(time.Millisecond)),
		OnFire: func(string) {
			// The first pass's discovery has been answered. An acquire that
			// read the config before the change (still enforced) creates its
			// bucket now, unstamped: its create lands here.
			it := e.bucket("a", "r", 0)
			schema.BucketItemKeys(e.ns, "late", "r", 0).AddTo(it)
			it[schema.AttrEntityID] = schema.Str("late")
			delete(it, schema.AttrDisabled)
			if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
				t.Error(err)
				return
			}
			created = true
		},
	})
	p := e.set("", "r", dis)
	if !created || p.Buckets != 2 || p.Stamped != 2 {
		t.Fatalf("created %v, progress %+v: want the late bucket found by the second pass", created, p)
	}
	if got := e.acquire("late", "r"); got != "403" {
		t.Fatalf("the late bucket: %s, want 403", got)
	}
}

// TestFanoutPartialFailureAndRerun: a bucket write that fails stops
// nothing else; the call returns a *FanoutIncompleteError with the counts
// and the setting is stored; calling again finishes the job. A bucket that
// vanished is not an error.
func TestFanoutPartialFailureAndRerun(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	for _, ent := range []string{"a", "b", "c", "d"} {
		e.acquire(ent, "r")
	}
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Count: 1, Fault: faultproxy.InternalServerError(),
		Match: func(_ string, body []byte) bool { return strings.Contains(string(body), "BUCKET#b#r#0") }})
	// d's bucket disappears between discovery and its write.
	e.proxy.Add(faultproxy.Rule{Operation: "Query", Count: 1, Fault: faultproxy.AfterForward(faultproxy.Delay(time.Millisecond)),
		OnFire: func(string) {
			if _, err := e.tbl.DB.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, "d", "r", 0).AttributeValues(),
			}); err != nil {
				t.Error(err)
			}
		}})
	_, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", dis, "")
	var inc *control.FanoutIncompleteError
	if !errors.As(err, &inc) || inc.Progress.Failed != 1 || inc.Progress.Stamped != 2 || inc.Progress.Vanished != 1 || inc.Progress.Buckets != 4 {
		t.Fatalf("err %v (%+v), want an incomplete fan-out: 2 stamped, 1 failed, 1 vanished of 4", err, inc)
	}
	if got := e.acquire("b", "r"); got != "ok" {
		t.Fatalf("b before the rerun: %s (its stamp failed)", got)
	}
	p, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", dis, "")
	if err != nil || p.Failed != 0 {
		t.Fatalf("rerun: %+v, %v", p, err)
	}
	if got := e.acquire("b", "r"); got != "403" {
		t.Fatalf("b after the rerun: %s", got)
	}
}

// TestSetAccessRefusals: a system-level setting and a bypass the version
// gate refuses write nothing: no config, no stamp, no audit event.
func TestSetAccessRefusals(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	e.acquire("a", "r")
	if _, err := e.ctl.SetAccess(e.ctx, e.ns, "", "", dis, ""); !schema.IsValidationError(err) {
		t.Fatalf("system level: %v, want a validation error", err)
	}
	if err := config.NewStore(e.tbl.DB, e.tbl.Name).WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.16.0"}); err != nil {
		t.Fatal(err)
	}
	var vm *config.VersionMismatchError
	if _, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", byp, ""); !errors.As(err, &vm) {
		t.Fatalf("bypass with readers at 0.16.0: %v, want the gate's refusal", err)
	}
	if _, ok := e.bucket("a", "r", 0)[schema.AttrBypass]; ok {
		t.Fatal("a refused bypass stamped a bucket")
	}
	if evs, _ := e.ctl.AuditEvents(e.ctx, e.ns, "$RESOURCE:r"); len(evs) != 0 {
		t.Fatalf("a refused change was audited: %+v", evs)
	}
	if got := e.acquire("a", "r"); got != "ok" {
		t.Fatalf("after the refusals: %s", got)
	}
}

// bumpShards sets shard 0's shard_count, so that the limiter creates the
// other shards lazily.
func (e *env) bumpShards(entity, resource string, n int64) {
	e.t.Helper()
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, entity, resource, 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(n)},
	}); err != nil {
		e.t.Fatal(err)
	}
}
