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
// that met an existing item, or a retry write that found a limit missing).
const maxSlowPasses = 3

// ErrContention reports a slow path that lost every race it ran.
var ErrContention = errors.New("limiter: slow path lost its write race repeatedly")

// slowPath is SPEC §6.8 on the drawn shard: read, materialise every limit,
// admit, and write under the rf lock (or create the shard).
func (l *Limiter) slowPath(ctx context.Context, req *request, shard int) (*Lease, error) {
	for pass := 0; pass < maxSlowPasses; pass++ {
		lease, again, err := l.slowPass(ctx, req, shard)
		if !again {
			return lease, err
		}
	}
	return nil, &dbError{op: "slow path", err: ErrContention}
}

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

// slowPass runs one read-decide-write round. again asks for another round.
func (l *Limiter) slowPass(ctx context.Context, req *request, shard int) (lease *Lease, again bool, err error) {
	limits, source, err := l.limitsFor(ctx, req)
	if err != nil {
		return nil, false, err
	}
	walk, err := l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource,
		config.AccessOptions{IncludeSystem: source == config.LevelSystem})
	if err != nil {
		return nil, false, err
	}
	if walk.Mode == config.AccessDisabled {
		return nil, false, &ResourceDisabled{EntityID: req.entity, Resource: req.resource, Level: walk.Level.String()}
	}
	if req.override == nil && len(walk.Limits) > 0 {
		limits = walk.Limits // fresher than the cache, soft flags included (§5.3)
	}
	for _, d := range req.declared {
		if _, ok := limit.Find(limits, d.Name); !ok {
			return nil, false, schema.NewValidationError(schema.FieldLimits, d.Name,
				"is not a limit of entity "+req.entity+" on resource "+req.resource)
		}
	}
	id := schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: shard}
	meta, item, err := l.readMetaAndBucket(ctx, id)
	if err != nil {
		return nil, false, err
	}
	var owner config.Entity
	if meta != nil {
		owner = config.DecodeEntity(meta)
	}
	if config.EffectiveCascade(owner, walk.Cascade) {
		return nil, false, ErrCascadeUnsupported
	}
	now := l.nowMs()
	deadline := walk.ReadAt.UnixMilli() + l.stampTTL
	bypass := walk.Mode == config.AccessBypass

	var img *bucket.Image
	shards := l.pairs.get(req.entity, req.resource).shardCount
	if item != nil {
		decoded, err := bucket.DecodeImage(item)
		if err != nil {
			return nil, false, err
		}
		if decoded.Phase2() {
			return nil, false, unsupportedItem("schedule, window, grant or top-up attributes")
		}
		img = &decoded
		l.learn(req, img, now)
		shards = max(img.ShardCount, 1)
	}
	plan := l.plan(req, limits, img, shards, now)
	if !bypass {
		if e := l.violations(req, plan); e != nil {
			return nil, false, e
		}
	}
	ttl := l.bucketTTL(limits, source, req.override != nil, now)
	if img == nil {
		return l.create(ctx, req, id, plan, owner, shards, ttl, bypass, deadline, now)
	}
	return l.update(ctx, req, id, img, plan, owner, ttl, bypass, deadline, now)
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

// violations builds the rejection of a plan with a short hard limit.
func (l *Limiter) violations(req *request, plan []planned) *RateLimitExceeded {
	short := false
	for _, p := range plan {
		short = short || p.status.Exceeded
	}
	if !short {
		return nil
	}
	e := &RateLimitExceeded{}
	for _, p := range plan {
		if p.declared {
			e.Statuses = append(e.Statuses, l.status(req, Declared{Name: p.lim.Name, Amount: p.amount}, p.params, p.lim.Soft, p.status))
		}
	}
	return e
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
		p := lim.Params()
		if p.RefillAmount <= 0 {
			continue
		}
		// Recovery time cp / ra × rp, rounded up to whole seconds.
		ms, _ := bucket.MulDiv(p.Capacity, p.RefillPeriod, p.RefillAmount)
		horizon = max(horizon, bucket.CeilDiv(ms+1, 1000))
	}
	return now/1000 + horizon*l.ttlMultiplier
}

// create puts the whole shard (SPEC §6.8 step 6, Create).
func (l *Limiter) create(ctx context.Context, req *request, id schema.BucketID, plan []planned, owner config.Entity,
	shards, ttl int64, bypass bool, deadline, now int64) (*Lease, bool, error) {
	item := schema.BucketItemKeys(id.Namespace, id.Entity, id.Resource, id.Shard).Item()
	item[schema.AttrEntityID] = str(id.Entity)
	item[schema.AttrResource] = str(id.Resource)
	item[schema.AttrRF] = num(now)
	item[schema.AttrShardCount] = num(shards)
	item[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: false}
	item[schema.AttrPGen] = num(owner.PGen)
	if owner.ParentID != "" {
		item[schema.AttrParentID] = str(owner.ParentID)
	}
	if ttl > 0 {
		item[schema.AttrTTL] = num(ttl)
	}
	if bypass {
		item[schema.AttrBypass] = num(deadline)
	}
	for _, p := range plan {
		tk := p.share.Target
		if !bypass {
			tk -= p.consumed
		}
		item[schema.BucketAttr(p.lim.Name, schema.LimitTokens)] = num(tk)
		item[schema.BucketAttr(p.lim.Name, schema.LimitConsumed)] = num(p.consumed)
		item[schema.BucketAttr(p.lim.Name, schema.LimitCapacity)] = num(p.params.Capacity)
		item[schema.BucketAttr(p.lim.Name, schema.LimitRefillAmount)] = num(p.params.RefillAmount)
		item[schema.BucketAttr(p.lim.Name, schema.LimitRefillPeriod)] = num(p.params.RefillPeriod)
		if p.lim.Soft {
			item[schema.BucketAttr(p.lim.Name, schema.LimitSoft)] = num(deadline)
		}
	}
	w := bucket.WCUParams()
	item[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = num(w.Capacity)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitConsumed)] = num(0)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitCapacity)] = num(w.Capacity)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitRefillAmount)] = num(w.RefillAmount)
	item[schema.BucketAttr(schema.WCULimit, schema.LimitRefillPeriod)] = num(w.RefillPeriod)
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return nil, true, nil // another writer created the shard: read it again
		}
		return nil, false, &dbError{op: "slow path create", err: err}
	}
	l.pairs.learnShardCount(id.Entity, id.Resource, shards)
	return l.slowLease(req, id, plan, bypass, func(p planned) int64 { return p.balance - p.consumed }), false, nil
}

// update is the rf-locked Normal write (SPEC §4.6, §6.8 step 6), or the
// bypass pass on an existing shard.
func (l *Limiter) update(ctx context.Context, req *request, id schema.BucketID, img *bucket.Image, plan []planned,
	owner config.Entity, ttl int64, bypass bool, deadline, now int64) (*Lease, bool, error) {
	var u updateBuilder
	if bypass {
		u.cond("attribute_exists(" + u.name(schema.AttrPK) + ")")
		u.set(schema.AttrBypass, num(deadline))
		for _, p := range plan {
			if !p.present {
				l.seed(&u, p, true)
			} else if p.consumed != 0 {
				u.add(schema.BucketAttr(p.lim.Name, schema.LimitConsumed), num(p.consumed))
			}
		}
	} else {
		u.cond(u.name(schema.AttrRF) + " = " + u.value(num(img.RF)))
		u.set(schema.AttrRF, num(bucket.StampRF(img.RF, now)))
		for _, p := range plan {
			if !p.present {
				l.seed(&u, p, false)
				continue
			}
			credited := p.balance - p.stored
			tk := schema.BucketAttr(p.lim.Name, schema.LimitTokens)
			if d := credited - p.consumed; d != 0 {
				u.add(tk, num(d))
			}
			if p.consumed != 0 {
				u.add(schema.BucketAttr(p.lim.Name, schema.LimitConsumed), num(p.consumed))
			}
			if floor := p.consumed - credited; floor > 0 && !p.lim.Soft {
				u.cond(u.name(tk) + " >= " + u.value(num(floor)))
			}
			if li := img.Limit(p.lim.Name); li != nil && li.Params() != p.params {
				l.setParams(&u, p)
			}
		}
		if img.WCU.Present() {
			s := bucket.Undivided(bucket.WCUParams())
			_, credited := bucket.Materialise(img.WCU.Tokens, img.RF, now, s.Ceiling, s.Rate, s.Period)
			if credited != 0 {
				u.add(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), num(credited))
			}
		}
		if img.Bypass.Present {
			u.remove(schema.AttrBypass)
		}
	}
	// Soft stamps follow the fresh config read (SPEC §8.4).
	for _, p := range plan {
		attr := schema.BucketAttr(p.lim.Name, schema.LimitSoft)
		li := img.Limit(p.lim.Name)
		switch {
		case p.lim.Soft:
			u.set(attr, num(deadline))
		case li != nil && li.Soft.Present:
			u.remove(attr)
		}
	}
	// Owner stamp, pinned to the parent generation read (ADR-150).
	pgen := u.name(schema.AttrPGen)
	u.cond("(attribute_not_exists(" + pgen + ") OR " + pgen + " <= " + u.value(num(owner.PGen)) + ")")
	u.set(schema.AttrPGen, num(owner.PGen))
	u.set(schema.AttrCascade, &types.AttributeValueMemberBOOL{Value: false})
	if owner.ParentID != "" {
		u.set(schema.AttrParentID, str(owner.ParentID))
	} else if img.HasParent {
		u.remove(schema.AttrParentID)
	}
	if img.HasDisabled {
		u.remove(schema.AttrDisabled)
	}
	if img.HasVU {
		u.remove(schema.AttrVU)
	}
	switch {
	case ttl > 0:
		u.set(schema.AttrTTL, num(ttl))
	case img.HasTTL:
		u.remove(schema.AttrTTL)
	}
	in := u.input(l.table, id.Key())
	if _, err := l.db.UpdateItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, false, &dbError{op: "slow path update", err: err}
		}
		if bypass {
			return nil, true, nil
		}
		return l.retryWrite(ctx, req, id, plan)
	}
	balanceAfter := func(p planned) int64 {
		if bypass {
			return p.balance
		}
		return p.balance - p.consumed
	}
	return l.slowLease(req, id, plan, bypass, balanceAfter), false, nil
}

// seed adds a limit missing on the item (SPEC §6.8: seeds for resolved
// limits), conditioned on its absence.
func (l *Limiter) seed(u *updateBuilder, p planned, bypass bool) {
	cp := schema.BucketAttr(p.lim.Name, schema.LimitCapacity)
	u.cond("attribute_not_exists(" + u.name(cp) + ")")
	l.setParams(u, p)
	tk := p.share.Target
	if !bypass {
		tk -= p.consumed
	}
	u.add(schema.BucketAttr(p.lim.Name, schema.LimitTokens), num(tk))
	u.add(schema.BucketAttr(p.lim.Name, schema.LimitConsumed), num(p.consumed))
}

func (l *Limiter) setParams(u *updateBuilder, p planned) {
	u.set(schema.BucketAttr(p.lim.Name, schema.LimitCapacity), num(p.params.Capacity))
	u.set(schema.BucketAttr(p.lim.Name, schema.LimitRefillAmount), num(p.params.RefillAmount))
	u.set(schema.BucketAttr(p.lim.Name, schema.LimitRefillPeriod), num(p.params.RefillPeriod))
}

// retryWrite is the Retry shape after a lost rf lock (SPEC §6.8 step 7):
// consumption only, conditioned per hard limit. Its failure is a rejection
// built from the image it returns, unless a declared limit is missing
// there, which needs another pass.
func (l *Limiter) retryWrite(ctx context.Context, req *request, id schema.BucketID, plan []planned) (*Lease, bool, error) {
	var limits []RetryLimit
	for _, p := range plan {
		if p.declared {
			limits = append(limits, RetryLimit{Name: p.lim.Name, Amount: p.amount, Hard: !p.lim.Soft})
		}
	}
	in, err := l.writes.Retry(id, limits)
	if err != nil {
		return nil, false, err
	}
	now := l.nowMs()
	out, err := l.db.UpdateItem(ctx, in)
	if err == nil {
		img, err := bucket.DecodeImage(out.Attributes)
		if err != nil {
			return nil, false, err
		}
		lease := &Lease{lim: l, entity: req.entity, resource: req.resource, shard: id.Shard}
		for _, p := range plan {
			if !p.declared {
				continue
			}
			e := leaseEntry{name: p.lim.Name, initial: p.amount, params: p.params, share: p.share, soft: p.lim.Soft}
			if li := img.Limit(p.lim.Name); li != nil {
				e.balance, _ = bucket.Materialise(li.Tokens, img.RF, now, p.share.Ceiling, p.share.Rate, p.share.Period)
			}
			lease.entries = append(lease.entries, e)
		}
		return lease, false, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false, &dbError{op: "slow path retry", err: err}
	}
	img, err := bucket.DecodeImage(ccf.Item)
	if err != nil || len(ccf.Item) == 0 {
		return nil, true, nil
	}
	e := &RateLimitExceeded{}
	for _, p := range plan {
		if !p.declared {
			continue
		}
		li := img.Limit(p.lim.Name)
		if li == nil {
			return nil, true, nil
		}
		st := bucket.Check(li.Tokens, img.RF, now, p.share, p.amount)
		if p.lim.Soft {
			st.Exceeded = false
		}
		e.Statuses = append(e.Statuses, l.status(req, Declared{Name: p.lim.Name, Amount: p.amount}, p.params, p.lim.Soft, st))
	}
	if len(e.Violations()) == 0 {
		return nil, true, nil // the shortfall is gone by now: run again
	}
	return nil, false, e
}

// slowLease builds the committed lease of a slow-path write.
func (l *Limiter) slowLease(req *request, id schema.BucketID, plan []planned, bypass bool, balance func(planned) int64) *Lease {
	lease := &Lease{lim: l, entity: req.entity, resource: req.resource, shard: id.Shard, bypassed: bypass}
	for _, p := range plan {
		if p.declared {
			lease.entries = append(lease.entries, leaseEntry{
				name: p.lim.Name, initial: p.amount, params: p.params, share: p.share,
				balance: balance(p), soft: p.lim.Soft,
			})
		}
	}
	if bypass {
		l.pairs.update(req.entity, req.resource, func(s *pairState) { s.bypassed = true })
	}
	return lease
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

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// backoff is the wait before retry attempt n of a read (25, 50, 100 ms …).
func backoff(n int) time.Duration { return time.Duration(25<<min(n-1, 5)) * time.Millisecond }
