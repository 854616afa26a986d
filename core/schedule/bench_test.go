package schedule

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// BenchmarkEdges: what a writer pays to evaluate a schedule, from a fixed
// instant (2026-09-15T12:00Z, a Tuesday) in New York.
func BenchmarkEdges(b *testing.B) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC)
	monthly := Resets{MustParseCron("0 0 1 * *")}
	business := Schedule{{Cron: MustParseCron("* 9-17 * * MON-FRI"), ScalePerMille: 500}}
	leap := MustParseCron("0 0 29 2 *")
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"prev-edge-monthly", func() { monthly.PrevEdge(now, ny) }},
		{"next-edge-monthly", func() { monthly.NextEdge(now, ny) }},
		{"next-boundary-business-and-monthly", func() { NextBoundary(business, monthly, now, ny) }},
		{"effective-business", func() {
			business.Effective(bucket.Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}, now, ny)
		}},
		{"prev-edge-leap-day", func() { leap.PrevEdge(now, ny) }},
		{"decode", func() {
			if _, err := Decode("h9-17w1-5s500;h0-6c2000"); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.f()
			}
		})
	}
}
