package limiter

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/trace"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// leaseEntry is one declared limit of a lease part.
type leaseEntry struct {
	name    string
	initial int64 // tokens consumed at admission
	delta   int64 // tokens adjusted since (positive = more consumed)
	params  bucket.Params
	share   bucket.Share
	balance int64 // millitokens after admission and the deltas since
	soft    bool
}

// leasePart is the admission on one entity's bucket shard: the requesting
// entity's, and its cascade parent's when the pair cascades.
type leasePart struct {
	entity   string
	shard    int
	bypassed bool
	entries  []leaseEntry
}

// Lease is admitted capacity (docs/design.md §5). The admission is already written;
// Consume, Adjust and Release change it in memory, Commit writes those
// changes, Rollback returns the admission. When the pair cascades, the lease
// holds the parent's admission too and every change applies to both. A
// lease is safe for concurrent use; after Commit or Rollback every method
// fails with ErrLeaseExpired.
type Lease struct {
	lim      *Limiter
	resource string
	noop     bool // admitted by on_unavailable=allow: writes nothing

	mu    sync.Mutex
	parts []leasePart // parts[0] is the requesting entity's
	done  bool

	// acquired is the Acquire's span, when traced: the parent of the
	// spans of the lease's changes, linked from its Commit or Rollback
	// (docs/design.md §18).
	acquired trace.Span

	// one and loneBuf back parts and parts[0].entries of a lone fast-path
	// admission (admitted), so that lease is one allocation.
	one     [1]leasePart
	loneBuf [loneEntries]leaseEntry
}

// loneEntries is how many limits a lone lease holds without another
// allocation: the common request of up to two limits (a larger one takes
// a slice of its own).
const loneEntries = 2

// Entity is the requesting entity; Resource the resource.
func (l *Lease) Entity() string {
	if len(l.parts) == 0 {
		return ""
	}
	return l.parts[0].entity
}

// Resource is the resource the lease is on.
func (l *Lease) Resource() string { return l.resource }

// Shard is the requesting entity's bucket shard that was written.
func (l *Lease) Shard() int {
	if len(l.parts) == 0 {
		return 0
	}
	return l.parts[0].shard
}

// Parent is the cascade parent debited with the entity, or "".
func (l *Lease) Parent() string {
	if len(l.parts) < 2 {
		return ""
	}
	return l.parts[1].entity
}

// Bypassed reports a lease admitted while the entity's pair is bypassed
// (ADR-151): nothing was debited but consumption was counted.
func (l *Lease) Bypassed() bool { return len(l.parts) > 0 && l.parts[0].bypassed }

// Degraded reports a no-op lease admitted by on_unavailable=allow.
func (l *Lease) Degraded() bool { return l.noop }

// Remaining returns the whole tokens left for a declared limit, as of
// admission and this lease's changes since (floor; negative in debt): the
// smaller of the entity's and, when cascading, the parent's.
func (l *Lease) Remaining(name string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out int64
	found := false
	for _, p := range l.parts {
		for _, e := range p.entries {
			if e.name == name {
				if a := bucket.Available(e.balance); !found || a < out {
					out = a
				}
				found = true
			}
		}
	}
	return out, found
}

// Overdrawn lists the soft limits this lease left in debt on the entity.
func (l *Lease) Overdrawn() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	if len(l.parts) > 0 {
		for _, e := range l.parts[0].entries {
			if e.soft && e.balance < 0 {
				out = append(out, e.name)
			}
		}
	}
	return out
}

// Statuses describes every declared limit of every part (wcu never appears).
func (l *Lease) Statuses() []LimitStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []LimitStatus
	for _, p := range l.parts {
		for _, e := range p.entries {
			out = append(out, e.status(p.entity, l.resource, e.initial+e.delta))
		}
	}
	return out
}

func (e *leaseEntry) status(entity, resource string, requested int64) LimitStatus {
	return LimitStatus{
		EntityID: entity, Resource: resource, LimitName: e.name,
		Capacity: e.params.Capacity / bucket.MilliPerToken, RefillAmount: e.params.RefillAmount / bucket.MilliPerToken,
		RefillPeriod: msDuration(e.params.RefillPeriod),
		Available:    bucket.Available(e.balance), Requested: requested, Soft: e.soft,
	}
}

// entries returns the entry of name in every part, or an error.
func (l *Lease) entries(name string) ([]*leaseEntry, error) {
	if l.done {
		return nil, ErrLeaseExpired
	}
	var out []*leaseEntry
	for i := range l.parts {
		for j := range l.parts[i].entries {
			if l.parts[i].entries[j].name == name {
				out = append(out, &l.parts[i].entries[j])
			}
		}
	}
	if len(out) == 0 && !l.noop {
		return nil, schema.NewValidationError(schema.FieldLimits, name, "not a limit of this lease")
	}
	return out, nil
}

// Consume takes more tokens of a declared limit if the lease's view of
// every part's balance covers them; otherwise it returns *RateLimitExceeded
// and changes nothing. Nothing is written until Commit. A soft limit never
// rejects, nor does a bypassed part.
func (l *Lease) Consume(name string, tokens int64) error {
	err := l.consume(name, tokens)
	l.lim.tel.leaseChanged(l, "consume", name, tokens, err)
	return err
}

func (l *Lease) consume(name string, tokens int64) error {
	if tokens < 0 {
		return schema.NewValidationError("amount", name, "consume amounts must be ≥ 0")
	}
	milli, ok := bucket.ToMilli(tokens)
	if !ok {
		return schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	es, err := l.entries(name)
	if err != nil {
		return err
	}
	var rej *RateLimitExceeded
	for i, p := range l.parts {
		for j := range p.entries {
			e := &l.parts[i].entries[j]
			if e.name != name || p.bypassed || e.soft || bucket.Covers(e.balance, tokens) {
				continue
			}
			st := e.status(p.entity, l.resource, tokens)
			st.Exceeded = true
			r := bucket.DripRetryAfter(e.balance, tokens, e.share.Ceiling, e.share.Rate, e.share.Period)
			st.Never, st.RetryAfter = r.Never, msDuration(r.WaitMs)
			if rej == nil {
				rej = &RateLimitExceeded{}
			}
			rej.Statuses = append(rej.Statuses, st)
		}
	}
	if rej != nil {
		return rej
	}
	for _, e := range es {
		e.delta += tokens
		e.balance -= milli
	}
	return nil
}

// Adjust changes a declared limit's consumption by delta tokens (negative
// gives tokens back) on every part. It never rejects and may drive a
// balance negative.
func (l *Lease) Adjust(name string, delta int64) error {
	err := l.change(name, delta)
	l.lim.tel.leaseChanged(l, "adjust", name, delta, err)
	return err
}

func (l *Lease) change(name string, delta int64) error {
	milli, ok := bucket.ToMilli(delta)
	if !ok {
		return schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	es, err := l.entries(name)
	if err != nil {
		return err
	}
	for _, e := range es {
		e.delta += delta
		e.balance -= milli
	}
	return nil
}

// Release gives back tokens of a declared limit: Adjust(name, −tokens).
func (l *Lease) Release(name string, tokens int64) error {
	err := l.change(name, -tokens)
	l.lim.tel.leaseChanged(l, "release", name, tokens, err)
	return err
}

// Commit writes the changes made since admission — one Adjust-shaped write
// (docs/design.md §3) per part that changed, independent of each other — and ends
// the lease. Every part is attempted; the errors are joined.
func (l *Lease) Commit(ctx context.Context) error {
	ctx, call := l.lim.tel.startLease(ctx, leaseCommit, l)
	err := l.finish(ctx, func(e leaseEntry) int64 { return e.delta })
	l.lim.tel.endLease(ctx, call, l, err)
	return err
}

// Rollback gives back the admission — one Adjust write per part negating
// the initial consumption (changes made since were never written) — and
// ends the lease. Failed writes are logged and returned.
func (l *Lease) Rollback(ctx context.Context) error {
	ctx, call := l.lim.tel.startLease(ctx, leaseRollback, l)
	err := l.finish(ctx, func(e leaseEntry) int64 { return -e.initial })
	l.lim.tel.endLease(ctx, call, l, err)
	return err
}

func (l *Lease) finish(ctx context.Context, delta func(leaseEntry) int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return ErrLeaseExpired
	}
	l.done = true
	if l.noop {
		return nil
	}
	var errs []error
	for _, p := range l.parts {
		var deltas []bucketwrite.Declared
		for _, e := range p.entries {
			if d := delta(e); d != 0 {
				deltas = append(deltas, bucketwrite.Declared{Name: e.name, Amount: d})
			}
		}
		if len(deltas) > 0 {
			errs = append(errs, l.lim.adjust(ctx, l.resource, p, deltas))
		}
	}
	return errors.Join(errs...)
}

// adjust writes one part's deltas (tokens; negative gives back) with the
// Adjust shape of docs/design.md §3. A bypassed part never touched tk: it moves tc
// only. Otherwise (docs/decisions.md P25):
//   - a debit moves no rf, so it is exact only before vu: the write carries
//     the fast path's vu guard, and past vu the deltas go in a refill pass
//     built from the image the failed write returns;
//   - a credit may let a limit reach its ceiling before the stored vu, so
//     the write also sets vu to now: the next enforce write materialises
//     first (and clamps a balance the credit lifted above its ceiling).
//
// A bucket that no longer exists is left alone.
func (l *Limiter) adjust(ctx context.Context, resource string, p leasePart, deltas []bucketwrite.Declared) error {
	id := schema.BucketID{Namespace: l.ns, Entity: p.entity, Resource: resource, Shard: p.shard}
	// An adjustment may credit: the cached state is forgotten before and
	// after (docs/design.md §10).
	key := shardKey{id.Entity, id.Resource, id.Shard}
	l.rejects.forget(key)
	defer l.rejects.forget(key)
	send := func(in *dynamodb.UpdateItemInput) error {
		now := l.nowMs()
		in.ReturnValues = types.ReturnValueAllNew
		out, err := l.db.UpdateItem(ctx, in)
		if err == nil {
			l.pairs.learnItem(id.Entity, id.Resource, id.Shard, out.Attributes, now)
		}
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			l.log.WarnContext(ctx, "lease write failed", "resource", resource, "shard", p.shard, "error", err)
			return &dbError{op: "lease adjust", err: err}
		}
		return err
	}
	if p.bypassed {
		in, err := l.writes.Adjust(id, bucketwrite.AdjustConsumed, deltas, false, 0)
		if err != nil {
			return err
		}
		return send(in)
	}
	now := l.nowMs()
	debit, credit := false, false
	for _, d := range deltas {
		debit, credit = debit || d.Amount > 0, credit || d.Amount < 0
	}
	u := &expr.Builder{}
	u.Cond("attribute_exists(" + u.Name(schema.AttrPK) + ")")
	for _, d := range deltas {
		milli := d.Amount * bucket.MilliPerToken // validated to fit at admission
		u.Add(schema.BucketAttr(d.Name, schema.LimitTokens), schema.Num(-milli))
		u.Add(schema.BucketAttr(d.Name, schema.LimitConsumed), schema.Num(milli))
	}
	if debit {
		vu := u.Name(schema.AttrVU)
		u.Cond("(attribute_not_exists(" + vu + ") OR " + vu + " > " + u.Value(schema.Num(now)) + ")")
	}
	if credit {
		u.Set(schema.AttrVU, schema.Num(now))
	}
	in := u.UpdateInput(l.table, id.Key())
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	err := send(in)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	passes := 0
	// Past vu: materialise and apply the deltas in one rf-locked pass.
	if len(ccf.Item) == 0 {
		return nil // the bucket is gone (TTL or a delete): nothing to adjust
	}
	img, err := bucketitem.Decode(ccf.Item)
	if err != nil {
		return err
	}
	unsettled := false
	for cur := &img; cur.HasRF && cur.HasVU; {
		now := l.nowMs()
		plan := l.planRefill(nil, id, cur, deltas, false, false, now)
		if unsettled = plan.unsettled; unsettled {
			// A quota reset only the read-then-write path sizes: the deltas
			// go on the state as it is, the reset stays pending (a debit of
			// the period that ended is forgiven with it).
			break
		}
		fresh, lost, err := l.sendRefill(ctx, plan)
		if fresh != nil {
			l.pairs.learnImage(id.Entity, id.Resource, id.Shard, fresh, now)
		}
		if err != nil || !lost || fresh == nil {
			return err
		}
		if passes++; passes >= maxPasses {
			break
		}
		cur = fresh
	}
	// Every pin moved under us: apply the deltas as they are and make the
	// next enforce write materialise. A debit here may be re-credited by up
	// to its own size; logged.
	if !unsettled {
		l.log.WarnContext(ctx, "lease adjust applied without a refill pass", "resource", resource, "shard", p.shard)
	}
	fb := &expr.Builder{}
	fb.Cond("attribute_exists(" + fb.Name(schema.AttrPK) + ")")
	for _, d := range deltas {
		milli := d.Amount * bucket.MilliPerToken
		fb.Add(schema.BucketAttr(d.Name, schema.LimitTokens), schema.Num(-milli))
		fb.Add(schema.BucketAttr(d.Name, schema.LimitConsumed), schema.Num(milli))
	}
	fb.Set(schema.AttrVU, schema.Num(l.nowMs()))
	in = fb.UpdateInput(l.table, id.Key())
	if err := send(in); err != nil && !errors.As(err, &ccf) {
		return err
	}
	return nil
}
