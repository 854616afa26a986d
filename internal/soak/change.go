package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// resChanging's limit is changed by an operator at random instants while
// the load runs (docs/design.md §8): rps, its capacity equal to its rate
// per second, each change drawn from changingRates. Its pairs are the
// plain entities', created at setup, before the first change.
const resChanging = "changing"

var changingRates = []int64{1, 2, 4, 8}

// changingLimits is the limit of resChanging at n a second.
func changingLimits(n int64) []limit.Limit {
	return []limit.Limit{limit.Custom("rps", n, n, time.Second)}
}

// limitChange is one operator's change of resChanging's rate, from its
// call to its return on the run's clock.
type limitChange struct {
	called, returned time.Time
	from, to         int64
}

// noteChanging books an admission (credit false) or a rollback's credit
// on a pair of resChanging, the span of its call, for checkChanging.
func (w *world) noteChanging(p pair, s span, credit bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if credit {
		w.credits[p] = append(w.credits[p], s)
	} else {
		w.admits[p] = append(w.admits[p], s)
	}
}

// checkChanging is "no admission above the limit in force" on resChanging,
// window by window: between a change's return and the next one's call
// every bucket of it holds the rate r then in force (the change brought it
// in line before returning), at most r tokens at the window's start (its
// capacity), refilled at r a second. So the acquires that both started and
// were answered inside the window admit at most r + r × its length in
// seconds, plus one token per rollback whose credit may have landed in it.
func (w *world) checkChanging() (diff int64, detail []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	type window struct {
		from, to time.Time
		r        int64
	}
	var ws []window
	at, cur := w.t0, w.rateAt0
	for _, c := range w.changes {
		ws = append(ws, window{at, c.called, cur})
		at, cur = c.returned, c.to
	}
	ws = append(ws, window{at, w.end, cur})
	for _, e := range plain {
		p := pair{e, resChanging}
		for _, win := range ws {
			if !win.to.After(win.from) {
				continue
			}
			var admitted, credits int64
			for _, a := range w.admits[p] {
				if !a.from.Before(win.from) && !a.to.After(win.to) {
					admitted++
				}
			}
			for _, c := range w.credits[p] {
				if c.to.After(win.from) && c.from.Before(win.to) {
					credits++
				}
			}
			bound := win.r + bucket.FloorDiv(win.r*win.to.Sub(win.from).Milliseconds(), 1000) + credits
			if admitted > bound {
				diff += admitted - bound
				detail = append(detail, fmt.Sprintf("%s: %d admitted at %d a second over %s from %s, bound %d",
					e, admitted, win.r, win.to.Sub(win.from), win.from.Format("15:04:05.000"), bound))
			}
		}
	}
	return diff, detail
}

// setupChanging creates the changing resource's pairs' buckets with a
// zero acquire each, so that the load creates none while a change runs.
func (w *world) setupChanging(ctx context.Context, ctl *control.Controls, lim *limiter.Limiter) error {
	if _, err := ctl.SetResourceLimits(ctx, w.ns, resChanging, changingLimits(rate), "soak"); err != nil {
		return err
	}
	w.rateAt0 = rate
	for _, e := range plain {
		if _, err := lim.Acquire(ctx, e, resChanging, limiter.Consume{"rps": 0}); err != nil {
			return err
		}
	}
	return nil
}

// runLimitChanges changes resChanging's rate every 1 to 3 s of the run
// until the deadline, through an operator of its own (another process, no
// fault in its way: a change that returns has reached every bucket).
func (w *world) runLimitChanges(ctx context.Context, deadline time.Time) error {
	ctl := control.New(w.db, w.table, control.Options{Clock: w.now})
	cur := int64(rate)
	for {
		wait := time.Duration(1000+w.intn(2000)) * time.Millisecond
		if time.Now().Add(wait).After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		next := cur
		for next == cur {
			next = changingRates[w.intn(len(changingRates))]
		}
		c := limitChange{called: w.now(), from: cur, to: next}
		p, err := ctl.SetResourceLimits(ctx, w.ns, resChanging, changingLimits(next), "soak")
		if err != nil {
			return fmt.Errorf("limit change %d → %d a second: %w", cur, next, err)
		}
		c.returned = w.now()
		w.mu.Lock()
		w.changes = append(w.changes, c)
		w.mu.Unlock()
		fmt.Fprintf(w.log, "soak: rps of %s %d → %d a second, %d buckets brought in line, on the run's clock from %s to %s\n",
			resChanging, cur, next, p.Stamped, c.called.Format("15:04:05.000"), c.returned.Format("15:04:05.000"))
		cur = next
	}
}

// changingBound is what a pair of resChanging may admit from from to to
// (the run's clock): its capacity at the start, plus the refill at the
// rate in force at every instant — the old rate up to a change's call, the
// greater of the two while it runs (each bucket is brought in line at
// some instant in between), the new one from its return — rounded down.
// A lowered capacity only clamps and a raised one grants nothing at once
// (docs/design.md §8), so nothing else adds to it.
func (w *world) changingBound(from, to time.Time) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var milli int64 // tokens × ms
	at, cur := from, w.rateAt0
	for _, c := range w.changes {
		milli += cur * c.called.Sub(at).Milliseconds()
		milli += max(c.from, c.to) * c.returned.Sub(c.called).Milliseconds()
		at, cur = c.returned, c.to
	}
	milli += cur * max(0, to.Sub(at).Milliseconds())
	return w.rateAt0 + bucket.FloorDiv(milli, 1000)
}
