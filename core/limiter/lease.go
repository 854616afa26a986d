package limiter

import (
	"context"
	"sync"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// leaseEntry is one declared limit of a lease.
type leaseEntry struct {
	name    string
	initial int64 // tokens consumed at admission
	delta   int64 // tokens adjusted since (positive = more consumed)
	params  bucket.Params
	share   bucket.Share
	balance int64 // millitokens after admission and the deltas since
	soft    bool
}

// Lease is admitted capacity on one bucket shard (SPEC §6.9). The
// admission is already written; Consume, Adjust and Release change it in
// memory, Commit writes those changes, Rollback returns the admission. A
// lease is safe for concurrent use; after Commit or Rollback every method
// fails with ErrLeaseExpired.
type Lease struct {
	lim              *Limiter
	entity, resource string
	shard            int
	bypassed         bool
	noop             bool // admitted by on_unavailable=allow: writes nothing

	mu      sync.Mutex
	entries []leaseEntry
	done    bool
}

// Entity and Resource name the pair; Shard is the bucket shard written.
func (l *Lease) Entity() string   { return l.entity }
func (l *Lease) Resource() string { return l.resource }
func (l *Lease) Shard() int       { return l.shard }

// Bypassed reports a lease admitted while the pair is bypassed (ADR-151):
// nothing was debited but consumption was counted.
func (l *Lease) Bypassed() bool { return l.bypassed }

// Degraded reports a no-op lease admitted by on_unavailable=allow.
func (l *Lease) Degraded() bool { return l.noop }

// Remaining returns the whole tokens left on the shard for a declared limit
// as of admission and this lease's changes since (floor; negative in debt).
func (l *Lease) Remaining(name string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.name == name {
			return bucket.Available(e.balance), true
		}
	}
	return 0, false
}

// Overdrawn lists the soft limits this lease left in debt.
func (l *Lease) Overdrawn() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		if e.soft && e.balance < 0 {
			out = append(out, e.name)
		}
	}
	return out
}

// Statuses describes every declared limit of the lease (wcu never appears).
func (l *Lease) Statuses() []LimitStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LimitStatus, 0, len(l.entries))
	for _, e := range l.entries {
		out = append(out, LimitStatus{
			EntityID: l.entity, Resource: l.resource, LimitName: e.name,
			Capacity: e.params.Capacity / bucket.MilliPerToken, RefillAmount: e.params.RefillAmount / bucket.MilliPerToken,
			RefillPeriod: msDuration(e.params.RefillPeriod),
			Available:    bucket.Available(e.balance), Requested: e.initial + e.delta, Soft: e.soft,
		})
	}
	return out
}

func (l *Lease) entry(name string) (*leaseEntry, error) {
	if l.done {
		return nil, ErrLeaseExpired
	}
	for i := range l.entries {
		if l.entries[i].name == name {
			return &l.entries[i], nil
		}
	}
	return nil, schema.NewValidationError(schema.FieldLimits, name, "not a limit of this lease")
}

// Consume takes more tokens of a declared limit if the lease's view of the
// balance covers them; otherwise it returns *RateLimitExceeded and changes
// nothing. Nothing is written until Commit. A soft limit never rejects.
func (l *Lease) Consume(name string, tokens int64) error {
	if tokens < 0 {
		return schema.NewValidationError("amount", name, "consume amounts must be ≥ 0")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, err := l.entry(name)
	if err != nil {
		return err
	}
	milli, ok := bucket.ToMilli(tokens)
	if !ok {
		return schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
	}
	if !l.bypassed && !l.noop && !e.soft && !bucket.Covers(e.balance, tokens) {
		st := LimitStatus{
			EntityID: l.entity, Resource: l.resource, LimitName: name,
			Capacity: e.params.Capacity / bucket.MilliPerToken, RefillAmount: e.params.RefillAmount / bucket.MilliPerToken,
			RefillPeriod: msDuration(e.params.RefillPeriod), Available: bucket.Available(e.balance),
			Requested: tokens, Exceeded: true,
		}
		r := bucket.DripRetryAfter(e.balance, tokens, e.share.Ceiling, e.share.Rate, e.share.Period)
		st.Never, st.RetryAfter = r.Never, msDuration(r.WaitMs)
		return &RateLimitExceeded{Statuses: []LimitStatus{st}}
	}
	e.delta += tokens
	e.balance -= milli
	return nil
}

// Adjust changes a declared limit's consumption by delta tokens (negative
// gives tokens back). It never rejects and may drive a balance negative.
func (l *Lease) Adjust(name string, delta int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, err := l.entry(name)
	if err != nil {
		return err
	}
	milli, ok := bucket.ToMilli(delta)
	if !ok {
		return schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
	}
	e.delta += delta
	e.balance -= milli
	return nil
}

// Release gives back tokens of a declared limit: Adjust(name, −tokens).
func (l *Lease) Release(name string, tokens int64) error { return l.Adjust(name, -tokens) }

// Commit writes the changes made since admission — one Adjust-shaped write
// (SPEC §4.6) on the lease's shard, or none when nothing changed — and ends
// the lease.
func (l *Lease) Commit(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return ErrLeaseExpired
	}
	l.done = true
	var deltas []Declared
	credit := false
	for _, e := range l.entries {
		if e.delta != 0 {
			deltas = append(deltas, Declared{Name: e.name, Amount: e.delta})
			credit = credit || e.delta < 0
		}
	}
	if l.noop || len(deltas) == 0 {
		return nil
	}
	return l.write(ctx, deltas, credit)
}

// Rollback gives back the admission — one Adjust write negating the
// initial consumption (changes made since were never written) — and ends
// the lease. A failed write is logged and returned.
func (l *Lease) Rollback(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return ErrLeaseExpired
	}
	l.done = true
	var deltas []Declared
	for _, e := range l.entries {
		if e.initial != 0 {
			deltas = append(deltas, Declared{Name: e.name, Amount: -e.initial})
		}
	}
	if l.noop || len(deltas) == 0 {
		return nil
	}
	return l.write(ctx, deltas, true)
}

func (l *Lease) write(ctx context.Context, deltas []Declared, credit bool) error {
	mode := AdjustBoth
	if l.bypassed {
		mode = AdjustConsumed // a bypassed lease never touched tk
	}
	id := schema.BucketID{Namespace: l.lim.ns, Entity: l.entity, Resource: l.resource, Shard: l.shard}
	// A credit can lift tk above its ceiling: force one materialising pass
	// on the shard, which clamps it (SPEC §6.9).
	in, err := l.lim.writes.Adjust(id, mode, deltas, credit && !l.bypassed)
	if err != nil {
		return err
	}
	if _, err := l.lim.db.UpdateItem(ctx, in); err != nil {
		l.lim.log.WarnContext(ctx, "lease write failed", "resource", l.resource, "shard", l.shard, "error", err)
		return &dbError{op: "lease adjust", err: err}
	}
	return nil
}
