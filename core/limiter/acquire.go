package limiter

import (
	"context"
	"errors"
	"fmt"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Acquire takes the amounts in consume from the limits of (entity,
// resource) and returns a lease on them, or an error:
//   - *RateLimitExceeded when a hard limit cannot cover its amount (429);
//   - *ResourceDisabled when the pair is disabled (403);
//   - a validation error (schema.IsValidationError) for bad input or a
//     limit the pair does not configure, with nothing written;
//   - *RateLimiterUnavailable on an infrastructure failure when
//     on_unavailable is block (with allow, a no-op lease is returned).
//
// The common case is one conditional UpdateItem (docs/design.md §5). The lease is
// already committed: Commit writes only what was adjusted afterwards.
func (l *Limiter) Acquire(ctx context.Context, entity, resource string, consume Consume, opts ...AcquireOption) (*Lease, error) {
	ctx, call := l.tel.startAcquire(ctx, entity, resource)
	req, err := l.newRequest(entity, resource, consume, opts)
	if err != nil {
		l.tel.endAcquire(ctx, call, pathNone, nil, err)
		return nil, err
	}
	lease, err := l.answer(ctx, req)
	l.tel.endAcquire(ctx, call, req.path, lease, err)
	return lease, err
}

// answer runs a validated request and turns what it ends in into
// Acquire's answer: on_unavailable for an infrastructure failure, the
// degraded flag and the counters of Stats.
func (l *Limiter) answer(ctx context.Context, req *request) (*Lease, error) {
	lease, err := l.acquire(ctx, req)
	if err == nil {
		l.answered()
		return lease, nil
	}
	if rle, ok := err.(*RateLimitExceeded); ok && rle.Local {
		return nil, err // the common repeat verdict: no reflection on the hot path
	}
	if isInfrastructure(ctx, err) {
		l.degraded.Store(true)
		return l.unavailable(ctx, req, err)
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) && !isVerdict(err) {
		// The caller's context ended while a call was failing: the
		// caller's own error, with the failure it cut short.
		return nil, fmt.Errorf("limiter: acquire: %w (after: %w)", ctx.Err(), err)
	}
	if rle := (*RateLimitExceeded)(nil); errors.As(err, &rle) && !rle.Local {
		l.stats.serverRejections.Add(1)
		l.answered()
	}
	return lease, err
}

// answered clears the degraded flag once DynamoDB has decided an acquire;
// it writes the shared flag only when it is set.
func (l *Limiter) answered() {
	if l.degraded.Load() {
		l.degraded.Store(false)
	}
}

// unavailable applies on_unavailable (the call's, else the system config's,
// else the limiter's) to an infrastructure failure: a no-op lease when it
// is allow, else RateLimiterUnavailable.
func (l *Limiter) unavailable(ctx context.Context, req *request, cause error) (*Lease, error) {
	perCall := req.onUnavailable
	if !perCall.Valid() {
		perCall = l.resolver.OnUnavailableOr(ctx, l.ns, l.onUnavailable)
	}
	if perCall == config.OnUnavailableAllow {
		l.log.WarnContext(ctx, "limiter unavailable; admitting by on_unavailable=allow", "resource", req.resource, "error", cause)
		return &Lease{lim: l, noop: true, resource: req.resource, parts: []leasePart{{entity: req.entity}}}, nil
	}
	return nil, &RateLimiterUnavailable{Cause: cause, Stack: l.table, EntityID: req.entity, Resource: req.resource}
}

// acquire runs the speculative fast path and everything it hands off to.
// Every hand-off to the read-then-write path (docs/design.md §5, step 3)
// leaves the loop through its one exit at the end.
func (l *Limiter) acquire(ctx context.Context, req *request) (*Lease, error) {
	if req.readers != "" {
		if err := l.requireReaders(ctx, req.readers); err != nil {
			return nil, err
		}
	}
	st := l.pairs.get(req.entity, req.resource)
	now := l.nowMs()
	// The rejection cache (docs/design.md §10) may reject with no call, or
	// steer the draw away from shards known short.
	rejected, tried, mark := l.rejectLocally(req, st, now)
	if rejected != nil {
		req.path = pathLocal
		return nil, rejected
	}
	shard, _ := l.drawShard(st.shardCount, &tried)
	if !l.speculative {
		return l.readThenWrite(ctx, req, shard)
	}
	shape := bucketwrite.ShapeFor(st.bypassed)
	warmParent := ""
	if st.cascadeKnown && st.cascade {
		warmParent = st.parentID
	}
	enforceRetried, shardRetries, respeculated := false, 0, 0
	// refilled settles refill passes on the shard (docs/decisions.md P25):
	// done reports a verdict to return, toRead a hand-off to the
	// read-then-write path; otherwise the loop goes on with the shard
	// (another one after a shortfall) or the fast path.
	refilled := func(lease *Lease, nx next, err error) (done, toRead bool, out *Lease, outErr error) {
		var rle *RateLimitExceeded
		switch {
		case lease != nil:
			return true, false, lease, nil
		case errors.As(err, &rle):
			if sc := l.pairs.get(req.entity, req.resource).shardCount; sc > 1 && shardRetries < maxShardRetries {
				if s, ok := l.drawShard(sc, &tried); ok {
					shard = s
					shardRetries++
					return false, false, nil, nil
				}
			}
			return true, false, nil, err
		case err != nil:
			return true, false, nil, err
		case nx == nextReadThenWrite || respeculated >= maxPasses:
			return false, true, nil, nil
		}
		respeculated++
		return false, false, nil, nil
	}
speculation:
	for cur, first := st, true; ; first = false {
		if !first {
			cur = l.pairs.get(req.entity, req.resource) // the last pass may have taught it
			now, mark = l.nowMs(), l.rejects.mark(req.entity, req.resource)
		}
		if img := cur.image; shape == bucketwrite.ShapeEnforce &&
			img != nil && cur.imageShard == shard && img.HasVU && img.VU <= now {
			// The cached image shows vu passed: a refill pass, no read.
			id := schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: shard}
			done, toRead, lease, err := refilled(l.refillAcquire(ctx, req, id, img, false, true))
			switch {
			case done:
				return lease, err
			case toRead:
				break speculation
			}
		}
		var c, p speculation
		if warmParent != "" {
			req.path = pathCascade
			c, p = l.speculatePair(ctx, req, attempt{shard, shape, now, mark}, warmParent)
		} else {
			req.path = pathFast
			c = l.speculate(ctx, req, attempt{shard, shape, now, mark})
		}
		if c.ok && c.err == nil {
			return l.admitted(ctx, req, c, p)
		}
		if p.ok {
			l.refund(ctx, p) // failure | success: give the parent back (docs/design.md §5)
		}
		if c.err != nil {
			return nil, c.err
		}
		// The child failed: handle it as a lone write; whatever runs next
		// (a retry, or the slow path) takes care of the parent.
		warmParent = ""
		img := c.img
		if c.cls.Reason == bucketwrite.ReasonScheduleBoundary {
			// vu has passed: materialise from the image, no read (P25).
			done, toRead, lease, err := refilled(l.refillAcquire(ctx, req, c.id, img, true, true))
			switch {
			case done:
				return lease, err
			case toRead:
				break speculation
			}
			continue
		}
		switch c.cls.Action() {
		case bucketwrite.ActionRaiseDisabled:
			return nil, &ResourceDisabled{EntityID: req.entity, Resource: req.resource, Level: LevelBucket}
		case bucketwrite.ActionRetryEnforce:
			l.pairs.update(req.entity, req.resource, func(p *pairState) { p.bypassed = false })
			if !enforceRetried {
				enforceRetried, shape = true, bucketwrite.ShapeEnforce
				continue
			}
		case bucketwrite.ActionDouble:
			// When the stored wcu ran down over slow traffic (only rf
			// writers credit it), refill covers the write and the
			// partition is not hot: the slow path refills it, no
			// doubling (P21).
			if wcuPressure(img, c.now) {
				l.double(ctx, req, img)
			}
		case bucketwrite.ActionShardRetryOrReject:
			// A cascading child never takes a child-only shard retry: it
			// would skip the parent (docs/design.md §5).
			if img.ShardCount > 1 && shardRetries < maxShardRetries && !img.Cascades() && !st.cascade {
				if next, ok := l.drawShard(img.ShardCount, &tried); ok {
					shard = next
					shardRetries++
					continue
				}
			}
			return l.fastReject(ctx, req, shard, img, c.now)
		}
		break // every other action: the read-then-write path
	}
	return l.readThenWrite(ctx, req, shard)
}
