package maintenance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// TestRefillThenDebitsNeverOverCredit (docs/decisions.md P25): a proactive
// refill moves rf and stamps vu at the first instant a hard limit reaches
// its ceiling — the earliest over the item's limits. Fast-path debits after
// it and a client's materialising pass past that instant then admit no
// more than a token bucket of that capacity holds.
//
// rpm 100 and tpm 100 000 a minute; the client takes rpm 50, tpm 99 000
// (rpm 50 left, tpm 1 000). 20 s later the refill leaves rpm 83.33 (full
// 10 s later) and tpm 34 333 (full 39.4 s later): vu must be rpm's. 15 s
// after the refill rpm has been full for 5 s; a burst of 150 at that
// instant admits at most 100. Stamped with tpm's instant, the fast path
// would spend the 83 stored, and the next pass re-credit 25 of the 5 s
// wasted at the ceiling: 108.
const ocNS = "oVeRcReDiT0"

func TestRefillThenDebitsNeverOverCredit(t *testing.T) {
	f := newFixture(t)
	clk := clock.NewManual(time.UnixMilli(now))
	lim, err := limiter.New(f.tbl.DB, f.tbl.Name, ocNS, limiter.Options{Clock: clk.Now, Rand: func(int) int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ocNS, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 100_000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Acquire(ctx, "e1", "gpt-4", limiter.Consume{"rpm": 50, "tpm": 99_000}); err != nil {
		t.Fatal(err)
	}
	id := schema.BucketID{Namespace: ocNS, Entity: "e1", Resource: "gpt-4"}
	nw := f.get(t, id)
	old := with(nw, tc("rpm"), 0, tc("tpm"), 0) // the batch's demand: the whole consumption

	clk.Advance(20 * time.Second)
	st := New(f.tbl.DB, f.tbl.Name, Options{Clock: clk.Now}).Run(ctx, []Record{record(t, id, old, nw)})
	wantStats(t, st, Stats{Refills: 1})
	refilled := f.get(t, id)
	// rpm: 50 000 + 20 s × 100 000 / 60 s = 83 333, 16 667 short: 10 001 ms.
	if got, want := render(refilled["vu"]), render(nv(now+20_000+10_001)); got != want {
		t.Fatalf("vu %s, want %s (rpm's full-at instant)", got, want)
	}

	clk.Advance(15 * time.Second)
	admitted := 0
	for range 150 {
		_, err := lim.Acquire(ctx, "e1", "gpt-4", limiter.Consume{"rpm": 1})
		var rle *limiter.RateLimitExceeded
		switch {
		case err == nil:
			admitted++
		case !errors.As(err, &rle):
			t.Fatal(err)
		}
	}
	if admitted != 100 {
		t.Fatalf("the burst admitted %d, want 100: the bucket's capacity", admitted)
	}
}
