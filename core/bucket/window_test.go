package bucket

import (
	"math"
	"testing"
)

// A 5-hour window (docs/design.md §15), instants in ms from an arbitrary
// origin t0.
const (
	t0      = int64(1_000_000_000)
	fiveHrs = int64(5 * 3600 * 1000)
)

func TestWindowPhase(t *testing.T) {
	opened := func(ws int64) Window { return Window{Length: fiveHrs, Start: ws, HasStart: true} }
	marked := func(ws, wa int64) Window {
		w := opened(ws)
		w.Applied, w.HasApplied = wa, true
		return w
	}
	for _, c := range []struct {
		name    string
		w       Window
		rf, now int64
		want    WindowPhase
	}{
		{"rsa and no ws: never opened", Window{Length: fiveHrs}, t0, t0, WindowUnopened},
		{"opened here and applied (wa = ws)", marked(t0, t0), t0, t0 + 1, WindowCurrent},
		{"its last millisecond", marked(t0, t0), t0, t0 + fiveHrs - 1, WindowCurrent},
		{"at its end it has ended", marked(t0, t0), t0, t0 + fiveHrs, WindowEnded},
		{"fanned out to this shard: ws > wa", marked(t0+60_000, t0-fiveHrs), t0, t0 + 120_000, WindowPending},
		{"fanned out and over before applied", marked(t0, t0-fiveHrs), t0 - 1, t0 + fiveHrs, WindowDead},
		// An item written before wa: rf says what the balance reflects.
		{"no wa, ws after rf: pending", opened(t0 + 5), t0, t0 + 10, WindowPending},
		{"no wa, ws at rf: current", opened(t0), t0, t0 + 10, WindowCurrent},
		{"no wa, ws after rf, over: dead", opened(t0 + 5), t0, t0 + 5 + fiveHrs, WindowDead},
		// wa wins over rf, whichever way an older writer moved rf.
		{"wa = ws, rf moved back: no second roll", marked(t0+200, t0+200), t0, t0 + 300, WindowCurrent},
		{"wa behind ws, rf moved past: still pending", marked(t0+300, t0+200), t0 + 400, t0 + 500, WindowPending},
		{"an end past int64 saturates, never wraps", Window{Length: math.MaxInt64, Start: t0, HasStart: true, Applied: t0, HasApplied: true}, t0, math.MaxInt64 - 1, WindowCurrent},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.w.Phase(c.rf, c.now); got != c.want {
				t.Errorf("Phase = %v, want %v", got, c.want)
			}
		})
	}
}

func TestWindowEnd(t *testing.T) {
	if _, ok := (Window{Length: fiveHrs}).End(); ok {
		t.Error("a window never opened has an end")
	}
	if end, ok := (Window{Length: fiveHrs, Start: t0, HasStart: true}).End(); !ok || end != t0+fiveHrs {
		t.Errorf("End = %d %v, want %d", end, ok, t0+fiveHrs)
	}
	if end, _ := (Window{Length: fiveHrs, Start: math.MaxInt64 - 10, HasStart: true}).End(); end != math.MaxInt64 {
		t.Errorf("End = %d, want saturation", end)
	}
}

// RollTarget, worked (docs/design.md §15): share − max(0, tc − wtc).
func TestWindowRollTarget(t *testing.T) {
	snap := func(wtc int64) Window { return Window{Length: fiveHrs, Snapshot: wtc, HasSnapshot: true} }
	for _, c := range []struct {
		name            string
		w               Window
		share, consumed int64
		want            int64
	}{
		{"no snapshot: the share", Window{Length: fiveHrs}, 500_000, 9_999_999, 500_000},
		{"60 tokens since the snapshot", snap(200_000), 500_000, 260_000, 440_000},
		{"nothing since", snap(200_000), 500_000, 200_000, 500_000},
		{"a release since (tc below wtc): the share, never more", snap(200_000), 500_000, 100_000, 500_000},
		{"more than the share since: debt", snap(1_000_000), 500_000, 1_700_000, -200_000},
		// tc − wtc saturates at MaxInt64; share − MaxInt64 is then exact.
		{"extremes saturate", snap(math.MinInt64), 500_000, math.MaxInt64, 500_000 - math.MaxInt64},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.w.RollTarget(c.share, c.consumed)
			if got != c.want {
				t.Errorf("RollTarget = %d, want %d", got, c.want)
			}
			if got > c.share {
				t.Errorf("RollTarget %d above the share %d", got, c.share)
			}
		})
	}
}

// rf = max(now, stored rf, ws): never backwards, never before the window
// the balance reflects.
func TestWindowStampRF(t *testing.T) {
	w := Window{Length: fiveHrs, Start: t0 + 2_000, HasStart: true}
	for _, c := range []struct {
		name        string
		w           Window
		stored, now int64
		want        int64
	}{
		{"now wins", w, t0, t0 + 5_000, t0 + 5_000},
		{"a window started ahead of this clock", w, t0, t0 + 1_000, t0 + 2_000},
		{"the stored rf ahead of both", w, t0 + 9_000, t0 + 1_000, t0 + 9_000},
		{"no window opened", Window{Length: fiveHrs, Start: t0 + 99_000}, t0, t0 + 1_000, t0 + 1_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := WindowStampRF(c.w, c.stored, c.now); got != c.want {
				t.Errorf("WindowStampRF = %d, want %d", got, c.want)
			}
		})
	}
}

func TestWindowPhaseString(t *testing.T) {
	for p, want := range map[WindowPhase]string{WindowUnopened: "unopened", WindowCurrent: "current",
		WindowPending: "pending", WindowEnded: "ended", WindowDead: "dead", WindowPhase(99): "unknown"} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
	}
}

// Window.Materialise, worked (docs/design.md §15): a 5-hour window of
// 1,000 tokens at 2 shards, share 500,000.
func TestWindowMaterialise(t *testing.T) {
	p := Params{Capacity: 1_000_000, RefillPeriod: 1000, GrantShards: 2, TopUp: 50_000}
	now := t0 + 3_600_000
	marked := func(ws, wa int64) Window {
		return Window{Length: fiveHrs, Start: ws, HasStart: true, Applied: wa, HasApplied: true}
	}
	pending := marked(now-600_000, now-7*3_600_000)
	pending.Snapshot, pending.HasSnapshot = 200_000, true
	for _, c := range []struct {
		name       string
		w          Window
		tk, tc     int64
		open, roll bool
		start      int64
		balance    int64
		ceiling    int64
	}{
		{"current: clamped to C // gc + tu", marked(t0, t0), 700_000, 0, false, false, t0, 550_000, 550_000},
		{"current: below the ceiling, as stored", marked(t0, t0), 100_000, 0, false, false, t0, 100_000, 550_000},
		{"current: debt stays", marked(t0, t0), -30_000, 0, false, false, t0, -30_000, 550_000},
		{"pending: rolled, tu gone, gc = S", pending, -50_000, 260_000, false, true, now - 600_000, 440_000, 500_000},
		{"ended: opens at now with the share", marked(t0-fiveHrs, t0-fiveHrs), 0, 0, true, false, now, 500_000, 500_000},
		{"dead: opens at now, the dead window forgotten", marked(now-fiveHrs-1, t0-2*fiveHrs), 0, 0, true, false, now, 500_000, 500_000},
		{"never opened: opens at now", Window{Length: fiveHrs}, 123, 0, true, false, now, 500_000, 500_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			wp := c.w.Materialise(p, c.tk, c.tc, t0, 2, now)
			if wp.Open != c.open || wp.Roll != c.roll || wp.Start != c.start || wp.End != c.start+fiveHrs ||
				wp.Balance != c.balance || wp.Share.Ceiling != c.ceiling || wp.Share.Target != 500_000 {
				t.Errorf("got %+v, want open %v roll %v start %d balance %d ceiling %d", wp, c.open, c.roll, c.start, c.balance, c.ceiling)
			}
		})
	}
}

// A session quota's retry hint is the window's end; a request above the
// share never passes.
func TestWindowRetryAfter(t *testing.T) {
	wp := WindowPass{End: t0 + fiveHrs, Share: Share{Target: 500_000, Ceiling: 500_000}}
	if r := wp.RetryAfter(500_000, 500, t0); r.Short {
		t.Errorf("covered: %+v", r)
	}
	if r := wp.RetryAfter(10_000, 11, t0+1_000); !r.Short || r.Never || r.WaitMs != fiveHrs-1_000 {
		t.Errorf("short in the window: %+v, want a wait of %d", r, fiveHrs-1_000)
	}
	if r := wp.RetryAfter(10_000, 501, t0); !r.Short || !r.Never {
		t.Errorf("above the share: %+v, want never", r)
	}
	if r := wp.RetryAfter(-1_000, 1, t0+fiveHrs+5); !r.Short || r.WaitMs != 0 {
		t.Errorf("past the end: %+v, want no wait", r)
	}
}
