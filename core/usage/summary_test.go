package usage_test

import (
	"math"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// snap is a snapshot for the summary's worked examples: an entity, an hour
// of 2026-03-01 and its limits.
func snap(entity string, hour int, events int64, limits ...usage.LimitUsage) usage.Snapshot {
	return usage.Snapshot{Entity: entity, Resource: "gpt-4", Window: usage.Hourly,
		WindowStart: time.Date(2026, 3, 1, hour, 0, 0, 0, time.UTC), Limits: limits, TotalEvents: events}
}

func lim(name string, tokens int64) usage.LimitUsage {
	return usage.LimitUsage{Name: name, Tokens: tokens}
}

func od(name string, tokens, overdraws int64) usage.LimitUsage {
	return usage.LimitUsage{Name: name, Tokens: tokens, Overdraws: overdraws, HasOverdraws: true}
}

// TestSummarize works the summary's arithmetic by hand: totals per limit,
// the average over the windows that have a snapshot, first and last
// window, and the counts of windows, snapshots and entities.
func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		name  string
		snaps []usage.Snapshot
		want  string
	}{
		{"nothing", nil,
			"windows 0 snapshots 0 entities 0 0001-01-01T00:00:00Z..0001-01-01T00:00:00Z events 0"},
		// One window: the average is the total.
		{"one snapshot", []usage.Snapshot{snap("a", 5, 4, lim("rpm", 2), lim("tpm", 300))},
			"windows 1 snapshots 1 entities 1 2026-03-01T05:00:00Z..2026-03-01T05:00:00Z events 4 | rpm 2 od 0 in 1 avg 2.000 | tpm 300 od 0 in 1 avg 300.000"},
		// One entity, hours 1, 2 and 4 (hour 3 had no traffic, so it is
		// not a window of the average): tpm (100 + 50 + 30) / 3 = 60;
		// rpm appears in two of them, (3 + 4) / 3 = 2.333.
		{"an entity over three windows", []usage.Snapshot{
			snap("a", 1, 4, lim("rpm", 3), lim("tpm", 100)),
			snap("a", 2, 1, lim("tpm", 50)),
			snap("a", 4, 6, lim("rpm", 4), od("tpm", 30, 2)),
		}, "windows 3 snapshots 3 entities 1 2026-03-01T01:00:00Z..2026-03-01T04:00:00Z events 11 | rpm 7 od 0 in 2 avg 2.333 | tpm 180 od 2 in 3 avg 60.000"},
		// A resource: two entities share hour 1, so 3 snapshots in 2
		// windows; tpm (10 + 20 + 40) / 2 = 35; order does not matter.
		{"a resource, out of order", []usage.Snapshot{
			snap("b", 7, 2, od("tpm", 40, 1)),
			snap("a", 1, 2, lim("tpm", 10)),
			snap("b", 1, 2, od("tpm", 20, 3)),
		}, "windows 2 snapshots 3 entities 2 2026-03-01T01:00:00Z..2026-03-01T07:00:00Z events 6 | tpm 70 od 4 in 2 avg 35.000"},
		// Refunds: a window can net out negative.
		{"refunds", []usage.Snapshot{
			snap("a", 1, 1, lim("tpm", 5)),
			snap("a", 2, 1, lim("tpm", -8)),
		}, "windows 2 snapshots 2 entities 1 2026-03-01T01:00:00Z..2026-03-01T02:00:00Z events 2 | tpm -3 od 0 in 2 avg -1.500"},
	} {
		if got := renderSummary(usage.Summarize(c.snaps)); got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, got, c.want)
		}
	}
	// Sums saturate instead of wrapping.
	s := usage.Summarize([]usage.Snapshot{snap("a", 1, math.MaxInt64, lim("tpm", math.MaxInt64)), snap("a", 2, 1, lim("tpm", 1))})
	if s.Limits[0].Total != math.MaxInt64 || s.TotalEvents != math.MaxInt64 {
		t.Errorf("saturated sums: %+v", s)
	}
}
