package schedule

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

func TestScheduleRetryAfter(t *testing.T) {
	perMin := bucket.Params{Capacity: 1_000_000, RefillAmount: 1_000_000, RefillPeriod: 60_000} // 1000 a minute
	noon := time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC)
	halvedFromNoon := Schedule{entry("* 12 * * *", 500, 0, 0, 0)}
	halvedBeforeNoon := Schedule{entry("* 0-11 * * *", 500, 0, 0, 0)}
	for _, tc := range []struct {
		name    string
		s       Schedule
		balance int64
		amount  int64
		now     time.Time
		want    bucket.Retry
	}{
		// Upstream's example: 1000 a minute, halved in 10 s, 500 needed
		// from empty. 10 s at 1000/min leave 166.666; the 333.334 left take
		// 40 s at 500/min: 50.001 s (30.001 s at the flat rate).
		{"halved in 10 s", halvedFromNoon, 0, 500, noon.Add(-10 * time.Second), bucket.Retry{Short: true, WaitMs: 50_001}},
		{"no schedule", nil, 0, 500, noon.Add(-10 * time.Second), bucket.Retry{Short: true, WaitMs: 30_001}},
		{"boundary after the deficit clears", halvedFromNoon, 0, 500, noon.Add(-40 * time.Second), bucket.Retry{Short: true, WaitMs: 30_001}},
		// Doubled in 10 s: 83.333 at 500/min, then 416.667 at 1000/min: 25 s.
		{"faster in 10 s", halvedBeforeNoon, 0, 500, noon.Add(-10 * time.Second), bucket.Retry{Short: true, WaitMs: 35_001}},
		// The deficit clears exactly at the boundary: 500 at 1000/min in 30 s.
		{"cleared on the boundary", halvedFromNoon, 0, 500, noon.Add(-30 * time.Second), bucket.Retry{Short: true, WaitMs: 30_001}},
		// 800 is above the halved ceiling of 500 until 13:00; then 1000/min
		// from the 500 the hour left: 300 more in 18 s.
		{"above the ceiling until the boundary", halvedFromNoon, 0, 800, noon.Add(10 * time.Minute), bucket.Retry{Short: true, WaitMs: 50*60_000 + 18_001}},
		// Above the ceiling in every window: never.
		{"never", Schedule{entry("* * * * *", 500, 0, 0, 0)}, 0, 800, noon, bucket.Retry{Short: true, Never: true}},
		{"covered", halvedFromNoon, 600_000, 500, noon, bucket.Retry{}},
	} {
		got := tc.s.RetryAfter(tc.balance, tc.amount, perMin, 1, tc.now, time.UTC)
		if got != tc.want {
			t.Errorf("%s: RetryAfter = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A rate halved every other minute: the walk stops after eight windows
	// with the last window's own estimate. 10 000 tokens from empty: four
	// halved minutes (2 000) and three full ones (3 000) by 12:07, then
	// 5 000 more at the full rate of 12:07's window: 5 min.
	big := bucket.Params{Capacity: 100_000_000, RefillAmount: 1_000_000, RefillPeriod: 60_000}
	flicker := Schedule{entry("*/2 * * * *", 500, 0, 0, 0)}
	if got := flicker.RetryAfter(0, 10_000, big, 1, noon, time.UTC); got != (bucket.Retry{Short: true, WaitMs: 7*60_000 + 300_001}) {
		t.Errorf("flicker: %+v, want 7 min + 300.001 s", got)
	}
}

func TestResetsRetryAfter(t *testing.T) {
	ny := zone(t, "America/New_York")
	daily := Resets{MustParseCron("0 0 * * *")}
	at9 := at(t, "2026-09-15T13:00:00Z") // 09:00 EDT
	// A quota waits for midnight New York time, however close the balance.
	if got := daily.RetryAfter(999_000, 1000, 100_000_000, at9, ny); !got.Short || got.WaitMs != 15*3_600_000 {
		t.Errorf("short by a token: %+v, want 15 h", got)
	}
	if got := daily.RetryAfter(0, 500, 100_000_000, at9, ny); got.WaitMs != 15*3_600_000 {
		t.Errorf("empty: %+v, want 15 h", got)
	}
	if got := daily.RetryAfter(1_000_000, 1, 100_000_000, at9, ny); got.Short {
		t.Errorf("covered: %+v", got)
	}
	if got := daily.RetryAfter(0, 200_000, 100_000_000, at9, ny); !got.Never {
		t.Errorf("above the ceiling: %+v, want never", got)
	}
	if got := (Resets{MustParseCron("0 0 30 2 *")}).RetryAfter(0, 1, 100_000_000, at9, ny); !got.Never {
		t.Errorf("no edge ahead: %+v, want never", got)
	}
}
