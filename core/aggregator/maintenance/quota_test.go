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
