package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// settleAttempts is how many acquires one round of BenchmarkEstimateThenSettle
// makes, settleStep the clock's move between two of them.
const (
	settleAttempts = 200
	settleStep     = 40 * time.Millisecond
)

// BenchmarkEstimateThenSettle is the README's loop on one key — acquire
// {rpm: 1, tpm: 2000} (an estimate), Adjust tpm down to the 1,500 used,
// Commit — with a 429 retried 40 ms later (an injected clock), for
// settleAttempts acquires per round on a fresh key with 60 rpm and 10,000
// tpm: six leases settle, and the rest of the round retries an exhausted
// key that refills by about 110 tpm between two retries. Each round of
// b.N reports, per acquire, the DynamoDB calls and the write units billed
// (a refused conditional write is billed one), and per 429 the calls and
// the share decided locally by the rejection cache (docs/design.md §10).
func BenchmarkEstimateThenSettle(b *testing.B) {
	tbl := ddbtest.NewTable(b)
	setup, err := limiter.New(tbl.DB, tbl.Name, benchNS, limiter.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchSetLimits(b, setup, "llm", limit.PerMinute("rpm", 60), limit.PerMinute("tpm", 10_000))
	ctx := context.Background()
	const estimate, used = 2000, 1500
	var m benchkit.Meter
	fw := &failedWrites{DB: benchkit.Metered(tbl.DB, &m)}
	var attempts, admitted, rejected, rejectCalls, locals int64
	for i := range b.N {
		clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
		lim, err := limiter.New(fw, tbl.Name, benchNS, limiter.Options{Clock: clk.Now})
		if err != nil {
			b.Fatal(err)
		}
		entity := "settle-" + strconv.Itoa(i)
		for range settleAttempts {
			before := m.Totals().Calls
			lease, err := lim.Acquire(ctx, entity, "llm", limiter.Consume{"rpm": 1, "tpm": estimate})
			attempts++
			var rle *limiter.RateLimitExceeded
			switch {
			case err == nil:
				admitted++
				if err := lease.Adjust("tpm", used-estimate); err != nil {
					b.Fatal(err)
				}
				if err := lease.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			case errors.As(err, &rle):
				rejected++
				rejectCalls += m.Totals().Calls - before
				if rle.Local {
					locals++
				}
			default:
				b.Fatal(err)
			}
			clk.Advance(settleStep)
		}
	}
	tot := m.Totals()
	wcu := tot.WriteUnits + float64(fw.n.Load())
	b.ReportMetric(float64(tot.Calls)/float64(attempts), "calls/acquire")
	b.ReportMetric(wcu/float64(attempts), "WCU/acquire")
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/round")
	if rejected > 0 {
		b.ReportMetric(float64(rejectCalls)/float64(rejected), "calls/429")
		b.ReportMetric(100*float64(locals)/float64(rejected), "local-%")
	}
}
