package limiter

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Consume names the whole-token amounts one acquire takes, by limit name.
// An amount of 0 still declares the limit (it is checked, not debited).
type Consume map[string]int64

// AcquireOption adjusts one Acquire call.
type AcquireOption func(*request)

// WithLimits bypasses config resolution and uses these limits for the call
// (SPEC §5.1, source "override").
func WithLimits(limits ...limit.Limit) AcquireOption {
	return func(r *request) { r.override = slices.Clone(limits) }
}

// WithOnUnavailable sets the call's action on an infrastructure error,
// ahead of the system config (SPEC §5.2).
func WithOnUnavailable(o config.OnUnavailable) AcquireOption {
	return func(r *request) { r.onUnavailable = o }
}

// request is one validated Acquire call.
type request struct {
	entity, resource string
	declared         []Declared // sorted by name
	override         []limit.Limit
	onUnavailable    config.OnUnavailable
}

func (l *Limiter) newRequest(entity, resource string, consume Consume, opts []AcquireOption) (*request, error) {
	if err := schema.ValidateEntityID(entity); err != nil {
		return nil, err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return nil, err
	}
	if len(consume) == 0 {
		return nil, schema.NewValidationError(schema.FieldLimits, "", "an acquire must name at least one limit")
	}
	r := &request{entity: entity, resource: resource, declared: make([]Declared, 0, len(consume))}
	for name, amount := range consume {
		if err := schema.ValidateLimitName(name); err != nil {
			return nil, err
		}
		if amount < 0 {
			return nil, schema.NewValidationError("amount", name, "consume amounts must be ≥ 0")
		}
		if _, ok := bucket.ToMilli(amount); !ok {
			return nil, schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
		}
		r.declared = append(r.declared, Declared{Name: name, Amount: amount})
	}
	slices.SortFunc(r.declared, func(a, b Declared) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range opts {
		o(r)
	}
	if r.override != nil {
		if err := limit.ValidateSet(r.override); err != nil {
			return nil, err
		}
	}
	if r.onUnavailable != "" && !r.onUnavailable.Valid() {
		return nil, schema.NewValidationError("on_unavailable", string(r.onUnavailable), "must be allow or block")
	}
	return r, nil
}

// Acquire takes the amounts in consume from the limits of (entity,
// resource) and returns a lease on them, or an error:
//   - *RateLimitExceeded when a hard limit cannot cover its amount (429);
//   - *ResourceDisabled when the pair is disabled (403);
//   - a validation error (schema.IsValidationError) for bad input or a
//     limit the pair does not configure, with nothing written;
//   - *RateLimiterUnavailable on an infrastructure failure when
//     on_unavailable is block (with allow, a no-op lease is returned).
//
// The common case is one conditional UpdateItem (SPEC §6.3). The lease is
// already committed: Commit writes only what was adjusted afterwards.
func (l *Limiter) Acquire(ctx context.Context, entity, resource string, consume Consume, opts ...AcquireOption) (*Lease, error) {
	req, err := l.newRequest(entity, resource, consume, opts)
	if err != nil {
		return nil, err
	}
	lease, err := l.acquire(ctx, req)
	if err != nil && isInfrastructure(ctx, err) {
		return l.unavailable(ctx, req, err)
	}
	return lease, err
}

// isInfrastructure reports an error that on_unavailable governs: anything
// but a verdict (rate limit, disabled), bad input, an unsupported shape, or
// the caller's own context ending.
func isInfrastructure(ctx context.Context, err error) bool {
	var disabled *ResourceDisabled
	switch {
	case ctx.Err() != nil,
		IsRateLimitError(err), errors.As(err, &disabled), IsValidationError(err),
		errors.Is(err, ErrCascadeUnsupported), errors.Is(err, errPhase2), config.IsUnsupported(err):
		return false
	}
	return true
}

func (l *Limiter) unavailable(ctx context.Context, req *request, cause error) (*Lease, error) {
	perCall := req.onUnavailable
	if perCall == "" {
		perCall = l.resolver.OnUnavailable(ctx, l.ns, "")
	}
	if perCall == "" {
		perCall = l.onUnavailable
	}
	if perCall == config.OnUnavailableAllow {
		l.log.WarnContext(ctx, "limiter unavailable; admitting by on_unavailable=allow", "resource", req.resource, "error", cause)
		return &Lease{lim: l, noop: true, entity: req.entity, resource: req.resource}, nil
	}
	return nil, &RateLimiterUnavailable{Cause: cause, Stack: l.table, EntityID: req.entity, Resource: req.resource}
}

// maxShardRetries is how many extra shards a rejected request probes
// (SPEC §6.6, Appendix A).
const maxShardRetries = 2

// acquire runs the speculative fast path and everything it hands off to.
func (l *Limiter) acquire(ctx context.Context, req *request) (*Lease, error) {
	st := l.pairs.get(req.entity, req.resource)
	var tried shardSet
	shard, _ := l.drawShard(st.shardCount, &tried)
	if !l.speculative {
		return l.slowPath(ctx, req, shard)
	}
	shape := ShapeEnforce
	if st.bypassed {
		shape = ShapeBypass
	}
	enforceRetried, shardRetries := false, 0
	for {
		now := l.nowMs()
		id := schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: shard}
		in, err := l.writes.FastPath(id, shape, req.declared, now)
		if err != nil {
			return nil, err
		}
		out, err := l.db.UpdateItem(ctx, in)
		if err == nil {
			return l.fastSuccess(ctx, req, id, shape, out.Attributes, now)
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, &dbError{op: "fast path UpdateItem", err: err}
		}
		cls, img, err := ClassifyItem(ccf.Item, shape, req.declared, now)
		if err != nil {
			return nil, err
		}
		if img != nil {
			l.learn(req, img, now)
		}
		switch cls.Action() {
		case ActionRaiseDisabled:
			return nil, &ResourceDisabled{EntityID: req.entity, Resource: req.resource, Level: LevelBucket}
		case ActionRetryEnforce:
			l.pairs.update(req.entity, req.resource, func(p *pairState) { p.bypassed = false })
			if !enforceRetried {
				enforceRetried, shape = true, ShapeEnforce
				continue
			}
			return l.slowPath(ctx, req, shard)
		case ActionDouble:
			l.double(ctx, req, img)
			return l.slowPath(ctx, req, shard)
		case ActionShardRetryOrReject:
			count := img.ShardCount
			if count > 1 && shardRetries < maxShardRetries && !cascades(img) {
				if next, ok := l.drawShard(count, &tried); ok {
					shard = next
					shardRetries++
					continue
				}
			}
			return l.fastReject(ctx, req, shard, img, now)
		default:
			return l.slowPath(ctx, req, shard)
		}
	}
}

// cascades reports an image whose owner stamp says the pair cascades.
func cascades(img *bucket.Image) bool {
	return img.HasCascade && img.Cascade && (img.HasParent || img.HasPGen)
}

// learn updates the pair cache from an image of this pair (SPEC §5.5).
func (l *Limiter) learn(req *request, img *bucket.Image, now int64) {
	l.pairs.update(req.entity, req.resource, func(p *pairState) {
		if img.HasShardCount && img.ShardCount > p.shardCount {
			p.shardCount = img.ShardCount
		}
		if img.HasParent || img.HasPGen {
			p.cascadeKnown, p.cascade, p.parentID = true, img.HasCascade && img.Cascade, img.ParentID
		}
		p.bypassed = img.Bypass.Live(now)
	})
}

// fastSuccess builds the lease from the ALL_NEW image (SPEC §6.5).
func (l *Limiter) fastSuccess(ctx context.Context, req *request, id schema.BucketID, shape Shape, item map[string]types.AttributeValue, now int64) (*Lease, error) {
	img, err := bucket.DecodeImage(item)
	if err != nil {
		return nil, err
	}
	l.learn(req, &img, now)
	if cascades(&img) {
		// The write debited the child only; refund it rather than admit
		// without the parent.
		l.credit(ctx, id, AdjustBoth, negate(req.declared), "refund of a cascading child")
		return nil, ErrCascadeUnsupported
	}
	bypassed := shape == ShapeBypass
	if shape == ShapeEnforce && img.Bypass.Live(now) {
		// Bypass discovered: the write debited tk of a bypassed bucket;
		// give the tokens back, keep the tc (ADR-151 decision 3).
		l.credit(ctx, id, AdjustTokens, negate(req.declared), "bypass refund")
		bypassed = true
	}
	lease := &Lease{lim: l, entity: req.entity, resource: req.resource, shard: id.Shard, bypassed: bypassed}
	shards := max(img.ShardCount, 1)
	for _, d := range req.declared {
		li := img.Limit(d.Name)
		e := leaseEntry{name: d.Name, initial: d.Amount}
		if li != nil {
			p := li.Params()
			share := bucket.Effective(p, shards)
			e.params, e.share = p, share
			e.balance, _ = bucket.Materialise(li.Tokens, img.RF, now, share.Ceiling, share.Rate, share.Period)
			e.soft = li.Soft.Live(now)
		}
		lease.entries = append(lease.entries, e)
	}
	return lease, nil
}

// fastReject decides an APP_LIMIT_EXHAUSTED failure with no further call
// when refill would not help (SPEC §4.7), else runs the slow path.
func (l *Limiter) fastReject(ctx context.Context, req *request, shard int, img *bucket.Image, now int64) (*Lease, error) {
	limits := make([]bucket.ImageLimit, len(req.declared))
	for i, d := range req.declared {
		limits[i] = img.ImageLimit(d.Name, d.Amount, now)
	}
	satisfy, statuses := bucket.WouldRefillSatisfy(nil, limits, img.RF, max(img.ShardCount, 1), now)
	if satisfy {
		return l.slowPath(ctx, req, shard)
	}
	e := &RateLimitExceeded{}
	for i, d := range req.declared {
		p, _ := img.Params(d.Name)
		e.Statuses = append(e.Statuses, l.status(req, d, p, limits[i].Soft, statuses[i]))
	}
	return nil, e
}

// double asks shard 0 to double the pair's shard count (SPEC §6.6).
func (l *Limiter) double(ctx context.Context, req *request, img *bucket.Image) {
	old := max(img.ShardCount, 1)
	in, err := l.writes.Double(l.ns, req.entity, req.resource, old)
	var capErr *ShardCapError
	if errors.As(err, &capErr) {
		l.log.WarnContext(ctx, "wcu exhausted at the shard cap; not doubling", "resource", req.resource, "shard_count", old)
		return
	}
	if err != nil {
		l.log.WarnContext(ctx, "cannot build doubling write", "error", err)
		return
	}
	if _, err := l.db.UpdateItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			// Another writer doubled first: adopt its count.
			if cur, derr := bucket.DecodeImage(ccf.Item); derr == nil && cur.HasShardCount {
				l.pairs.learnShardCount(req.entity, req.resource, cur.ShardCount)
			}
			return
		}
		l.log.WarnContext(ctx, "doubling write failed", "resource", req.resource, "error", err)
		return
	}
	l.pairs.learnShardCount(req.entity, req.resource, 2*old)
}

// status turns an arithmetic status into a LimitStatus of the request.
func (l *Limiter) status(req *request, d Declared, p bucket.Params, soft bool, s bucket.Status) LimitStatus {
	ls := LimitStatus{
		EntityID: req.entity, Resource: req.resource, LimitName: d.Name,
		Capacity: p.Capacity / bucket.MilliPerToken, RefillAmount: p.RefillAmount / bucket.MilliPerToken,
		RefillPeriod: msDuration(p.RefillPeriod),
		Available:    s.Available, Requested: d.Amount, Exceeded: s.Exceeded && !soft, Soft: soft,
	}
	if ls.Exceeded {
		ls.Never = s.Retry.Never
		ls.RetryAfter = msDuration(s.Retry.WaitMs)
	}
	return ls
}

// credit sends an unconditioned Adjust write that gives tokens back; a
// failure is logged, not returned (SPEC §6.9: rollbacks and refunds are
// best effort).
func (l *Limiter) credit(ctx context.Context, id schema.BucketID, mode AdjustMode, deltas []Declared, what string) {
	in, err := l.writes.Adjust(id, mode, deltas, false)
	if err == nil {
		_, err = l.db.UpdateItem(ctx, in)
	}
	if err != nil {
		l.log.WarnContext(ctx, what+" failed", "resource", id.Resource, "shard", id.Shard, "error", err)
	}
}

func negate(ds []Declared) []Declared {
	out := make([]Declared, len(ds))
	for i, d := range ds {
		out[i] = Declared{Name: d.Name, Amount: -d.Amount}
	}
	return out
}

// dbError marks a failed DynamoDB call: an infrastructure failure.
type dbError struct {
	op  string
	err error
}

func (e *dbError) Error() string { return e.op + ": " + e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }
