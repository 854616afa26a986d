package limiter

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// maxSlowPasses bounds the slow path's re-reads after a lost race (a create
// that met an existing item, a retry write that found a limit missing or vu
// passed, a cancelled transaction).
const maxSlowPasses = 4

// ErrContention reports a slow path that lost every race it ran and has no
// state to decide from. A slow path that read the bucket decides from it
// instead: contention is a verdict, never an outage (docs/decisions.md P26).
var ErrContention = errors.New("limiter: slow path lost its write race repeatedly")

// contentionRetry is the retry-after of a request the state showed covered
// but whose writes lost every race: other clients are spending the same
// tokens now, so the caller is asked back after a short, finite wait.
const contentionRetry = 100 * time.Millisecond

// slowPath is SPEC §6.8 on the drawn shard: read, materialise every limit,
// admit, and write under the rf lock (or create the shard). When the pair
// cascades, the parent's pass is prepared too and both writes go in one
// transaction.
//
// Every way of losing a race ends in a verdict (docs/decisions.md P26): a
// pass that must run again waits a jittered back-off first; a transaction
// conflict is retried after the back-offs of SPEC §6.8 step 7; when the
// passes or the back-offs run out, the request is rejected from the
// freshest state read (contended). Only DynamoDB failing is an error.
func (l *Limiter) slowPath(ctx context.Context, req *request, shard int) (*Lease, error) {
	conflicts := 0
	var verdict *RateLimitExceeded
	for pass := 0; pass < maxSlowPasses+conflicts; pass++ {
		lease, again, seen, err := l.slowPass(ctx, req, shard)
		if seen != nil {
			verdict = seen
		}
		var tc *transactionConflict
		switch {
		case errors.As(err, &tc) && conflicts < len(conflictBackoff):
			if err := l.sleep(ctx, conflictBackoff[conflicts]); err != nil {
				return nil, err
			}
			conflicts++
			continue
		case errors.As(err, &tc) && verdict != nil:
			return nil, verdict
		case !again:
			return lease, err
		}
		// Lost a race: let the winners through before reading again.
		if err := l.sleep(ctx, time.Duration(1+l.intn(8))*5*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if verdict != nil {
		return nil, verdict
	}
	return nil, &dbError{op: "slow path", err: ErrContention}
}

// contended is the verdict on a request whose writes lost their races, from
// the passes it read: every declared limit's status, each hard one marked
// exceeded — with its own retry-after when the state was short, and
// contentionRetry when the state covered it. Nil when no declared limit is
// hard (nothing to reject on).
func (l *Limiter) contended(passes ...*pass) *RateLimitExceeded {
	e := &RateLimitExceeded{}
	for _, p := range passes {
		if p == nil {
			continue
		}
		for _, pl := range p.plan {
			if !pl.declared {
				continue
			}
			st := pl.status
			if !pl.lim.Soft && !p.bypass && !st.Exceeded {
				st.Exceeded = true
				st.Retry = bucket.Retry{Short: true, WaitMs: contentionRetry.Milliseconds()}
			}
			e.Statuses = append(e.Statuses, l.status(p.req, Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
		}
	}
	if len(e.Violations()) == 0 {
		return nil
	}
	return e
}

// conflictBackoff is the wait before each retry after a TransactionConflict
// (SPEC §6.8 step 7, Appendix A).
var conflictBackoff = [...]time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

// transactionConflict marks a cascaded write cancelled by a conflicting
// transaction; the pass is retried after a back-off.
type transactionConflict struct{ err error }

func (e *transactionConflict) Error() string { return "transaction conflict: " + e.err.Error() }
func (e *transactionConflict) Unwrap() error { return e.err }

// planned is one limit of a slow pass: its config, the state read and the
// state to write.
type planned struct {
	lim      limit.Limit
	params   bucket.Params
	share    bucket.Share
	present  bool  // on the item (discovery rule)
	stored   int64 // tk read, millitokens
	balance  int64 // materialised at now, before consumption
	consumed int64 // millitokens this request takes
	declared bool
	amount   int64 // tokens requested (declared only)
	status   bucket.Status
}

// pass is one entity's side of a slow pass: what was read and decided, and
// the write that carries it.
type pass struct {
	req      *request // entity is this pass's entity
	id       schema.BucketID
	plan     []planned
	img      *bucket.Image // nil: the shard is missing and is created
	owner    config.Entity
	cascade  bool // the entity cascades on this resource (its owner stamp)
	shards   int64
	ttl      int64
	bypass   bool
	deadline int64
	now      int64
	// One of put (create) or update (rf-locked write) is set by build.
	put    map[string]types.AttributeValue
	update *updateBuilder
}

// slowPass runs one read-decide-write round. again asks for another round;
// seen is the verdict should the request lose every round (contended).
func (l *Limiter) slowPass(ctx context.Context, req *request, shard int) (lease *Lease, again bool, seen *RateLimitExceeded, err error) {
	child, err := l.prepare(ctx, req, shard)
	if err != nil {
		return nil, false, nil, err
	}
	var parent *pass
	if child.cascade {
		preq := req.forEntity(child.owner.ParentID)
		pshard, _ := l.drawShard(l.pairs.get(preq.entity, preq.resource).shardCount, new(shardSet))
		if parent, err = l.prepare(ctx, preq, pshard); err != nil {
			var dis *ResourceDisabled
			if errors.As(err, &dis) {
				dis.EntityID = preq.entity
			}
			return nil, false, nil, err
		}
	}
	if e := l.violations(child, parent); e != nil {
		return nil, false, nil, e
	}
	child.build()
	if parent == nil {
		lease, again, err = l.writeOne(ctx, child)
	} else {
		parent.build()
		lease, again, err = l.writeBoth(ctx, child, parent)
	}
	var tc *transactionConflict
	if again || errors.As(err, &tc) {
		seen = l.contended(child, parent)
	}
	return lease, again, seen, err
}

// forEntity is the same request made for another entity (the cascade parent).
func (r *request) forEntity(entity string) *request {
	c := *r
	c.entity = entity
	return &c
}

// prepare reads and plans one entity's side of a slow pass.
func (l *Limiter) prepare(ctx context.Context, req *request, shard int) (*pass, error) {
	limits, source, err := l.limitsFor(ctx, req)
	if err != nil {
		return nil, err
	}
	walk, err := l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource,
		config.AccessOptions{IncludeSystem: source == config.LevelSystem})
	if err != nil {
		return nil, err
	}
	if walk.Mode == config.AccessDisabled {
		return nil, &ResourceDisabled{EntityID: req.entity, Resource: req.resource, Level: walk.Level.String()}
	}
	if req.override == nil && len(walk.Limits) > 0 {
		limits = walk.Limits // fresher than the cache, soft flags included (§5.3)
	}
	for _, d := range req.declared {
		if _, ok := limit.Find(limits, d.Name); !ok {
			return nil, schema.NewValidationError(schema.FieldLimits, d.Name,
				"is not a limit of entity "+req.entity+" on resource "+req.resource)
		}
	}
	p := &pass{req: req, id: schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: shard}}
	meta, item, err := l.readMetaAndBucket(ctx, p.id)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		p.owner = config.DecodeEntity(meta)
	}
	p.cascade = config.EffectiveCascade(p.owner, walk.Cascade)
	p.now = l.nowMs()
	p.deadline = walk.ReadAt.UnixMilli() + l.stampTTL
	p.bypass = walk.Mode == config.AccessBypass
	p.shards = l.pairs.get(req.entity, req.resource).shardCount
	if item != nil {
		img, err := bucket.DecodeImage(item)
		if err != nil {
			return nil, err
		}
		if img.Phase2() {
			return nil, unsupportedItem("schedule, window, grant or top-up attributes")
		}
		p.img = &img
		l.learn(req, shard, p.img, p.now)
		p.shards = max(img.ShardCount, 1)
	}
	p.plan = l.plan(req, limits, p.img, p.shards, p.now)
	p.ttl = l.bucketTTL(limits, source, req.override != nil, p.now)
	return p, nil
}

// limitsFor resolves the pair's limits (cached) or takes the override.
func (l *Limiter) limitsFor(ctx context.Context, req *request) ([]limit.Limit, config.Level, error) {
	if req.override != nil {
		return req.override, config.LevelResource, nil
	}
	res, err := l.resolver.Resolve(ctx, l.ns, req.entity, req.resource)
	if err != nil {
		return nil, config.LevelNone, err
	}
	return res.Limits, res.Source, nil
}

// readMetaAndBucket reads the entity's META and the bucket shard in one
// eventually consistent BatchGetItem (SPEC §6.8 step 3).
func (l *Limiter) readMetaAndBucket(ctx context.Context, id schema.BucketID) (meta, item map[string]types.AttributeValue, err error) {
	metaKey := schema.EntityMetaKey(id.Namespace, id.Entity)
	keys := []map[string]types.AttributeValue{metaKey.AttributeValues(), id.Key().AttributeValues()}
	for attempt := 0; len(keys) > 0; attempt++ {
		if attempt > 0 {
			if err := l.sleep(ctx, backoff(attempt)); err != nil {
				return nil, nil, err
			}
		}
		if attempt > 5 {
			return nil, nil, &dbError{op: "slow path BatchGetItem", err: errors.New("keys left unprocessed")}
		}
		out, err := l.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			l.table: {Keys: keys},
		}})
		if err != nil {
			return nil, nil, &dbError{op: "slow path BatchGetItem", err: err}
		}
		for _, it := range out.Responses[l.table] {
			if s, ok := it[schema.AttrSK].(*types.AttributeValueMemberS); ok && s.Value == schema.SKState {
				item = it
			} else {
				meta = it
			}
		}
		keys = out.UnprocessedKeys[l.table].Keys
	}
	return meta, item, nil
}

// plan materialises every limit at now and applies the request to it.
func (l *Limiter) plan(req *request, limits []limit.Limit, img *bucket.Image, shards, now int64) []planned {
	out := make([]planned, 0, len(limits))
	for _, lim := range limits {
		p := lim.Params()
		pl := planned{lim: lim, params: p, share: bucket.Effective(p, shards)}
		if img != nil {
			if li := img.Limit(lim.Name); li != nil {
				pl.present, pl.stored = true, li.Tokens
				pl.balance, _ = bucket.Materialise(li.Tokens, img.RF, now, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
			}
		}
		if !pl.present {
			pl.balance = pl.share.Target
		}
		for _, d := range req.declared {
			if d.Name == lim.Name {
				pl.declared, pl.amount = true, d.Amount
				pl.consumed, _ = bucket.ToMilli(d.Amount)
			}
		}
		pl.status = bucket.Status{Balance: pl.balance, Available: bucket.Available(pl.balance)}
		if pl.declared && !lim.Soft && !bucket.Covers(pl.balance, pl.amount) {
			pl.status.Exceeded = true
			pl.status.Retry = bucket.DripRetryAfter(pl.balance, pl.amount, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
		}
		out = append(out, pl)
	}
	return out
}

// violations builds the rejection of a pass (and its parent's) when a
// declared hard limit is short. A bypassed side never rejects.
func (l *Limiter) violations(passes ...*pass) *RateLimitExceeded {
	short := false
	for _, p := range passes {
		if p == nil || p.bypass {
			continue
		}
		for _, pl := range p.plan {
			short = short || pl.status.Exceeded
		}
	}
	if !short {
		return nil
	}
	e := &RateLimitExceeded{}
	for _, p := range passes {
		if p == nil {
			continue
		}
		for _, pl := range p.plan {
			if pl.declared {
				st := pl.status
				st.Exceeded = st.Exceeded && !p.bypass
				e.Statuses = append(e.Statuses, l.status(p.req, Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
			}
		}
	}
	return e
}

// build sets the pass's write: the full item of a create, or the rf-locked
// update (SPEC §4.6, §6.8 step 6). A bypassed pass funds a create without
// debiting it, and on an existing shard only adds tc and renews the stamp
// (ADR-151 decision 6).
func (p *pass) build() {
	if p.img == nil {
		p.put = p.createItem()
		return
	}
	u := &updateBuilder{}
	p.update = u
	img := p.img
	if p.bypass {
		u.cond("attribute_exists(" + u.name(schema.AttrPK) + ")")
		u.set(schema.AttrBypass, schema.Num(p.deadline))
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, true)
			} else if pl.consumed != 0 {
				u.add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
			}
		}
	} else {
		// The rf lock, and the vu pin: a credit sets vu without moving rf
		// (docs/decisions.md P25).
		u.cond(u.name(schema.AttrRF) + " = " + u.value(schema.Num(img.RF)))
		vu := u.name(schema.AttrVU)
		if img.HasVU {
			u.cond(vu + " = " + u.value(schema.Num(img.VU)))
		} else {
			u.cond("attribute_not_exists(" + vu + ")")
		}
		rf := bucket.StampRF(img.RF, p.now)
		u.set(schema.AttrRF, schema.Num(rf))
		switch full := p.validUntil(rf); {
		case full != bucket.NeverFull:
			u.set(schema.AttrVU, schema.Num(full))
		case img.HasVU:
			u.remove(schema.AttrVU)
		}
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, false)
				continue
			}
			credited := pl.balance - pl.stored
			tk := schema.BucketAttr(pl.lim.Name, schema.LimitTokens)
			if d := credited - pl.consumed; d != 0 {
				u.add(tk, schema.Num(d))
			}
			if pl.consumed != 0 {
				u.add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
			}
			if floor := pl.consumed - credited; floor > 0 && !pl.lim.Soft {
				u.cond(u.name(tk) + " >= " + u.value(schema.Num(floor)))
			}
			if li := img.Limit(pl.lim.Name); li != nil && li.Params() != pl.params {
				setParams(u, pl)
			}
		}
		if img.WCU.Present() {
			s := bucket.Undivided(bucket.WCUParams())
			if _, credited := bucket.Materialise(img.WCU.Tokens, img.RF, p.now, s.Ceiling, s.Rate, s.Period); credited != 0 {
				u.add(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), schema.Num(credited))
			}
		}
		if img.Bypass.Present {
			u.remove(schema.AttrBypass)
		}
	}
	// Soft stamps follow the fresh config read (SPEC §8.4).
	for _, pl := range p.plan {
		attr := schema.BucketAttr(pl.lim.Name, schema.LimitSoft)
		li := img.Limit(pl.lim.Name)
		switch {
		case pl.lim.Soft:
			u.set(attr, schema.Num(p.deadline))
		case li != nil && li.Soft.Present:
			u.remove(attr)
		}
	}
	// Owner stamp, pinned to the parent generation read (ADR-150).
	pgen := u.name(schema.AttrPGen)
	u.cond("(attribute_not_exists(" + pgen + ") OR " + pgen + " <= " + u.value(schema.Num(p.owner.PGen)) + ")")
	u.set(schema.AttrPGen, schema.Num(p.owner.PGen))
	u.set(schema.AttrCascade, &types.AttributeValueMemberBOOL{Value: p.cascade})
	if p.owner.ParentID != "" {
		u.set(schema.AttrParentID, schema.Str(p.owner.ParentID))
	} else if img.HasParent {
		u.remove(schema.AttrParentID)
	}
	if img.HasDisabled {
		u.remove(schema.AttrDisabled)
	}
	switch {
	case p.ttl > 0:
		u.set(schema.AttrTTL, schema.Num(p.ttl))
	case img.HasTTL:
		u.remove(schema.AttrTTL)
	}
}

// validUntil is the vu a write of this pass that moves rf to rf stamps
// (docs/decisions.md P25): the first instant at which a hard dripping limit
// reaches its ceiling from the balance the write leaves, or
// bucket.NeverFull when no limit constrains it. Soft limits never reject,
// so their capped refill admits nothing; wcu only steers doubling.
func (p *pass) validUntil(rf int64) int64 {
	full := int64(bucket.NeverFull)
	for _, pl := range p.plan {
		if pl.lim.Soft || pl.share.Rate <= 0 {
			continue
		}
		left := pl.balance // the target share for a limit not on the item yet
		if !p.bypass {
			left -= pl.consumed
		}
		full = min(full, pl.share.FullAt(left, rf))
	}
	return full
}

// createItem is the full item of a new shard (SPEC §6.8 step 6, Create).
func (p *pass) createItem() map[string]types.AttributeValue {
	id := p.id
	item := schema.BucketItemKeys(id.Namespace, id.Entity, id.Resource, id.Shard).Item()
	item[schema.AttrEntityID] = schema.Str(id.Entity)
	item[schema.AttrResource] = schema.Str(id.Resource)
	item[schema.AttrRF] = schema.Num(p.now)
	item[schema.AttrShardCount] = schema.Num(p.shards)
	item[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: p.cascade}
	item[schema.AttrPGen] = schema.Num(p.owner.PGen)
	if p.owner.ParentID != "" {
		item[schema.AttrParentID] = schema.Str(p.owner.ParentID)
	}
	if p.ttl > 0 {
		item[schema.AttrTTL] = schema.Num(p.ttl)
	}
	if p.bypass {
		item[schema.AttrBypass] = schema.Num(p.deadline)
	}
	if full := p.validUntil(p.now); full != bucket.NeverFull {
		item[schema.AttrVU] = schema.Num(full)
	}
	for _, pl := range p.plan {
		tk := pl.share.Target
		if !p.bypass {
			tk -= pl.consumed
		}
		item[schema.BucketAttr(pl.lim.Name, schema.LimitTokens)] = schema.Num(tk)
		item[schema.BucketAttr(pl.lim.Name, schema.LimitConsumed)] = schema.Num(pl.consumed)
		item[schema.BucketAttr(pl.lim.Name, schema.LimitCapacity)] = schema.Num(pl.params.Capacity)
		item[schema.BucketAttr(pl.lim.Name, schema.LimitRefillAmount)] = schema.Num(pl.params.RefillAmount)
		item[schema.BucketAttr(pl.lim.Name, schema.LimitRefillPeriod)] = schema.Num(pl.params.RefillPeriod)
		if pl.lim.Soft {
			item[schema.BucketAttr(pl.lim.Name, schema.LimitSoft)] = schema.Num(p.deadline)
		}
	}
	w := bucket.WCUParams()
	item[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = schema.Num(w.Capacity)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitConsumed)] = schema.Num(0)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitCapacity)] = schema.Num(w.Capacity)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitRefillAmount)] = schema.Num(w.RefillAmount)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitRefillPeriod)] = schema.Num(w.RefillPeriod)
	return item
}

// part is the lease part of a written pass.
func (p *pass) part() leasePart {
	lp := leasePart{entity: p.id.Entity, shard: p.id.Shard, bypassed: p.bypass}
	for _, pl := range p.plan {
		if !pl.declared {
			continue
		}
		balance := pl.balance
		if !p.bypass {
			balance -= pl.consumed
		}
		lp.entries = append(lp.entries, leaseEntry{
			name: pl.lim.Name, initial: pl.amount, params: pl.params, share: pl.share, balance: balance, soft: pl.lim.Soft,
		})
	}
	return lp
}

// written records what a successful write teaches the caches.
func (l *Limiter) written(p *pass) {
	l.pairs.update(p.id.Entity, p.id.Resource, func(s *pairState) {
		s.shardCount = max(s.shardCount, p.shards)
		s.bypassed = p.bypass
		s.cascadeKnown, s.cascade, s.parentID = true, p.cascade, p.owner.ParentID
	})
}

// writeOne sends a single entity's write.
func (l *Limiter) writeOne(ctx context.Context, p *pass) (*Lease, bool, error) {
	var err error
	written := p.put
	if p.put != nil {
		_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(l.table), Item: p.put,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		})
	} else {
		var out *dynamodb.UpdateItemOutput
		if out, err = l.db.UpdateItem(ctx, p.update.input(l.table, p.id.Key())); err == nil {
			written = out.Attributes
		}
	}
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		switch {
		case !errors.As(err, &ccf):
			return nil, false, &dbError{op: "slow path write", err: err}
		case p.put != nil || p.bypass:
			return nil, true, nil // the shard appeared, or moved: read it again
		}
		return l.retryWrite(ctx, p)
	}
	if img, err := bucket.DecodeImage(written); err == nil && len(written) > 0 {
		l.learn(p.req, p.id.Shard, &img, p.now)
	}
	l.written(p)
	return &Lease{lim: l, resource: p.id.Resource, parts: []leasePart{p.part()}}, false, nil
}

// writeBoth sends a cascaded pair of writes in one transaction (SPEC §6.8
// step 6: 2 write units per item).
func (l *Limiter) writeBoth(ctx context.Context, child, parent *pass) (*Lease, bool, error) {
	items := make([]types.TransactWriteItem, 0, 2)
	for _, p := range []*pass{child, parent} {
		if p.put != nil {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName: aws.String(l.table), Item: p.put,
				ConditionExpression: aws.String("attribute_not_exists(PK)"),
			}})
			continue
		}
		items = append(items, transactUpdate(p.update.input(l.table, p.id.Key())))
	}
	cancelled, err := l.transact(ctx, "slow path transaction", items)
	switch {
	case err != nil:
		return nil, false, err
	case cancelled:
		return l.retryBoth(ctx, child, parent) // a lock or a create was lost
	}
	l.written(child)
	l.written(parent)
	return &Lease{lim: l, resource: child.id.Resource, parts: []leasePart{child.part(), parent.part()}}, false, nil
}

// transactUpdate is an UpdateItem request as a transaction item.
func transactUpdate(in *dynamodb.UpdateItemInput) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
		ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
		ExpressionAttributeValues: in.ExpressionAttributeValues,
	}}
}

// transact sends a TransactWriteItems built fresh for this call (the SDK
// writes its idempotency token into the input, docs/decisions.md P3).
// cancelled reports a cancellation for a failed condition; a
// TransactionConflict is a *transactionConflict error, retried by the slow
// path after a back-off; anything else is an infrastructure error.
func (l *Limiter) transact(ctx context.Context, op string, items []types.TransactWriteItem) (cancelled bool, err error) {
	_, err = l.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return false, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false, &dbError{op: op, err: err}
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return false, &transactionConflict{err: err}
		}
	}
	l.log.Debug("transaction cancelled", "op", op, "reasons", fmtReasons(tce.CancellationReasons))
	return true, nil
}

// retryBoth is the Retry shape for a cascaded pair (SPEC §6.8 step 7):
// consumption only on both shards, conditioned per hard limit, in one
// transaction. A cancellation asks for another pass, which reads the state
// again and rejects from it if it is short.
func (l *Limiter) retryBoth(ctx context.Context, child, parent *pass) (*Lease, bool, error) {
	items := make([]types.TransactWriteItem, 0, 2)
	now := l.nowMs()
	for _, p := range []*pass{child, parent} {
		var limits []RetryLimit
		for _, pl := range p.plan {
			if pl.declared {
				limits = append(limits, RetryLimit{Name: pl.lim.Name, Amount: pl.amount, Hard: !pl.lim.Soft && !p.bypass})
			}
		}
		mode := AdjustBoth
		var in *dynamodb.UpdateItemInput
		var err error
		if p.bypass {
			// A bypassed side adds tc only, unconditioned but for existence.
			mode = AdjustConsumed
			ds := make([]Declared, 0, len(limits))
			for _, r := range limits {
				ds = append(ds, Declared{Name: r.Name, Amount: r.Amount})
			}
			in, err = l.writes.Adjust(p.id, mode, ds, false, 0)
		} else {
			in, err = l.writes.Retry(p.id, limits, now)
		}
		if err != nil {
			return nil, false, err
		}
		items = append(items, transactUpdate(in))
	}
	cancelled, err := l.transact(ctx, "slow path retry transaction", items)
	switch {
	case err != nil:
		return nil, false, err
	case cancelled:
		return nil, true, nil
	}
	l.written(child)
	l.written(parent)
	return &Lease{lim: l, resource: child.id.Resource, parts: []leasePart{child.part(), parent.part()}}, false, nil
}

// seed adds a limit missing on the item (SPEC §6.8: seeds for resolved
// limits), conditioned on its absence.
func seed(u *updateBuilder, pl planned, bypass bool) {
	cp := schema.BucketAttr(pl.lim.Name, schema.LimitCapacity)
	u.cond("attribute_not_exists(" + u.name(cp) + ")")
	setParams(u, pl)
	tk := pl.share.Target
	if !bypass {
		tk -= pl.consumed
	}
	u.add(schema.BucketAttr(pl.lim.Name, schema.LimitTokens), schema.Num(tk))
	u.add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
}

func setParams(u *updateBuilder, pl planned) {
	u.set(schema.BucketAttr(pl.lim.Name, schema.LimitCapacity), schema.Num(pl.params.Capacity))
	u.set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillAmount), schema.Num(pl.params.RefillAmount))
	u.set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillPeriod), schema.Num(pl.params.RefillPeriod))
}

// retryWrite is the Retry shape after a lost rf lock (SPEC §6.8 step 7):
// consumption only, conditioned per hard limit. Its failure is a rejection
// built from the image it returns, unless a declared limit is missing
// there, which needs another pass.
func (l *Limiter) retryWrite(ctx context.Context, p *pass) (*Lease, bool, error) {
	var limits []RetryLimit
	for _, pl := range p.plan {
		if pl.declared {
			limits = append(limits, RetryLimit{Name: pl.lim.Name, Amount: pl.amount, Hard: !pl.lim.Soft})
		}
	}
	now := l.nowMs()
	in, err := l.writes.Retry(p.id, limits, now)
	if err != nil {
		return nil, false, err
	}
	out, err := l.db.UpdateItem(ctx, in)
	if err == nil {
		img, err := bucket.DecodeImage(out.Attributes)
		if err != nil {
			return nil, false, err
		}
		lp := leasePart{entity: p.id.Entity, shard: p.id.Shard}
		for _, pl := range p.plan {
			if !pl.declared {
				continue
			}
			e := leaseEntry{name: pl.lim.Name, initial: pl.amount, params: pl.params, share: pl.share, soft: pl.lim.Soft}
			if li := img.Limit(pl.lim.Name); li != nil {
				e.balance, _ = bucket.Materialise(li.Tokens, img.RF, now, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
			}
			lp.entries = append(lp.entries, e)
		}
		return &Lease{lim: l, resource: p.id.Resource, parts: []leasePart{lp}}, false, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false, &dbError{op: "slow path retry", err: err}
	}
	img, err := bucket.DecodeImage(ccf.Item)
	if err != nil || len(ccf.Item) == 0 || (img.HasVU && img.VU <= now) {
		return nil, true, nil // gone, or past vu: a debit needs a new pass
	}
	e := &RateLimitExceeded{}
	for _, pl := range p.plan {
		if !pl.declared {
			continue
		}
		li := img.Limit(pl.lim.Name)
		if li == nil {
			return nil, true, nil
		}
		st := bucket.Check(li.Tokens, img.RF, now, pl.share, pl.amount)
		if pl.lim.Soft {
			st.Exceeded = false
		}
		e.Statuses = append(e.Statuses, l.status(p.req, Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
	}
	if len(e.Violations()) == 0 {
		return nil, true, nil // the shortfall is gone by now: run again
	}
	return nil, false, e
}

// bucketTTL is SPEC §2.5: no TTL for entity-configured limits; otherwise
// now + the longest recovery time × the multiplier, in epoch seconds.
// Zero means no TTL.
func (l *Limiter) bucketTTL(limits []limit.Limit, source config.Level, override bool, now int64) int64 {
	if l.ttlMultiplier == 0 || (!override && (source == config.LevelEntity || source == config.LevelEntityDefault)) {
		return 0
	}
	var horizon int64 // seconds
	for _, lim := range limits {
		horizon = max(horizon, recoverySeconds(lim.Params()))
	}
	return now/1000 + horizon*l.ttlMultiplier
}

// recoverySeconds is the time an empty limit takes to refill to capacity,
// cp / ra × rp, in whole seconds rounded up only when not whole (60 s for
// 100 a minute; 0 for a limit that does not drip).
func recoverySeconds(p bucket.Params) int64 {
	if p.RefillAmount <= 0 || p.RefillPeriod <= 0 || p.Capacity <= 0 {
		return 0
	}
	return bucket.CeilDiv(bucket.CeilMulDiv(p.Capacity, p.RefillPeriod, p.RefillAmount), 1000)
}

// updateBuilder assembles an UpdateItem with positional aliases only
// (SPEC §19 rule 2): #a0, #a1 … for names, :v0, :v1 … for values.
type updateBuilder struct {
	names               map[string]string // attribute → alias
	aliases             map[string]string // alias → attribute
	values              map[string]types.AttributeValue
	sets, adds, removes []string
	conds               []string
}

func (u *updateBuilder) name(attr string) string {
	if a, ok := u.names[attr]; ok {
		return a
	}
	if u.names == nil {
		u.names, u.aliases = map[string]string{}, map[string]string{}
	}
	a := "#a" + strconv.Itoa(len(u.names))
	u.names[attr], u.aliases[a] = a, attr
	return a
}

func (u *updateBuilder) value(v types.AttributeValue) string {
	if u.values == nil {
		u.values = map[string]types.AttributeValue{}
	}
	a := ":v" + strconv.Itoa(len(u.values))
	u.values[a] = v
	return a
}

func (u *updateBuilder) set(attr string, v types.AttributeValue) {
	u.sets = append(u.sets, u.name(attr)+" = "+u.value(v))
}
func (u *updateBuilder) add(attr string, v types.AttributeValue) {
	u.adds = append(u.adds, u.name(attr)+" "+u.value(v))
}
func (u *updateBuilder) remove(attr string) { u.removes = append(u.removes, u.name(attr)) }
func (u *updateBuilder) cond(c string)      { u.conds = append(u.conds, c) }

func (u *updateBuilder) input(table string, key schema.Key) *dynamodb.UpdateItemInput {
	var expr []string
	if len(u.sets) > 0 {
		expr = append(expr, "SET "+strings.Join(u.sets, ", "))
	}
	if len(u.adds) > 0 {
		expr = append(expr, "ADD "+strings.Join(u.adds, ", "))
	}
	if len(u.removes) > 0 {
		expr = append(expr, "REMOVE "+strings.Join(u.removes, ", "))
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key.AttributeValues(),
		UpdateExpression:         aws.String(strings.Join(expr, " ")),
		ExpressionAttributeNames: u.aliases, ExpressionAttributeValues: u.values,
		ReturnValues: types.ReturnValueAllNew,
	}
	if len(u.conds) > 0 {
		in.ConditionExpression = aws.String(strings.Join(u.conds, " AND "))
	}
	return in
}

// backoff is the wait before retry attempt n of a read (25, 50, 100 ms …).
func backoff(n int) time.Duration { return time.Duration(25<<min(n-1, 5)) * time.Millisecond }

func fmtReasons(rs []types.CancellationReason) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(aws.ToString(r.Code))
		if r.Message != nil {
			b.WriteString("(" + *r.Message + ")")
		}
	}
	return b.String()
}
