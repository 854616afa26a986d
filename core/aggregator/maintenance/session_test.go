package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The session quota of these tests, in the stored form a Python client of
// 0.15 or later writes: "s5h", 1,000 tokens per 5-hour window opened on
// first use (rsa 18,000 s), no drip (ra 0). Every instant is relative to
// sessionNow, a fixed date, never the test's own clock.
var sessionNow = time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)

const (
	sessionLen   = 5 * time.Hour
	sessionLenS  = int64(5 * 3600)
	sessionLimit = "s5h"
)

// s5h is the session quota's attributes: balance tkv, count tcv, grant gc,
// and extra ones (ws, wa, wtc, tu …) as name, value pairs.
func s5h(tkv, tcv, gc int64, extra ...any) []any {
	kv := []any{tk(sessionLimit), tkv, "b_s5h_cp", 1_000_000, "b_s5h_ra", 0, "b_s5h_rp", 1000,
		tc(sessionLimit), tcv, "b_s5h_rsa", sessionLenS, "b_s5h_gc", gc}
	return append(kv, extra...)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// A window a client opened 10 minutes ago and fanned out to this shard
// (ws after wa, wtc the shard's tc at the fan-out, vu 0) is rolled
// (docs/design.md §15): the share at count 2, 500,000, less the 60 tokens
// consumed here since the snapshot, is 440,000; from a debt of 50,000 that
// is an ADD of 490,000. The grant is sized at 2, the top-up and wtc go, wa
// takes ws, rf is now, vu the window's end.
func TestSessionRollApplied(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess1", 0)
	ws := sessionNow.Add(-10 * time.Minute)
	old := with(bucketItem(id, ms(sessionNow.Add(-2*time.Hour)), 2, wcu(1_000_000, 0)),
		s5h(-50_000, 250_000, 1, "b_s5h_ws", ms(ws), "b_s5h_wa", ms(sessionNow.Add(-6*time.Hour)),
			"b_s5h_wtc", 200_000, "b_s5h_tu", 30_000, "vu", 0)...)
	nw := with(old, tc(sessionLimit), 260_000)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, old, nw)), Stats{Refills: 1})
	sameItem(t, "bucket", f.get(t, id), with(nw, "rf", ms(sessionNow), tk(sessionLimit), 440_000,
		"b_s5h_gc", 2, "b_s5h_tu", nil, "b_s5h_wtc", nil, "b_s5h_wa", ms(ws), "vu", ms(ws.Add(sessionLen))))
}

// Without wtc (a window the shard opened for itself, or a writer that
// took no snapshot) the roll restores the whole share.
func TestSessionRollWithoutSnapshot(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess2", 0)
	ws := sessionNow.Add(-time.Minute)
	nw := with(bucketItem(id, ms(sessionNow.Add(-3*time.Hour)), 4, wcu(1_000_000, 0)),
		s5h(10_000, 900_000, 4, "b_s5h_ws", ms(ws))...) // no wa: ws > rf is pending
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, nw, nw)), Stats{Refills: 1})
	sameItem(t, "bucket", f.get(t, id), with(nw, "rf", ms(sessionNow), tk(sessionLimit), 250_000,
		"b_s5h_gc", 4, "b_s5h_wa", ms(ws), "vu", ms(ws.Add(sessionLen))))
}

// Consumption since the snapshot above the share leaves the shard in debt
// for the new window, never above the share: 500,000 − 700,000.
func TestSessionRollTargetCanBeNegative(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess3", 0)
	ws := sessionNow.Add(-time.Minute)
	nw := with(bucketItem(id, ms(sessionNow.Add(-time.Hour)), 2, wcu(1_000_000, 0)),
		s5h(0, 1_700_000, 2, "b_s5h_ws", ms(ws), "b_s5h_wa", ms(sessionNow.Add(-7*time.Hour)), "b_s5h_wtc", 1_000_000)...)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, nw, nw)), Stats{Refills: 1})
	if got := render(f.get(t, id)[tk(sessionLimit)]); got != "N:-200000" {
		t.Errorf("rolled to %s, want -200000", got)
	}
}

// A window that the balance does not reflect and that has already ended
// (opened 6 hours ago, 5 hours long) makes the whole item wait for a
// client, which opens a new window: not even the dripping limit beside it,
// in debt with demand, is refilled.
func TestSessionEndedUnappliedWindowSkipsTheItem(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess4", 0)
	old := with(bucketItem(id, ms(sessionNow.Add(-8*time.Hour)), 1, rpm(-20_000, 0), wcu(1_000_000, 0)),
		s5h(0, 400_000, 1, "b_s5h_ws", ms(sessionNow.Add(-6*time.Hour)), "b_s5h_wa", ms(sessionNow.Add(-12*time.Hour)))...)
	nw := with(old, tc("rpm"), 30_000)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, old, nw)), Stats{})
	sameItem(t, "bucket", f.get(t, id), nw)
}

// Within a live window the balance reflects, a session quota only clamps
// to C // gc + tu, and vu is bounded by the window's end; a calm bucket
// below its ceiling gets no write (a quota never drips).
func TestSessionLiveWindowOnlyClamps(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	ws := sessionNow.Add(-time.Hour)
	above := with(bucketItem(bid("sess5", 0), ms(sessionNow.Add(-30*time.Minute)), 2, wcu(1_000_000, 0)),
		s5h(700_000, 0, 2, "b_s5h_ws", ms(ws), "b_s5h_wa", ms(ws), "b_s5h_tu", 50_000)...)
	f.put(t, above)
	wantStats(t, f.run(t, record(t, bid("sess5", 0), above, above)), Stats{Refills: 1})
	// 1 000 000 // 2 + 50 000 = 550 000; no grant, no wa write.
	sameItem(t, "bucket", f.get(t, bid("sess5", 0)), with(above, "rf", ms(sessionNow), tk(sessionLimit), 550_000,
		"vu", ms(ws.Add(sessionLen))))

	calm := with(bucketItem(bid("sess6", 0), ms(sessionNow.Add(-30*time.Minute)), 2, wcu(1_000_000, 0)),
		s5h(100_000, 0, 2, "b_s5h_ws", ms(ws), "b_s5h_wa", ms(ws))...)
	f.put(t, calm)
	wantStats(t, f.run(t, record(t, bid("sess6", 0), calm, calm)), Stats{})
}

// A window that ended after it was applied waits for a client to open the
// next one: the dripping limit beside it is refilled, the session balance
// is left alone (no roll: there is no new window), and vu is left as
// stored, neither stamped nor removed, so the next debit still goes to the
// pass that opens a window. An item whose window was never opened (rsa,
// no ws) is treated alike.
func TestSessionAwaitingAClientKeepsVU(t *testing.T) {
	for _, tc0 := range []struct {
		name   string
		window []any
	}{
		{"ended", []any{"b_s5h_ws", ms(sessionNow.Add(-6 * time.Hour)), "b_s5h_wa", ms(sessionNow.Add(-6 * time.Hour))}},
		{"never opened", nil},
	} {
		t.Run(tc0.name, func(t *testing.T) {
			f := scheduledFixture(t, sessionNow)
			id := bid("sess7"+tc0.name[:1], 0)
			storedVU := ms(sessionNow.Add(-time.Hour))
			old := with(bucketItem(id, ms(sessionNow.Add(-30*time.Second)), 1, rpm(-20_000, 0), wcu(1_000_000, 0)),
				s5h(300_000, 700_000, 1, tc0.window...)...)
			old = with(old, "vu", storedVU)
			nw := with(old, tc("rpm"), 30_000)
			f.put(t, nw)

			wantStats(t, f.run(t, record(t, id, old, nw)), Stats{Refills: 1})
			// rpm: −20 000 + 30 s × 100 000 / 60 s = 30 000.
			sameItem(t, "bucket", f.get(t, id), with(nw, "rf", ms(sessionNow), tk("rpm"), 30_000))
		})
	}
}

// A client's clock a little ahead anchored the window after the
// aggregator's now: rf is stamped at the window start, never before it
// (rf never moves backwards past a window a client applied).
func TestSessionRFNeverBeforeTheWindowStart(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess8", 0)
	ws := sessionNow.Add(2 * time.Second)
	nw := with(bucketItem(id, ms(sessionNow.Add(-time.Hour)), 1, wcu(1_000_000, 0)),
		s5h(0, 0, 1, "b_s5h_ws", ms(ws))...)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, nw, nw)), Stats{Refills: 1})
	got := f.get(t, id)
	if render(got["rf"]) != render(nv(ms(ws))) || render(got[tk(sessionLimit)]) != "N:1000000" {
		t.Errorf("rf %s, tk %s; want rf at the window start %d and the full share", render(got["rf"]), render(got[tk(sessionLimit)]), ms(ws))
	}
}

// The roll pins the window start it read: a client that fanned out a
// newer window after the record (same rf, vu 0 again) fails the write,
// and the item is left for the next record to roll.
func TestSessionRollPinsTheWindowStart(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	id := bid("sess9", 0)
	ws := sessionNow.Add(-20 * time.Minute)
	image := with(bucketItem(id, ms(sessionNow.Add(-2*time.Hour)), 1, wcu(1_000_000, 0)),
		s5h(0, 100_000, 1, "b_s5h_ws", ms(ws), "b_s5h_wa", ms(sessionNow.Add(-9*time.Hour)), "vu", 0)...)
	stored := with(image, "b_s5h_ws", ms(sessionNow.Add(-time.Minute)), "b_s5h_wtc", 100_000)
	f.put(t, stored)

	f.run(t, record(t, id, image, image))
	sameItem(t, "bucket", f.get(t, id), stored)
}

// A roll on a shard whose count lags shard 0's is left to the client,
// which sizes the grant at the pair's count, as for a calendar reset.
func TestSessionRollOnALaggingShardIsDeferred(t *testing.T) {
	f := scheduledFixture(t, sessionNow)
	ws := sessionNow.Add(-time.Minute)
	zero := with(bucketItem(bid("sess10", 0), ms(sessionNow.Add(-time.Hour)), 4, wcu(1_000_000, 0)), s5h(0, 0, 4)...)
	one := with(bucketItem(bid("sess10", 1), ms(sessionNow.Add(-time.Hour)), 2, wcu(1_000_000, 0)),
		s5h(0, 0, 2, "b_s5h_ws", ms(ws))...)
	f.put(t, zero)
	f.put(t, one)
	wantStats(t, f.run(t, record(t, bid("sess10", 1), one, one)), Stats{Deferred: 1})
	sameItem(t, "lagging shard", f.get(t, bid("sess10", 1)), one)
}

// The aggregator never raises or clones a pair with a session quota: a
// shard created by a client joins shard 0's live window from a strongly
// consistent read (docs/design.md §15), a clone would not.
func TestSessionPairIsNeverPropagated(t *testing.T) {
	rec := &recDB{}
	m := New(rec, "t", Options{Clock: clockAt(ms(sessionNow))})
	ws := ms(sessionNow.Add(-time.Hour))
	old := with(bucketItem(bid("sess11", 0), ms(sessionNow), 2, wcu(1_000_000, 0)), s5h(100_000, 0, 2, "b_s5h_ws", ws, "b_s5h_wa", ws)...)
	nw := with(old, "shard_count", 4)
	st := m.Run(context.Background(), []Record{record(t, bid("sess11", 0), old, nw)})
	wantStats(t, st, Stats{})
	if rec.writes() != 0 || rec.gets != 0 {
		t.Errorf("%d writes, %d reads: want no propagation", rec.writes(), rec.gets)
	}
}

// Window attributes the aggregator cannot read as a session quota make
// the bucket abstain: a window on a dripping limit, beside a calendar
// reset, with a length that is not positive, or ws without rsa.
func TestSessionShapesOutsideAbstain(t *testing.T) {
	ws := ms(sessionNow.Add(-time.Minute))
	for name, kv := range map[string][]any{
		"window on a drip":        {"b_s5h_ra", 100},
		"window beside a rsched":  {"b_s5h_rsched", "m0h0"},
		"zero length":             {"b_s5h_rsa", 0},
		"start without a length":  {"b_s5h_rsa", nil},
		"window on wcu":           {"b_wcu_ws", ws, "b_wcu_rsa", 60},
		"window on a partial one": {"b_tpd_ws", ws, "b_tpd_rsa", 60},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recDB{}
			m := New(rec, "t", Options{Clock: clockAt(ms(sessionNow))})
			it := with(with(bucketItem(bid("sess12", 0), ms(sessionNow.Add(-time.Hour)), 1, wcu(1_000_000, 0)),
				s5h(0, 0, 1, "b_s5h_ws", ws)...), kv...)
			st := m.Run(context.Background(), []Record{record(t, bid("sess12", 0), it, it)})
			wantStats(t, st, Stats{Abstained: 1})
			if rec.writes() != 0 {
				t.Errorf("%d writes", rec.writes())
			}
		})
	}
}

// bucketitem.Clone zeroes a session window's wtc with tc, keeps the window
// itself verbatim (docs/design.md §15).
func TestCloneZeroesWindowSnapshot(t *testing.T) {
	ws := ms(sessionNow.Add(-time.Minute))
	src := with(bucketItem(bid("sess13", 0), ms(sessionNow), 2, wcu(1_000_000, 0)),
		s5h(100_000, 400_000, 2, "b_s5h_ws", ws, "b_s5h_wa", ws, "b_s5h_wtc", 300_000)...)
	img, err := bucketitem.Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	got := bucketitem.Clone(src, &img, bid("sess13", 3), 4)
	for attr, want := range map[string]string{
		"b_s5h_wtc": "N:0", tc(sessionLimit): "N:0", "b_s5h_ws": render(nv(ws)), "b_s5h_wa": render(nv(ws)), "b_s5h_rsa": "N:18000",
		schema.AttrShardCount: "N:4",
	} {
		if render(got[attr]) != want {
			t.Errorf("clone %s = %s, want %s", attr, render(got[attr]), want)
		}
	}
}
