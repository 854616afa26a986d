package aggregator

import (
	"time"
)

// DefaultWindows are the snapshot windows when none are configured: hourly
// and daily.
func DefaultWindows() []Window { return []Window{Hourly, Daily} }

// WindowKey returns the start of the window w containing t, as upstream's
// string: the UTC start of its hour (`YYYY-MM-DDTHH:00:00Z`), day
// (`YYYY-MM-DDT00:00:00Z`) or month (`YYYY-MM-01T00:00:00Z`). It is the
// snapshot's window_start (docs/design.md, "Usage snapshots"). An unknown
// window gives "".
func WindowKey(w Window, t time.Time) string {
	start, ok := windowStart(w, t)
	if !ok {
		return ""
	}
	return start.Format("2006-01-02T15:04:05Z")
}

// windowStart returns the UTC start of the window w containing t; ok is
// false for an unknown window.
func windowStart(w Window, t time.Time) (start time.Time, ok bool) {
	t = t.UTC()
	y, m, d := t.Date()
	switch w {
	case Hourly:
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC), true
	case Daily:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true
	case Monthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), true
	}
	return time.Time{}, false
}

// SnapshotKey returns the window key under which the snapshot of window w
// containing t is stored, given the configured windows: WindowKey, except
// where a coarser configured window starts at the same instant (the hour
// starting at midnight and its day; the 1st and its month). There the
// coarser window keeps the plain key and w's key gets the suffix `#{w}`, so
// every window has its own item with its own counts (docs/decisions.md P22):
//
//	hourly, 2026-12-01 00:10, windows hourly,daily,monthly: 2026-12-01T00:00:00Z#hourly
//	daily,  2026-12-01 00:10, windows hourly,daily,monthly: 2026-12-01T00:00:00Z#daily
//	daily,  2026-12-01 00:10, windows hourly,daily:         2026-12-01T00:00:00Z
//
// An unknown window gives "".
func SnapshotKey(w Window, t time.Time, windows []Window) string {
	wk := WindowKey(w, t)
	if wk == "" {
		return ""
	}
	for _, c := range windows {
		if coarser(c, w) && WindowKey(c, t) == wk {
			return wk + "#" + string(w)
		}
	}
	return wk
}

// coarser reports whether window a spans more time than b.
func coarser(a, b Window) bool { return windowRank(a) > windowRank(b) }

func windowRank(w Window) int {
	switch w {
	case Hourly:
		return 1
	case Daily:
		return 2
	case Monthly:
		return 3
	}
	return 0
}
