package schedule_test

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// Worked examples of one materialising pass on a daily quota of 1,000
// tokens resetting at midnight in New York, on a shard of 4.
func TestMaterialiseQuota(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	ms := func(s string) int64 {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, ny)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	quota := bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000, GrantShards: 2, TopUp: 50_000}
	midnight := ms("2026-03-11 00:00")
	for _, tc := range []struct {
		name        string
		tk, rf, now int64
		want        schedule.Pass
	}{
		{
			name: "same day: clamped to C // gc + tu, no drip",
			tk:   700_000, rf: ms("2026-03-10 09:00"), now: ms("2026-03-10 18:00"),
			want: schedule.Pass{InForce: quota, Share: bucket.Share{Ceiling: 550_000, Target: 250_000, Period: 1000},
				Balance: 550_000, NextReset: midnight, Boundary: midnight},
		},
		{
			name: "the edge since rf resets to the share at 4, gc 4, tu gone",
			tk:   -20_000, rf: ms("2026-03-10 18:00"), now: ms("2026-03-11 00:00") + 1,
			want: schedule.Pass{InForce: bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000, GrantShards: 4},
				Share: bucket.Share{Ceiling: 250_000, Target: 250_000, Period: 1000}, Balance: 250_000, Reset: true,
				NextReset: ms("2026-03-12 00:00"), Boundary: ms("2026-03-12 00:00")},
		},
		{
			name: "idle across two edges: one reset",
			tk:   0, rf: ms("2026-03-09 12:00"), now: ms("2026-03-11 08:00"),
			want: schedule.Pass{InForce: bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000, GrantShards: 4},
				Share: bucket.Share{Ceiling: 250_000, Target: 250_000, Period: 1000}, Balance: 250_000, Reset: true,
				NextReset: ms("2026-03-12 00:00"), Boundary: ms("2026-03-12 00:00")},
		},
		{
			name: "rf at the edge itself: already this period",
			tk:   10_000, rf: midnight, now: midnight + 5,
			want: schedule.Pass{InForce: quota, Share: bucket.Share{Ceiling: 550_000, Target: 250_000, Period: 1000},
				Balance: 10_000, NextReset: ms("2026-03-12 00:00"), Boundary: ms("2026-03-12 00:00")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := schedule.Materialise(quota, nil, daily, ny, tc.tk, tc.rf, 4, tc.now)
			if got != tc.want {
				t.Fatalf("Materialise =\n %+v, want\n %+v", got, tc.want)
			}
			cur := daily.CurrentPeriod(tc.rf, time.UnixMilli(tc.now), ny)
			if cur == got.Reset {
				t.Errorf("CurrentPeriod = %v beside Reset = %v", cur, got.Reset)
			}
		})
	}
}

// A dripping limit under a parameter schedule refills at the parameters in
// force; a quota whose reset schedule never matches resets nothing.
func TestMaterialiseDripAndNever(t *testing.T) {
	half := schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * *"), ScalePerMille: 500}}
	p := bucket.Params{Capacity: 60_000, RefillAmount: 60_000, RefillPeriod: 60_000}
	at := time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC).UnixMilli()
	got := schedule.Materialise(p, half, nil, time.UTC, 0, at-10_000, 1, at)
	// 10 s at 30 a minute: 5 tokens, under the halved ceiling of 30.
	if got.Balance != 5_000 || got.Share.Ceiling != 30_000 || got.Reset || got.NextReset != 0 ||
		got.Boundary != time.Date(2026, 3, 10, 18, 0, 0, 0, time.UTC).UnixMilli() {
		t.Fatalf("drip = %+v", got)
	}
	never := schedule.Resets{schedule.MustParseCron("0 0 30 2 *")}
	q := bucket.Params{Capacity: 5_000, RefillPeriod: 1000}
	got = schedule.Materialise(q, nil, never, time.UTC, 1_000, 0, 1, at)
	if got.Reset || got.Balance != 1_000 || got.NextReset != 0 || got.Boundary != bucket.NeverFull {
		t.Fatalf("never-matching reset = %+v", got)
	}
	if !never.CurrentPeriod(0, time.UnixMilli(at), time.UTC) {
		t.Error("a quota with no edge in reach is not in its current period")
	}
}
