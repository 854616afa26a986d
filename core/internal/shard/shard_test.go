package shard

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// t0 is 2026-11-29 12:00:00 UTC, epoch ms: every instant here is fixed.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMilli()

var id0 = schema.BucketID{Namespace: "ns0000000_a", Entity: "u", Resource: "r"}

// shardOf is a shard as a create writes it: rf at rf, the limits given,
// then decoded as a reader sees it.
func shardOf(t *testing.T, rf int64, limits ...bucketitem.NewLimit) *bucketitem.Image {
	t.Helper()
	return shardWith(t, bucketitem.New{ID: id0, RF: rf, ShardCount: 1, VU: rf + 1, Limits: limits})
}

func shardWith(t *testing.T, n bucketitem.New) *bucketitem.Image {
	t.Helper()
	img, err := bucketitem.Decode(n.Item())
	if err != nil {
		t.Fatal(err)
	}
	return &img
}

// drip is a stored dripping limit: tk tokens of capacity c refilled c a
// minute (whole tokens).
func drip(name string, tk, c int64) bucketitem.NewLimit {
	return bucketitem.NewLimit{Name: name, Tokens: tk * 1000, Params: limit.PerMinute(name, c).Params()}
}

// reconcile is the operator's sync of one shard (control.SyncLimits):
// materialise at now, reconfigure to limits, dropping the rest.
func reconcile(t *testing.T, img *bucketitem.Image, now int64, limits ...limit.Limit) Pass {
	t.Helper()
	p, err := Materialise(id0, img, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reconfigure(limits, true); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTTL: the expiry rule of docs/design.md §2 with its worked example.
func TestTTL(t *testing.T) {
	now := int64(1_000_000_000_500)
	ls := []limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 10_000)}
	for _, c := range []struct {
		name        string
		limits      []limit.Limit
		entityLevel bool
		mult        int64
		want        int64
	}{
		{"resource limits, 7 × the longest refill", ls, false, 7, 1_000_000_000 + 7*60},
		{"an entity's own limits keep their shard", ls, true, 7, 0},
		{"multiplier off", ls, false, 0, 0},
		{"an hourly limit sets the horizon", append(slices.Clone(ls), limit.PerHour("rph", 5)), false, 2, 1_000_000_000 + 2*3600},
		{"a session quota's window", []limit.Limit{limit.Session("s", 10, 5*time.Hour)}, false, 1, 1_000_000_000 + 5*3600},
	} {
		if got := TTL(c.limits, c.entityLevel, c.mult, now); got != c.want {
			t.Errorf("%s: TTL %d, want %d", c.name, got, c.want)
		}
	}
}

// TestReconfigureWorked: the worked examples of docs/design.md §8 and of
// Reconfigure: the stored parameters up to the change, the new ones from
// it; a lowered capacity clamps, a raised one grants nothing at once.
func TestReconfigureWorked(t *testing.T) {
	rf := t0
	img := shardOf(t, rf, drip("rpm", 90, 100))
	for _, c := range []struct {
		name      string
		at        int64
		to        limit.Limit
		target    int64 // millitokens
		rate      int64
		vuFromRF  int64 // vu − the write's rf
		changesRF bool
	}{
		// 90 + 6 s × 100/60 s = 100 (the old ceiling); the new ceiling 20.
		{"lowered to 20 a minute, 6 s on", rf + 6_000, limit.PerMinute("rpm", 20), 20_000, 20_000, 0, true},
		// 90 + 3 s × 100/60 s = 95; kept under the new ceiling of 200,
		// refilling at 200 a minute: full 105 tokens later, 31.5 s.
		{"raised to 200 a minute, 3 s on", rf + 3_000, limit.PerMinute("rpm", 200), 95_000, 200_000, 31_500, true},
		// The same parameters: nothing changes but the refill.
		{"unchanged, 3 s on", rf + 3_000, limit.PerMinute("rpm", 100), 95_000, 100_000, 3_000, false},
	} {
		p := reconcile(t, img, c.at, c.to)
		lp := p.Find("rpm")
		if lp.Target != c.target || lp.Pass.Share.Rate != c.rate || lp.Params != c.to.Params() {
			t.Errorf("%s: target %d rate %d params %+v, want %d, %d, %+v", c.name, lp.Target, lp.Pass.Share.Rate, lp.Params, c.target, c.rate, c.to.Params())
		}
		wrf := p.StampRF()
		if wrf != c.at {
			t.Errorf("%s: rf %d, want the change's instant %d", c.name, wrf, c.at)
		}
		if got := p.ValidUntil(wrf) - wrf; got != c.vuFromRF {
			t.Errorf("%s: vu at rf + %d, want + %d", c.name, got, c.vuFromRF)
		}
		if p.ChangesLimits() != c.changesRF {
			t.Errorf("%s: ChangesLimits %v, want %v", c.name, p.ChangesLimits(), c.changesRF)
		}
	}
}

// TestReconfigureKeepsDebt: a soft limit in debt keeps it under a lowered
// capacity (a clamp never raises a balance).
func TestReconfigureKeepsDebt(t *testing.T) {
	img := shardOf(t, t0, bucketitem.NewLimit{Name: "tpm", Tokens: -5_000_000, Params: limit.PerMinute("tpm", 1000).Params(), Soft: t0 + 60_000})
	p := reconcile(t, img, t0+6_000, limit.PerMinute("tpm", 100).AsSoft())
	// −5,000 + 6 s × 1,000/60 s = −4,900 tokens: below the new ceiling.
	if lp := p.Find("tpm"); lp.Target != -4_900_000 {
		t.Errorf("target %d, want the debt −4,900,000 kept", lp.Target)
	}
}

// TestRFMovesOnEveryChangeOfLimits: a write that changes the shard's limits
// moves rf at least a millisecond past the stored one, even when the
// clock reads the stored rf or before it (a skewed writer): every rf pin
// taken before it fails (docs/decisions.md P58).
func TestRFMovesOnEveryChangeOfLimits(t *testing.T) {
	img := shardOf(t, t0, drip("rpm", 90, 100))
	for _, now := range []int64{t0 - 5_000, t0, t0 + 1} {
		p := reconcile(t, img, now, limit.PerMinute("rpm", 50))
		if rf := p.StampRF(); rf <= t0 {
			t.Errorf("now %+d: rf %d, want past the stored %d", now-t0, rf, t0)
		}
		p = reconcile(t, img, now, limit.PerMinute("rpm", 100))
		if rf := p.StampRF(); rf != max(now, t0) {
			t.Errorf("now %+d, limits unchanged: rf %d, want max(now, rf) %d", now-t0, rf, max(now, t0))
		}
	}
}

// TestReconfigureQuota: a calendar quota's allowance changed mid-period
// (docs/design.md §15): lowered, the balance is clamped to the new
// ceiling C' // gc + tu; raised, nothing is granted until the next reset
// edge, which restores the new allowance whole. A reset edge due before
// the change is applied at the stored allowance first.
func TestReconfigureQuota(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	q := func(n int64) limit.Limit { return limit.Quota("tpd", n, daily, "") }
	stored := func(tk, tu int64, rf int64) *bucketitem.Image {
		return shardOf(t, rf, bucketitem.NewLimit{Name: "tpd", Tokens: tk, Params: q(1000).Params(), ResetSchedule: q(1000).ResetSchedule, GrantShards: 1, TopUp: tu})
	}
	for _, c := range []struct {
		name   string
		img    *bucketitem.Image
		at     int64
		to     int64
		target int64
	}{
		{"lowered below the balance: clamped", stored(700_000, 0, t0), t0 + 1000, 500, 500_000},
		{"lowered above the balance: kept", stored(300_000, 0, t0), t0 + 1000, 500, 300_000},
		{"a top-up stays on top of the new allowance", stored(700_000, 100_000, t0), t0 + 1000, 500, 600_000},
		{"raised: nothing granted", stored(300_000, 0, t0), t0 + 1000, 5000, 300_000},
		// rf the day before: the midnight edge restores 1,000 (the stored
		// allowance, the period's), then the clamp to 500.
		{"a reset edge due first", stored(0, 0, t0-24*3_600_000), t0, 500, 500_000},
	} {
		p := reconcile(t, c.img, c.at, q(c.to))
		lp := p.Find("tpd")
		if lp.Target != c.target {
			t.Errorf("%s: target %d, want %d", c.name, lp.Target, c.target)
		}
		next, _ := daily.NextEdge(time.UnixMilli(c.at), time.UTC)
		if vu := p.ValidUntil(p.StampRF()); vu != next.UnixMilli() {
			t.Errorf("%s: vu %d, want the next edge %d", c.name, vu, next.UnixMilli())
		}
	}
}

// TestReconfigureKindChanges: a dripping limit that becomes a quota is
// granted at the pair's count from the change on; a quota that drips from
// now on loses its grant and top-up; a limit that stops being a session
// quota loses its window.
func TestReconfigureKindChanges(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	img := shardWith(t, bucketitem.New{ID: id0, RF: t0, ShardCount: 2, Limits: []bucketitem.NewLimit{drip("a", 80, 100),
		{Name: "b", Tokens: 40_000, Params: limit.Quota("b", 100, daily, "").Params(), ResetSchedule: limit.Quota("b", 100, daily, "").ResetSchedule, GrantShards: 2, TopUp: 5_000},
		{Name: "c", Tokens: 30_000, Params: limit.Session("c", 100, time.Hour).Params(), ResetAfter: 3600, WindowStart: t0, WindowAnchor: t0}}})
	p, err := Materialise(id0, img, 2, t0+1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reconfigure([]limit.Limit{limit.Quota("a", 60, daily, ""), limit.PerMinute("b", 100), limit.PerMinute("c", 100)}, true); err != nil {
		t.Fatal(err)
	}
	a, b, c := p.Find("a"), p.Find("b"), p.Find("c")
	// a: 50 a shard of 100 a minute, full; then C' // S = 60 // 2 = 30.
	if !a.Quota || a.GC != 2 || !a.WriteGC || a.Target != 30_000 {
		t.Errorf("a: quota %v gc %d/%v target %d, want a quota granted at 2, 30,000", a.Quota, a.GC, a.WriteGC, a.Target)
	}
	if b.Quota || !b.RemoveGrant || b.Target != 40_000 {
		t.Errorf("b: quota %v remove grant %v target %d, want a drip without grant at 40,000", b.Quota, b.RemoveGrant, b.Target)
	}
	if c.Window != nil || !c.RemoveWindow {
		t.Errorf("c: window %v, remove %v: want the window removed", c.Window, c.RemoveWindow)
	}
	u := p.Update(Write{})
	for _, want := range []string{"b_b_gc", "b_b_tu", "b_c_ws", "b_c_rsa", "b_c_wa"} {
		if !removes(u, want) {
			t.Errorf("the write does not remove %s: %s", want, u.Update())
		}
	}
}

// TestReconfigureSession: a session quota's allowance lowered inside a live
// window clamps its balance; its window length is the configured one from
// the change on, and vu stops at the window's end under it.
func TestReconfigureSession(t *testing.T) {
	s := limit.Session("s", 1000, 5*time.Hour)
	img := shardOf(t, t0, bucketitem.NewLimit{Name: "s", Tokens: 800_000, Params: s.Params(), ResetAfter: 18_000, WindowStart: t0, WindowAnchor: t0, GrantShards: 1})
	p := reconcile(t, img, t0+3_600_000, limit.Session("s", 500, 2*time.Hour))
	lp := p.Find("s")
	if lp.Target != 500_000 {
		t.Errorf("target %d, want 500,000 (clamped)", lp.Target)
	}
	if vu := p.ValidUntil(p.StampRF()); vu != t0+2*3_600_000 {
		t.Errorf("vu %d, want the window's end under the new length %d", vu, t0+2*3_600_000)
	}
	if u := p.Update(Write{}); !strings.Contains(u.Update(), "SET") || !sets(u, "b_s_rsa") {
		t.Errorf("the new window length is not written: %s", u.Update())
	}
	// Shortened past its end: the window is over; vu is now, so that the
	// next use opens the next window.
	p = reconcile(t, img, t0+3_600_000, limit.Session("s", 1000, 30*time.Minute))
	if vu := p.ValidUntil(p.StampRF()); vu != t0+3_600_000 {
		t.Errorf("vu %d, want now %d: the window ended under its new length", vu, t0+3_600_000)
	}
}

// TestDropKeepsTC: a limit the config no longer resolves loses every
// attribute but its consumption counter.
func TestDropKeepsTC(t *testing.T) {
	img := shardOf(t, t0, drip("rpm", 50, 100), bucketitem.NewLimit{Name: "rpd", Tokens: 4_000, Consumed: 1_000, Params: limit.PerDay("rpd", 5).Params(), Soft: t0 + 1})
	p := reconcile(t, img, t0+1000, limit.PerMinute("rpm", 100))
	if !p.Find("rpd").Dropped || !p.ChangesLimits() {
		t.Fatal("rpd not dropped")
	}
	u := p.Update(Write{})
	for _, f := range []string{"tk", "cp", "ra", "rp", "soft"} {
		if !removes(u, "b_rpd_"+f) {
			t.Errorf("b_rpd_%s not removed: %s", f, u.Update())
		}
	}
	if removes(u, "b_rpd_tc") || sets(u, "b_rpd_tc") {
		t.Errorf("tc touched: %s", u.Update())
	}
}

// TestUpdatePins: a sync's write is conditioned on the rf, vu and
// shard_count read, moves rf, removes the recheck stamp, writes the TTL it
// is given; without PinVU (reset, top-up) vu is not pinned.
func TestUpdatePins(t *testing.T) {
	img := shardWith(t, bucketitem.New{ID: id0, RF: t0, ShardCount: 1, VU: t0 + 5, Recheck: t0 + 60_000, TTL: t0/1000 + 100, Limits: []bucketitem.NewLimit{drip("rpm", 50, 100)}})
	p := reconcile(t, img, t0+1000, limit.PerMinute("rpm", 10))
	u := p.Update(Write{PinVU: true, ClearRecheck: true, SetTTL: true})
	cond := u.Condition()
	for _, attr := range []string{"rf", "vu", "shard_count"} {
		if !pinned(u, attr) {
			t.Errorf("%s not pinned: %s", attr, cond)
		}
	}
	if !removes(u, schema.AttrRecheck) || !removes(u, schema.AttrTTL) {
		t.Errorf("recheck and ttl (entity-level: none) not removed: %s", u.Update())
	}
	if u = p.Update(Write{ForcePass: true}); pinned(u, "vu") || removes(u, schema.AttrRecheck) {
		t.Errorf("reset's write: %s / %s", u.Condition(), u.Update())
	}
}

// TestCompare: what counts as a shard out of line with its config.
func TestCompare(t *testing.T) {
	rpm := limit.PerMinute("rpm", 100)
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	base := func(extra ...bucketitem.NewLimit) *bucketitem.Image {
		return shardWith(t, bucketitem.New{ID: id0, RF: t0, ShardCount: 1, TTL: t0 / 1000, Limits: append([]bucketitem.NewLimit{drip("rpm", 50, 100)}, extra...)})
	}
	for _, c := range []struct {
		name   string
		img    *bucketitem.Image
		limits []limit.Limit
		entity bool
		inLine bool
		drift  string
	}{
		{"the same", base(), []limit.Limit{rpm}, false, true, ""},
		{"another capacity", base(), []limit.Limit{rpm.WithBurst(150)}, false, false, "changed rpm"},
		{"soft now", base(), []limit.Limit{rpm.AsSoft()}, false, false, "changed rpm"},
		{"a limit added: left to its seed", base(), []limit.Limit{rpm, limit.PerMinute("tpm", 1)}, false, true, "missing tpm"},
		{"a limit dropped", base(drip("tpm", 1, 1)), []limit.Limit{rpm}, false, false, "extra tpm"},
		{"now the entity's own: no expiry", base(), []limit.Limit{rpm}, true, false, "ttl"},
		{"a reset schedule now", base(), []limit.Limit{limit.Quota("rpm", 100, daily, "")}, false, false, "changed rpm"},
		{"no limits at all", base(), nil, false, false, "extra rpm"},
	} {
		d := Compare(c.img, c.limits, c.entity, 7)
		if d.InLine() != c.inLine {
			t.Errorf("%s: in line %v, want %v (%+v)", c.name, d.InLine(), c.inLine, d)
		}
		var got []string
		for _, n := range d.Changed {
			got = append(got, "changed "+n)
		}
		for _, n := range d.Extra {
			got = append(got, "extra "+n)
		}
		for _, n := range d.Missing {
			got = append(got, "missing "+n)
		}
		if d.TTL {
			got = append(got, "ttl")
		}
		if strings.Join(got, ", ") != c.drift {
			t.Errorf("%s: drift %q, want %q", c.name, strings.Join(got, ", "), c.drift)
		}
	}
	// A schedule stored as the item's default matches the same schedule
	// configured on the limit; another zone does not.
	q := limit.Quota("tpd", 10, daily, "Europe/Paris")
	n := bucketitem.New{ID: id0, RF: t0, ShardCount: 1, Zone: "Europe/Paris", Limits: []bucketitem.NewLimit{{Name: "tpd", Tokens: 1, Params: q.Params(), GrantShards: 1}}}
	it := n.Item()
	it[schema.AttrRSched] = schema.Str(q.ResetSchedule)
	img, err := bucketitem.Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	if !Matches(&img, img.Limit("tpd"), q) {
		t.Error("an item-level reset schedule does not match the same one configured")
	}
	if Matches(&img, img.Limit("tpd"), limit.Quota("tpd", 10, daily, "Asia/Tokyo")) {
		t.Error("another zone matches")
	}
}

// TestReconfigureNeverGrants is the property of a change of limits on a
// live shard, over random stored states and random new limits: the balance
// the write leaves is never above what the stored limits give at the
// change's instant (nothing is granted), never above the new ceiling
// unless it was already in debt below it, and equal to it when that
// fits under the new ceiling; the write's vu is never before its rf and
// never after the instant the new limits could fill it.
func TestReconfigureNeverGrants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 5000 {
		c0, c1 := 1+rng.Int64N(1000), 1+rng.Int64N(1000)
		per0, per1 := time.Duration(1+rng.IntN(3600))*time.Second, time.Duration(1+rng.IntN(3600))*time.Second
		old := limit.Custom("x", c0, 1+rng.Int64N(c0), per0)
		nw := limit.Custom("x", c1, 1+rng.Int64N(c1), per1)
		tk := rng.Int64N(2*c0*1000) - c0*500
		rf := t0 - rng.Int64N(3_600_000)
		img := shardOf(t, rf, bucketitem.NewLimit{Name: "x", Tokens: tk, Params: old.Params()})
		at := t0 + rng.Int64N(60_000)
		p := reconcile(t, img, at, nw)
		lp := p.Find("x")
		mat, _ := bucket.Materialise(tk, rf, at, old.Params().Capacity, old.Params().RefillAmount, old.Params().RefillPeriod)
		ceil := nw.Params().Capacity
		switch {
		case lp.Target > mat:
			t.Fatalf("case %d: target %d above the stored limits' %d", i, lp.Target, mat)
		case lp.Target > ceil:
			t.Fatalf("case %d: target %d above the new ceiling %d", i, lp.Target, ceil)
		case mat <= ceil && lp.Target != mat:
			t.Fatalf("case %d: target %d, want %d (it fits)", i, lp.Target, mat)
		}
		rfW := p.StampRF()
		vu := p.ValidUntil(rfW)
		if vu < rfW || vu != bucket.Effective(nw.Params(), 1).FullAt(lp.Target, rfW) {
			t.Fatalf("case %d: vu %d, rf %d", i, vu, rfW)
		}
	}
}

func pinned(u *expr.Builder, attr string) bool {
	for alias, a := range u.Names() {
		if a == attr && strings.Contains(u.Condition(), alias+" = ") {
			return true
		}
	}
	return false
}

func removes(u *expr.Builder, attr string) bool {
	return clauseHas(u, "REMOVE", attr)
}

func sets(u *expr.Builder, attr string) bool {
	return clauseHas(u, "SET", attr)
}

// clauseHas reports whether the update's clause (SET, ADD, REMOVE) names
// attr.
func clauseHas(u *expr.Builder, clause, attr string) bool {
	upd := u.Update()
	i := strings.Index(upd, clause+" ")
	if i < 0 {
		return false
	}
	part := upd[i+len(clause)+1:]
	for _, next := range []string{" SET ", " ADD ", " REMOVE "} {
		if j := strings.Index(part, next); j >= 0 {
			part = part[:j]
		}
	}
	for alias, a := range u.Names() {
		if a != attr {
			continue
		}
		for _, item := range strings.Split(part, ", ") {
			if item == alias || strings.HasPrefix(item, alias+" ") {
				return true
			}
		}
	}
	return false
}
