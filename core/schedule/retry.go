package schedule

import (
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// maxRetryWindows bounds the walk of RetryAfter: past this many schedule
// windows the last window's own estimate is the answer.
const maxRetryWindows = 8

// RetryAfter is the retry hint of a dripping limit whose parameters
// follow s (docs/design.md §14): how long a request of amount whole tokens
// waits for a balance (millitokens, materialised at now) to cover it, when
// the drip rate and the ceiling change at the schedule's boundaries.
// base is the limit's stored parameters and shards the shard count they
// divide by, as for any limit.
//
// It walks window by window: within a window the limit drips at the
// parameters in force there (bucket.DripRetryAfter); when the deficit does
// not clear before the window ends, the balance the window leaves (capped
// at its ceiling) starts the next. A request above the ceiling of one
// window waits for a window whose ceiling holds it. Past eight windows the
// last window's own estimate is the answer; with no boundary ahead, the
// window in force decides, Never included. Without a schedule it is
// bucket.DripRetryAfter.
func (s Schedule) RetryAfter(balance, amount int64, base bucket.Params, shards int64, now time.Time, loc *time.Location) bucket.Retry {
	t, b := now, balance
	for w := 0; ; w++ {
		sh := bucket.Effective(s.Effective(base, t, loc), shards)
		b = min(b, sh.Ceiling) // a window with a lower ceiling trims the balance
		r := bucket.DripRetryAfter(b, amount, sh.Ceiling, sh.Rate, sh.Period)
		elapsed := t.Sub(now).Milliseconds()
		if !r.Short {
			if w == 0 {
				return r
			}
			// The last window's drip ended exactly on the deficit: the
			// balance covers the request at its boundary.
			return bucket.Retry{Short: true, WaitMs: bucket.AddSat(elapsed, 1)}
		}
		end, more := s.NextChange(t, loc)
		if !more || w == maxRetryWindows-1 || (!r.Never && r.WaitMs <= end.Sub(t).Milliseconds()) {
			if r.Never {
				return r
			}
			return bucket.Retry{Short: true, WaitMs: bucket.AddSat(elapsed, r.WaitMs)}
		}
		b, _ = bucket.Materialise(b, t.UnixMilli(), end.UnixMilli(), sh.Ceiling, sh.Rate, sh.Period)
		t = end
	}
}

// RetryAfter is the retry hint of a calendar quota resetting at r's edges
// (docs/design.md §14): a request its balance (millitokens, at now) does
// not cover waits for the next reset edge, "at midnight", whatever the
// balance; Never when the request is above the quota's ceiling (ceil,
// millitokens: C // gc + tu) or r has no edge ahead.
func (r Resets) RetryAfter(balance, amount, ceil int64, now time.Time, loc *time.Location) bucket.Retry {
	if bucket.Covers(balance, amount) {
		return bucket.Retry{}
	}
	requested, ok := bucket.ToMilli(amount)
	edge, found := r.NextEdge(now, loc)
	if !ok || requested > ceil || !found {
		return bucket.Retry{Short: true, Never: true}
	}
	return bucket.QuotaRetryAfter(balance, amount, edge.UnixMilli(), now.UnixMilli())
}
