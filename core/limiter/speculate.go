package limiter

// The speculative write (docs/design.md §5, step 1): one conditional
// UpdateItem that debits first, and what its answer decides: the lease of a
// lone admission, a rejection from the image a failed write returns when
// refill would not help, and the refund of a write the request does not
// keep.

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/answer"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// attempt is one fast-path write to be sent: its shard and shape, the
// clock reading it is judged at, and the rejection cache's mark taken
// before it (docs/design.md §10).
type attempt struct {
	shard int
	shape bucketwrite.Shape
	now   int64
	mark  uint64
}

// speculation is the outcome of one fast-path write for one entity.
type speculation struct {
	req   *request
	id    schema.BucketID
	shape bucketwrite.Shape
	now   int64
	ok    bool
	img   *bucketitem.Image // ALL_NEW on success; ALL_OLD on failure (nil: no item)
	cls   bucketwrite.Classification
	err   error // a failed call or an undecodable image
}

// speculate sends one fast-path write (docs/design.md §5) for req's entity:
// the attempt a.
func (l *Limiter) speculate(ctx context.Context, req *request, a attempt) speculation {
	shard, shape, mark := a.shard, a.shape, a.mark
	sp := speculation{req: req, shape: shape, now: a.now,
		id: schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: shard}}
	in, err := l.writes.Speculative(sp.id, shape, req.declared, sp.now)
	if err != nil {
		sp.err = err
		return sp
	}
	out, err := l.db.updateAnswered(ctx, in)
	if err == nil {
		img, derr := answer.Image(out)
		sp.ok, sp.img, sp.err = true, img, derr
		if derr == nil {
			l.pairs.learnImage(req.entity, req.resource, shard, sp.img, sp.now)
			l.rejects.remember(sp.id, sp.img, mark)
		}
		return sp
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		sp.err = &dbError{op: "fast path UpdateItem", err: err}
		return sp
	}
	sp.cls, sp.img, sp.err = bucketwrite.ClassifyItem(ccf.Item, shape, req.declared, sp.now)
	if sp.img != nil {
		l.pairs.learnImage(req.entity, req.resource, shard, sp.img, sp.now)
		l.rejects.remember(sp.id, sp.img, mark)
	}
	return sp
}

// admitted finishes an acquire whose own write succeeded: a lone lease,
// or the cascade outcomes of docs/design.md §5 (p is the warm parent
// write, or the zero value).
func (l *Limiter) admitted(ctx context.Context, req *request, c, p speculation) (*Lease, error) {
	if c.img.Cascades() {
		return l.cascadeAdmitted(ctx, req, c, p)
	}
	if p.ok {
		l.refund(ctx, p) // cascade mismatch: the cache debited a parent
	}
	lease := &Lease{lim: l, resource: req.resource}
	lease.one[0] = l.admittedPart(ctx, c, lease.loneBuf[:0])
	lease.parts = lease.one[:]
	return lease, nil
}

// admittedPart builds the lease part of a successful fast-path write
// (docs/design.md §5), refunding the debit of an enforce-shaped write that landed
// on a bypassed bucket. The part's entries go to dst when it has the room.
func (l *Limiter) admittedPart(ctx context.Context, sp speculation, dst []leaseEntry) leasePart {
	part := imagePart(sp, dst)
	if sp.shape == bucketwrite.ShapeEnforce && sp.img.Bypass.Live(sp.now) {
		// Bypass discovered: give the tokens back, keep the tc (ADR-151
		// decision 3).
		l.credit(ctx, sp.id, bucketwrite.AdjustTokens, negate(sp.req.declared), "bypass refund")
		part.bypassed = true
	}
	return part
}

// imagePart describes the declared limits of a successful write from its
// ALL_NEW image, materialised at the write's clock reading. The entries
// are appended to dst[:0] when it has the room, else to a new slice.
func imagePart(sp speculation, dst []leaseEntry) leasePart {
	img := sp.img
	part := leasePart{entity: sp.id.Entity, shard: sp.id.Shard, bypassed: sp.shape == bucketwrite.ShapeBypass}
	if cap(dst) >= len(sp.req.declared) {
		part.entries = dst[:0]
	} else {
		part.entries = make([]leaseEntry, 0, len(sp.req.declared))
	}
	shards := max(img.ShardCount, 1)
	var (
		scheds map[string]schedule.Schedule
		loc    *time.Location
	)
	if img.HasParamSchedule() {
		// A schedule that does not decode leaves the stored parameters:
		// the write landed under the vu a reader of it stamped.
		scheds, loc, _ = img.ParamSchedules()
	}
	for _, d := range sp.req.declared {
		e := leaseEntry{name: d.Name, initial: d.Amount}
		if li := img.Limit(d.Name); li != nil {
			// Statuses report the limit as configured; the arithmetic is
			// at the parameters in force (docs/design.md §14).
			p := li.Params()
			if s, ok := scheds[d.Name]; ok {
				p = s.Effective(p, time.UnixMilli(sp.now), loc)
			}
			share := bucket.Effective(p, shards)
			e.params, e.share = li.Params(), share
			e.balance, _ = bucket.Materialise(li.Tokens, img.RF, sp.now, share.Ceiling, share.Rate, share.Period)
			e.soft = li.Soft.Live(sp.now)
		}
		part.entries = append(part.entries, e)
	}
	return part
}

// imageStatuses are the statuses of a successful write's declared limits.
func imageStatuses(sp speculation) []LimitStatus {
	part := imagePart(sp, nil)
	out := make([]LimitStatus, 0, len(part.entries))
	for _, e := range part.entries {
		out = append(out, e.status(sp.id.Entity, sp.id.Resource, e.initial))
	}
	return out
}

// fastReject decides an APP_LIMIT_EXHAUSTED failure with no further call
// when refill would not help (docs/design.md §3), else runs the slow path.
func (l *Limiter) fastReject(ctx context.Context, req *request, shard int, img *bucketitem.Image, now int64) (*Lease, error) {
	if img.HasParamSchedule() {
		// The image's parameters are not the ones in force: the
		// read-then-write path decides from the config (docs/design.md §14).
		// A calendar quota's reset is judged from the image (§15).
		return l.readThenWrite(ctx, req, shard)
	}
	limits := make([]bucket.ImageLimit, len(req.declared))
	for i, d := range req.declared {
		limits[i] = img.ImageLimit(d.Name, d.Amount, now)
	}
	satisfy, statuses := bucket.WouldRefillSatisfy(nil, limits, img.RF, max(img.ShardCount, 1), now)
	if satisfy {
		return l.readThenWrite(ctx, req, shard)
	}
	e := &RateLimitExceeded{}
	for i, d := range req.declared {
		p, _ := img.Params(d.Name)
		e.Statuses = append(e.Statuses, limitStatus(req.entity, req.resource, d, p, limits[i].Soft, statuses[i]))
	}
	return nil, e
}

// refund gives back a successful speculative write that the request will
// not keep: tk and tc, or tc only for a bypass-shaped write (docs/design.md §5).
func (l *Limiter) refund(ctx context.Context, sp speculation) {
	mode := bucketwrite.AdjustBoth
	if sp.shape == bucketwrite.ShapeBypass {
		mode = bucketwrite.AdjustConsumed
	}
	l.credit(ctx, sp.id, mode, negate(sp.req.declared), "cascade refund")
}

// credit sends an unconditioned Adjust write that gives tokens back; a
// failure is logged, not returned (docs/design.md §5: rollbacks and refunds are
// best effort). A credit of tk also sets vu to now: it may let a limit
// reach its ceiling before the stored vu, so the next enforce write takes a
// materialising pass (docs/decisions.md P25).
func (l *Limiter) credit(ctx context.Context, id schema.BucketID, mode bucketwrite.AdjustMode, deltas []bucketwrite.Declared, what string) {
	now := l.nowMs()
	// A credit returns tokens the cached state does not show: forget it
	// before and after (docs/design.md §10).
	key := shardKey{id.Entity, id.Resource, id.Shard}
	l.rejects.forget(key)
	defer l.rejects.forget(key)
	in, err := l.writes.Adjust(id, mode, deltas, mode != bucketwrite.AdjustConsumed, now)
	if err == nil {
		in.ReturnValues = types.ReturnValueAllNew
		var out *dynamodb.UpdateItemOutput
		if out, err = l.db.UpdateItem(ctx, in); err == nil {
			l.pairs.learnItem(id.Entity, id.Resource, id.Shard, out.Attributes, now)
		}
	}
	if err != nil {
		l.log.WarnContext(ctx, what+" failed", "resource", id.Resource, "shard", id.Shard, "error", err)
	}
}

func negate(ds []bucketwrite.Declared) []bucketwrite.Declared {
	out := make([]bucketwrite.Declared, len(ds))
	for i, d := range ds {
		out[i] = bucketwrite.Declared{Name: d.Name, Amount: -d.Amount}
	}
	return out
}
