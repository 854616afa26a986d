package limiter

// The cascade (docs/design.md §5, step 4): a child that cascades also debits
// its parent. The warm pair of writes, the outcomes once the child's write
// has landed, and the parent-only pass.

import (
	"context"
	"errors"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
)

// speculatePair is the warm cascade: child and parent writes issued
// concurrently, each in its own shape (docs/design.md §5).
func (l *Limiter) speculatePair(ctx context.Context, req *request, a attempt, parent string) (c, p speculation) {
	preq := req.forEntity(parent)
	pst := l.pairs.get(parent, req.resource)
	ptried := l.parentSteer(req, parent, pst.shardCount)
	pshard, _ := l.drawShard(pst.shardCount, &ptried)
	pa := attempt{shard: pshard, shape: bucketwrite.ShapeFor(pst.bypassed), now: a.now, mark: l.rejects.mark(parent, req.resource)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p = l.speculate(ctx, preq, pa)
	}()
	c = l.speculate(ctx, req, a)
	<-done
	return c, p
}

// cascadeAdmitted finishes an acquire whose own write succeeded on a child
// that cascades: the parent's write (p, the warm parent write, or the zero
// value: it is sent now) and the cascade outcomes of docs/design.md §5.
func (l *Limiter) cascadeAdmitted(ctx context.Context, req *request, c, p speculation) (*Lease, error) {
	req.path = pathCascade
	if parent := c.img.ParentID; p.req == nil || p.req.entity != parent {
		if p.ok {
			l.refund(ctx, p) // the parent changed under the cache
		}
		preq := req.forEntity(parent)
		pst := l.pairs.get(parent, req.resource)
		pshard, _ := l.drawShard(pst.shardCount, new(shardSet))
		p = l.speculate(ctx, preq, attempt{shard: pshard, shape: bucketwrite.ShapeFor(pst.bypassed), // cold path
			now: l.nowMs(), mark: l.rejects.mark(parent, req.resource)})
	}
	if p.err != nil {
		l.refund(ctx, c)
		return nil, p.err
	}
	if p.ok {
		return &Lease{lim: l, resource: req.resource, parts: []leasePart{l.admittedPart(ctx, c, nil), l.admittedPart(ctx, p, nil)}}, nil
	}
	switch p.cls.Reason {
	case bucketwrite.ReasonDisabled:
		l.refund(ctx, c)
		return nil, &ResourceDisabled{EntityID: p.req.entity, Resource: req.resource, Level: LevelBucket}
	case bucketwrite.ReasonBucketMissing, bucketwrite.ReasonSeed:
		l.refund(ctx, c)
		return l.readThenWrite(ctx, req, c.id.Shard)
	case bucketwrite.ReasonAppLimitExhausted:
		if p.img.HasParamSchedule() {
			break // its parameters in force come from the config: the parent-only pass
		}
		limits := make([]bucket.ImageLimit, len(req.declared))
		for i, d := range req.declared {
			limits[i] = p.img.ImageLimit(d.Name, d.Amount, p.now)
		}
		satisfy, statuses := bucket.WouldRefillSatisfy(nil, limits, p.img.RF, max(p.img.ShardCount, 1), p.now)
		if !satisfy {
			l.refund(ctx, c)
			e := &RateLimitExceeded{Statuses: imageStatuses(c)}
			for i, d := range req.declared {
				pp, _ := p.img.Params(d.Name)
				e.Statuses = append(e.Statuses, limitStatus(p.req.entity, p.req.resource, d, pp, limits[i].Soft, statuses[i]))
			}
			return nil, e
		}
	case bucketwrite.ReasonWCUExhausted, bucketwrite.ReasonBothExhausted:
		if wcuPressure(p.img, p.now) {
			l.double(ctx, p.req, p.img)
		}
	case bucketwrite.ReasonScheduleBoundary:
		// The parent's vu has passed: its refill pass, no read (P25).
		lease, _, err := l.refillAcquire(ctx, p.req, p.id, p.img, true, false)
		var rle *RateLimitExceeded
		switch {
		case lease != nil:
			return &Lease{lim: l, resource: req.resource, parts: []leasePart{l.admittedPart(ctx, c, nil), lease.parts[0]}}, nil
		case errors.As(err, &rle):
			l.refund(ctx, c)
			return nil, &RateLimitExceeded{Statuses: append(imageStatuses(c), rle.Statuses...)}
		case err != nil:
			l.refund(ctx, c)
			return nil, err
		}
	}
	// Parent-only slow path: the child's debit stands if the parent's
	// materialised write lands (docs/design.md §5).
	if part, err := l.parentOnly(ctx, p.req, p.id.Shard); err == nil {
		return &Lease{lim: l, resource: req.resource, parts: []leasePart{l.admittedPart(ctx, c, nil), part}}, nil
	}
	l.refund(ctx, c)
	return l.readThenWrite(ctx, req, c.id.Shard)
}

// parentOnly is the parent-only slow path: read the parent's shard,
// materialise, and write it alone under its rf lock.
func (l *Limiter) parentOnly(ctx context.Context, preq *request, shard int) (leasePart, error) {
	for range maxPasses {
		p, err := l.prepare(ctx, preq, shard)
		if err != nil {
			return leasePart{}, err
		}
		if e := l.violations(p); e != nil {
			return leasePart{}, e
		}
		p.build()
		lease, again, err := l.writeOne(ctx, p)
		if !again {
			if err != nil {
				return leasePart{}, err
			}
			return lease.parts[0], nil
		}
	}
	return leasePart{}, errContention
}
