package maintenance

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// tpd is a daily quota of 1,000 tokens resetting at midnight in Paris: no
// drip (ra 0), its grant sized at gc shards, a top-up of tu this period.
func tpd(tkv, tcv, gc, tu int64) []any {
	kv := []any{tk("tpd"), tkv, "b_tpd_cp", 1_000_000, "b_tpd_ra", 0, "b_tpd_rp", 1000, tc("tpd"), tcv,
		"b_tpd_rsched", "m0h0", "sched_tz", "Europe/Paris", "b_tpd_gc", gc}
	if tu > 0 {
		kv = append(kv, "b_tpd_tu", tu)
	}
	return kv
}

// The first record after midnight in Paris brings the reset edge
// (docs/design.md §15): the share at the image's count, the grant sized at
// it, the top-up gone, tc untouched, vu the next midnight, under the rf
// and vu pins and the count pin.
func TestQuotaResetEdgeApplied(t *testing.T) {
	at := time.Date(2027, 1, 15, 23, 0, 30, 0, time.UTC) // 00:00:30 in Paris
	f := scheduledFixture(t, at)
	id := bid("q1", 0)
	yesterday := at.Add(-2 * time.Hour).UnixMilli()
	nw := with(bucketItem(id, yesterday, 2, wcu(1_000_000, 0)), tpd(-3_000, 1_250_000, 1, 250_000)...)
	nw = with(nw, "vu", time.Date(2027, 1, 15, 23, 0, 0, 0, time.UTC).UnixMilli())
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, with(nw, tc("tpd"), 1_200_000), nw)), Stats{Refills: 1})
	next := time.Date(2027, 1, 16, 23, 0, 0, 0, time.UTC).UnixMilli()
	sameItem(t, "bucket", f.get(t, id), with(nw, schema.AttrRF, at.UnixMilli(), tk("tpd"), 500_000,
		"b_tpd_gc", 2, "b_tpd_tu", nil, "vu", next))
}

// Within the period the quota only clamps to C // gc + tu: a balance above
// a lowered ceiling is trimmed; one below it is left alone (a quota never
// drips), so a calm bucket gets no write.
func TestQuotaClampWithinThePeriod(t *testing.T) {
	at := time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC)
	f := scheduledFixture(t, at)
	id := bid("q2", 0)
	above := with(bucketItem(id, at.Add(-time.Hour).UnixMilli(), 2, wcu(1_000_000, 0)), tpd(700_000, 0, 2, 50_000)...)
	f.put(t, above)
	wantStats(t, f.run(t, record(t, id, above, above)), Stats{Refills: 1})
	// 1 000 000 // 2 + 50 000 = 550 000.
	if got := render(f.get(t, id)[tk("tpd")]); got != "N:550000" {
		t.Errorf("clamped to %s, want 550000", got)
	}

	calm := bid("q3", 0)
	below := with(bucketItem(calm, at.Add(-time.Hour).UnixMilli(), 2, wcu(1_000_000, 0)), tpd(100_000, 0, 2, 0)...)
	f.put(t, below)
	wantStats(t, f.run(t, record(t, calm, below, below)), Stats{})
}

// A reset on a shard whose count lags shard 0's is left to the client,
// which sizes the grant at the pair's count (docs/design.md §15).
func TestQuotaResetOnALaggingShardIsDeferred(t *testing.T) {
	at := time.Date(2027, 1, 15, 23, 0, 30, 0, time.UTC)
	f := scheduledFixture(t, at)
	yesterday := at.Add(-2 * time.Hour).UnixMilli()
	zero := with(bucketItem(bid("q4", 0), yesterday, 4, wcu(1_000_000, 0)), tpd(0, 0, 4, 0)...)
	one := with(bucketItem(bid("q4", 1), yesterday, 2, wcu(1_000_000, 0)), tpd(0, 0, 2, 0)...)
	f.put(t, zero)
	f.put(t, one)
	wantStats(t, f.run(t, record(t, bid("q4", 1), one, one)), Stats{Deferred: 1})
	sameItem(t, "lagging shard", f.get(t, bid("q4", 1)), one)

	// Once shard 1 says 4 too, the reset is applied at 4.
	level := with(one, "shard_count", 4)
	f.put(t, level)
	wantStats(t, f.run(t, record(t, bid("q4", 1), level, level)), Stats{Refills: 1})
	if got := render(f.get(t, bid("q4", 1))[tk("tpd")]); got != "N:250000" {
		t.Errorf("reset to %s, want 250000", got)
	}
}

// tokensOf reads a limit's tk off a stored item.
func tokensOf(t *testing.T, f *fixture, id schema.BucketID, name string) string {
	t.Helper()
	return render(f.get(t, id)[tk(name)])
}

// Shard 0 of a daily quota doubled from 1 to 2 and then from 2 to 4: each
// new shard is funded by a move off the sibling whose grant covers its slot
// (the narrowest cover), in one transaction; the raised sibling keeps the
// grant it was read at; nothing is minted (ADR-145, docs/design.md §15).
func TestQuotaPropagationFundsClones(t *testing.T) {
	at := time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC) // 13:00 in Paris, same day as rf
	f := scheduledFixture(t, at)
	rf := at.Add(-time.Hour).UnixMilli()
	vu := time.Date(2027, 1, 15, 23, 0, 0, 0, time.UTC).UnixMilli()
	zero := bid("qp", 0)
	one := with(bucketItem(zero, rf, 1, wcu(1_000_000, 0)), append(tpd(700_000, 300_000, 1, 0), "vu", vu)...)
	two := with(one, "shard_count", 2)
	f.put(t, two)

	wantStats(t, f.run(t, record(t, zero, one, two)), Stats{Clones: 1})
	if got := tokensOf(t, f, zero, "tpd"); got != "N:200000" {
		t.Errorf("shard 0 tk %s, want 200000 (500000 moved)", got)
	}
	s1 := f.get(t, bid("qp", 1))
	if render(s1[tk("tpd")]) != "N:500000" || render(s1["b_tpd_gc"]) != "N:2" || render(s1[tc("tpd")]) != "N:0" || render(s1["shard_count"]) != "N:2" {
		t.Errorf("shard 1 %v", s1)
	}

	// Shard 1 has spent 200 000 since; the pair doubles to 4.
	f.put(t, with(s1, tk("tpd"), 300_000))
	s0 := f.get(t, zero)
	four := with(s0, "shard_count", 4)
	f.put(t, four)
	wantStats(t, f.run(t, record(t, zero, s0, four)), Stats{Clones: 2, Raises: 1})
	// Slot 2: only shard 0 (gc 1) covers it: its 200 000, less than a share
	// of 250 000, all move. Slot 3: shard 1 (gc 2) is the narrower cover:
	// 250 000 of its 300 000.
	for shard, want := range map[int][2]string{0: {"N:0", "N:1"}, 1: {"N:50000", "N:2"}, 2: {"N:200000", "N:4"}, 3: {"N:250000", "N:4"}} {
		it := f.get(t, bid("qp", shard))
		if render(it[tk("tpd")]) != want[0] || render(it["b_tpd_gc"]) != want[1] || render(it["shard_count"]) != "N:4" {
			t.Errorf("shard %d: tk %s gc %s count %s, want %v and 4", shard, render(it[tk("tpd")]), render(it["b_tpd_gc"]), render(it["shard_count"]), want)
		}
	}
}

// A sibling from before grants (no gc) is raised with its grant frozen at
// what R7 reads; shard 0 with a reset pending leaves the clones to the
// clients (R13).
func TestQuotaPropagationFreezesAndDefers(t *testing.T) {
	at := time.Date(2027, 1, 15, 23, 0, 30, 0, time.UTC) // just past midnight in Paris
	f := scheduledFixture(t, at)
	yesterday := at.Add(-2 * time.Hour).UnixMilli()
	zero := bid("qd", 0)
	legacy := with(bucketItem(bid("qd", 1), yesterday, 2, wcu(1_000_000, 0)), tpd(600_000, 0, 0, 0)...)
	delete(legacy, "b_tpd_gc")
	f.put(t, legacy)
	s0 := with(bucketItem(zero, yesterday, 2, wcu(1_000_000, 0)), tpd(100_000, 0, 2, 0)...)
	four := with(s0, "shard_count", 4)
	f.put(t, four)
	st := f.run(t, record(t, zero, s0, four))
	if st.Raises != 1 || st.Clones != 0 || st.Deferred != 1 {
		t.Errorf("stats %+v, want the raise, no clone, the clones deferred", st)
	}
	// 600 000 at a count of 2 (a share of 500 000): granted at 1.
	if it := f.get(t, bid("qd", 1)); render(it["b_tpd_gc"]) != "N:1" || render(it["shard_count"]) != "N:4" {
		t.Errorf("raised legacy shard %v", it)
	}
	for _, sh := range []int{2, 3} {
		if it := f.get(t, bid("qd", sh)); len(it) != 0 {
			t.Errorf("shard %d cloned across a pending reset", sh)
		}
	}
}
