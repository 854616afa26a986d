package schedule

import (
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// Pass is what one materialising pass makes of one limit of a bucket shard
// at an instant (docs/design.md §14, §15): the parameters in force, the
// balance, and whether a calendar quota's reset edge was applied. Every
// writer that materialises a limit — the client's read-then-write path,
// the operator's reset and top-up, the aggregator's refill — reads it the
// same way.
type Pass struct {
	// InForce are the limit's parameters at now: the schedule's, with the
	// grant (gc) and top-up (tu) as they stand after the pass.
	InForce bucket.Params
	// Share is InForce per shard at the pass's shard count.
	Share bucket.Share
	// Balance is the balance at now, millitokens, before any consumption.
	Balance int64
	// Reset reports a calendar quota whose reset edge came after rf: the
	// pass restores its share (Balance = C // S), sizes its grant at the
	// shard count (gc = S) and wipes the period's top-up (tu removed).
	Reset bool
	// NextReset is a quota's next reset edge after now, epoch ms; 0 when
	// none comes within the scan bound.
	NextReset int64
	// Boundary is the next instant after now at which the schedules change
	// anything, a parameter boundary or a reset edge, epoch ms;
	// bucket.NeverFull when none comes within the scan bound.
	Boundary int64
}

// Materialise is one limit of a bucket shard at now: stored parameters p
// (undivided, with the shard's gc and tu), its parameter schedule s and
// reset schedule r read in loc, its stored balance tk and the item's rf,
// at a shard count of shards. A limit that drips refills lazily toward its
// ceiling at the parameters in force; a quota (a refill amount of 0) is
// clamped to its ceiling, C // gc + tu, or — when an edge of r falls after
// rf — reset to its share at shards: the pass applies the reset whatever
// happened between, once (docs/design.md §15).
//
// The whole interval since rf is credited at the parameters in force at
// now (docs/decisions.md P47).
func Materialise(p bucket.Params, s Schedule, r Resets, loc *time.Location, tk, rf, shards, now int64) Pass {
	at := time.UnixMilli(now)
	out := Pass{InForce: s.Effective(p, at, loc), Boundary: bucket.NeverFull}
	if t, ok := NextBoundary(s, r, at, loc); ok {
		out.Boundary = t.UnixMilli()
	}
	if p.IsQuota() && len(r) > 0 {
		if t, ok := r.NextEdge(at, loc); ok {
			out.NextReset = t.UnixMilli()
		}
		if prev, ok := r.PrevEdge(at, loc); ok && prev.UnixMilli() > rf {
			out.Reset = true
			out.InForce.GrantShards, out.InForce.TopUp = max(shards, 1), 0
			out.Share = bucket.Effective(out.InForce, shards)
			out.Balance = out.Share.Target
			return out
		}
	}
	out.Share = bucket.Effective(out.InForce, shards)
	out.Balance, _ = bucket.Materialise(tk, rf, now, out.Share.Ceiling, out.Share.Rate, out.Share.Period)
	return out
}

// CurrentPeriod reports whether a quota shard last materialised at rf is
// in the current period at now: no reset edge of r has come since rf (or
// none within reach). A shard that is not holds the previous period's
// grant, which can neither fund a new shard nor take a top-up.
func (r Resets) CurrentPeriod(rf int64, now time.Time, loc *time.Location) bool {
	prev, ok := r.PrevEdge(now, loc)
	return !ok || prev.UnixMilli() <= rf
}
