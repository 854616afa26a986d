package control_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func rpmTpm(rpm, tpm int64, softTpm bool) []limit.Limit {
	t := limit.PerMinute("tpm", tpm)
	if softTpm {
		t = t.AsSoft()
	}
	return []limit.Limit{limit.PerMinute("rpm", rpm), t}
}

// acquireTpm asks rpm 1 and tpm n; it returns the lease or the error.
func (e *env) acquireTpm(entity, resource string, n int64) (*limiter.Lease, error) {
	return e.lim.Acquire(e.ctx, entity, resource, limiter.Consume{"rpm": 1, "tpm": n})
}

// TestSoftLimitOverdrawsNeverRejects (ADR-151 decision 1): a soft limit is
// debited like a hard one and may go into debt, but never rejects; the
// lease reports it overdrawn; the hard limit beside it still binds.
func TestSoftLimitOverdrawsNeverRejects(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(3, 100, true), ""); err != nil {
		t.Fatal(err)
	}
	var last *limiter.Lease
	for i := range 3 {
		lease, err := e.acquireTpm("a", "r", 80)
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		last = lease
	}
	if left, _ := last.Remaining("tpm"); left != 100-240 {
		t.Fatalf("tpm left %d, want -140 (debited into debt)", left)
	}
	if !slices.Equal(last.Overdrawn(), []string{"tpm"}) {
		t.Fatalf("overdrawn %v, want [tpm]", last.Overdrawn())
	}
	_, err := e.acquireTpm("a", "r", 80)
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("4th acquire: %v, want the hard rpm's 429", err)
	}
	for _, v := range rle.Violations() {
		if v.LimitName != "rpm" {
			t.Fatalf("violation on %s: a soft limit never rejects", v.LimitName)
		}
	}
	if tc := consumed(e.bucket("a", "r", 0), "tpm"); tc != 240_000 {
		t.Fatalf("tpm tc %d, want 240000: the overdraw is metered", tc)
	}
}

// TestSoftChangeReachesBuckets (ADR-151 decision 4): a resource-level
// change of soft-ness reaches the buckets that resolve from the resource
// before the setter returns — a hard-to-soft change admits at once what
// the hard limit refused, soft-to-hard enforces at once — while a bucket
// whose limits come from an entity override is left alone.
func TestSoftChangeReachesBuckets(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(100, 100, false), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "vip", "r", rpmTpm(100, 100, false), ""); err != nil {
		t.Fatal(err)
	}
	for _, ent := range []string{"a", "vip"} {
		if _, err := e.acquireTpm(ent, "r", 100); err != nil { // tpm now empty
			t.Fatal(err)
		}
	}
	var rle *limiter.RateLimitExceeded
	if _, err := e.acquireTpm("a", "r", 10); !errors.As(err, &rle) {
		t.Fatalf("hard tpm, empty: %v", err)
	}
	p, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(100, 100, true), "")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("hard → soft: %+v, %v; want a's bucket stamped, vip's left", p, err)
	}
	if _, err := e.acquireTpm("a", "r", 10); err != nil {
		t.Fatalf("soft tpm, empty: %v, want admitted into debt", err)
	}
	if _, err := e.acquireTpm("vip", "r", 10); !errors.As(err, &rle) {
		t.Fatalf("the override's tpm is still hard: %v", err)
	}
	if _, ok := e.bucket("vip", "r", 0)[schema.BucketAttr("tpm", schema.LimitSoft)]; ok {
		t.Fatal("the resource's change stamped an entity override")
	}
	// A change of capacity alone reaches the resource's bucket too
	// (docs/design.md §8), and leaves the override's alone.
	if p, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(200, 100, true), ""); err != nil || p.Stamped != 1 || p.Unchanged != 1 {
		t.Fatalf("rpm 100 → 200: %+v, %v; want a's bucket written, vip's left", p, err)
	}
	if cp, _ := num(e.bucket("a", "r", 0), schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 200_000 {
		t.Fatalf("a's rpm capacity %d after the change, want 200000", cp)
	}
	p, err = e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(100, 100, false), "")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("soft → hard: %+v, %v", p, err)
	}
	if _, err := e.acquireTpm("a", "r", 10); !errors.As(err, &rle) {
		t.Fatalf("hard again, in debt: %v, want a 429", err)
	}
}

// TestSystemSoftChangeReachesEveryBucket: a system-level change reaches,
// through GSI4, the buckets of every resource that resolves from the system.
func TestSystemSoftChangeReachesEveryBucket(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetSystemLimits(e.ctx, e.ns, rpmTpm(100, 50, false), config.SystemOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "own", rpmTpm(100, 50, false), ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"r1", "r2", "own"} {
		if _, err := e.acquireTpm("a", r, 50); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.ctl.SetSystemLimits(e.ctx, e.ns, rpmTpm(100, 50, true), config.SystemOptions{}, "")
	if err != nil || p.Buckets != 3 || p.Stamped != 2 {
		t.Fatalf("progress %+v, %v; want 3 buckets found, r1's and r2's stamped", p, err)
	}
	for _, r := range []string{"r1", "r2"} {
		if _, err := e.acquireTpm("a", r, 50); err != nil {
			t.Fatalf("%s: %v, want admitted (soft)", r, err)
		}
	}
	var rle *limiter.RateLimitExceeded
	if _, err := e.acquireTpm("a", "own", 50); !errors.As(err, &rle) {
		t.Fatalf("own resource limits: %v, want 429", err)
	}
}

// TestEntityParameterSync: an entity-level change reaches its buckets
// before the setter returns — new parameters, soft stamps, limits no
// longer configured removed (their tc kept), balances clamped to the new
// ceilings, vu stamped from them (docs/design.md §8).
func TestEntityParameterSync(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "a", schema.DefaultResource,
		[]limit.Limit{limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000), limit.PerMinute("rpd", 5)}, ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"r1", "r2"} {
		if _, err := e.lim.Acquire(e.ctx, "a", r, limiter.Consume{"rpm": 1, "rpd": 1}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "a", schema.DefaultResource, rpmTpm(2, 500, true), "ops")
	if err != nil || p.Stamped != 2 {
		t.Fatalf("sync: %+v, %v", p, err)
	}
	for _, r := range []string{"r1", "r2"} {
		it := e.bucket("a", r, 0)
		if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 2000 {
			t.Errorf("%s: rpm cp %d, want 2000", r, cp)
		}
		if _, ok := it[schema.BucketAttr("tpm", schema.LimitSoft)]; !ok {
			t.Errorf("%s: tpm not stamped soft", r)
		}
		if _, ok := it[schema.BucketAttr("rpd", schema.LimitCapacity)]; ok {
			t.Errorf("%s: the removed limit rpd is still on the bucket", r)
		}
		if _, ok := it[schema.BucketAttr("rpd", schema.LimitTokens)]; ok {
			t.Errorf("%s: the removed limit rpd kept its balance", r)
		}
		if tc, _ := num(it, schema.BucketAttr("rpd", schema.LimitConsumed)); tc != 1000 {
			t.Errorf("%s: rpd tc %d after the removal, want 1000 (tc never moves backwards)", r, tc)
		}
		// rpm: 9 of 10 stored, clamped to the new ceiling of 2, which is
		// full: vu is the write's rf, so the next debit materialises.
		if tk, _ := num(it, schema.BucketAttr("rpm", schema.LimitTokens)); tk != 2000 {
			t.Errorf("%s: rpm tk %d, want 2000 (clamped to the new ceiling)", r, tk)
		}
		vu, _ := num(it, schema.AttrVU)
		if rf, _ := num(it, schema.AttrRF); vu != rf || rf <= e.clk.Now().UnixMilli()-1 {
			t.Errorf("%s: vu %d, rf %d; want vu = rf, rf moved to the sync (%d)", r, vu, rf, e.clk.Now().UnixMilli())
		}
	}
	// Two acquires are admitted on the clamped 2, the third refused.
	if _, err := e.lim.Acquire(e.ctx, "a", "r1", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lim.Acquire(e.ctx, "a", "r1", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	var rle *limiter.RateLimitExceeded
	if _, err := e.lim.Acquire(e.ctx, "a", "r1", limiter.Consume{"rpm": 1}); !errors.As(err, &rle) {
		t.Fatalf("third acquire under the new rpm of 2: %v", err)
	}
	evs, err := e.ctl.AuditEvents(e.ctx, e.ns, "a")
	if err != nil || len(evs) != 2 || evs[1].Action != "limits_set" || evs[1].Principal != "ops" || evs[1].Details["level"] != "entity_default" {
		t.Fatalf("audit %+v, %v", evs, err)
	}
}

// TestStampDeadlines (ADR-151 decision 8): a soft stamp is honoured only
// before its deadline; past it, the request takes the slow path, which
// renews the stamp from config read uncached — or removes it when the
// config no longer says soft (here changed behind the fan-out's back).
func TestStampDeadlines(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(100, 100, true), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.acquireTpm("a", "r", 150); err != nil { // created soft, in debt
		t.Fatal(err)
	}
	d0, _ := num(e.bucket("a", "r", 0), schema.BucketAttr("tpm", schema.LimitSoft))
	e.clk.Advance(61 * time.Second) // the stamp is dead; refill: 100 of debt… still short
	if _, err := e.acquireTpm("a", "r", 10); err != nil {
		t.Fatalf("past the deadline, config still soft: %v", err)
	}
	if d1, _ := num(e.bucket("a", "r", 0), schema.BucketAttr("tpm", schema.LimitSoft)); d1 <= d0 || d1 > e.clk.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("renewed deadline %d (was %d): want after the old one and at most T after now", d1, d0)
	}
	// The config turns hard without a fan-out (another writer's store).
	if err := e.ctl.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", rpmTpm(100, 100, false)); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(61 * time.Second)
	var rle *limiter.RateLimitExceeded
	if _, err := e.acquireTpm("a", "r", 150); !errors.As(err, &rle) {
		t.Fatalf("past the deadline, config hard: %v, want a 429", err)
	}
	if _, ok := e.bucket("a", "r", 0)[schema.BucketAttr("tpm", schema.LimitSoft)]; ok {
		t.Fatal("the slow pass kept a stamp the config no longer justifies")
	}
}

// TestChildBypassNeverReachesParent (ADR-151 decision 5): a bypassed child
// that cascades still debits and is bound by its parent.
func TestChildBypassNeverReachesParent(t *testing.T) {
	e := newEnv(t)
	st := e.ctl.Store()
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "org", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "org", "r", []limit.Limit{limit.PerMinute("rpm", 2)}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "key", "r", []limit.Limit{limit.PerMinute("rpm", 100)}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetAccess(e.ctx, e.ns, "key", "r", config.AccessBypass, ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, e.acquire("key", "r"))
	}
	if got[0] != "bypass" || got[1] != "bypass" || got[2] != "429" {
		t.Fatalf("outcomes %v, want two admitted (child bypassed) and the parent's 429", got)
	}
	if tc := consumed(e.bucket("org", "r", 0), "rpm"); tc != 2000 {
		t.Fatalf("parent tc %d, want 2000", tc)
	}
}
