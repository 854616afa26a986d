package limiter

// The read-then-write path (the slow path of docs/design.md §5, step 3):
// read the access settings uncached and the bucket, decide, and write under
// the rf lock, pass after pass until a write lands or the request is decided
// from the freshest state read.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/internal/shard"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// maxPasses bounds the read-then-write path's re-reads after a lost race
// (a create that met an existing item, a retry write that found a limit
// missing or vu passed, a cancelled transaction); refill passes and the
// parent-only pass take the same bound.
const maxPasses = 4

// errContention reports a slow path that lost every race it ran and has no
// state to decide from. A slow path that read the bucket decides from it
// instead: contention is a verdict, never an outage (docs/decisions.md P26).
var errContention = errors.New("limiter: slow path lost its write race repeatedly")

// readThenWrite is the slow path of docs/design.md §5 on the drawn shard:
// read, materialise every limit, admit, and write under the rf lock (or
// create the shard). When the pair cascades, the parent's pass is prepared
// too and both writes go in one transaction.
//
// Every way of losing a race ends in a verdict (docs/decisions.md P26): a
// pass that must run again waits a jittered back-off first; a transaction
// conflict is retried after the back-offs of docs/design.md §5; when the
// passes or the back-offs run out, the request is rejected from the
// freshest state read (contended). Only DynamoDB failing is an error.
func (l *Limiter) readThenWrite(ctx context.Context, req *request, shard int) (*Lease, error) {
	req.path = pathSlow
	conflicts := 0
	var verdict *RateLimitExceeded
	for pass := 0; pass < maxPasses+conflicts; pass++ {
		lease, again, seen, err := l.readWritePass(ctx, req, shard)
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
	return nil, &dbError{op: "slow path", err: errContention}
}

// conflictBackoff is the wait before each retry after a TransactionConflict
// (docs/design.md §5).
var conflictBackoff = [...]time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

// transactionConflict marks a cascaded write cancelled by a conflicting
// transaction; the pass is retried after a back-off.
type transactionConflict struct{ err error }

func (e *transactionConflict) Error() string { return "transaction conflict: " + e.err.Error() }

func (e *transactionConflict) Unwrap() error { return e.err }

// readWritePass runs one read-decide-write round of readThenWrite. again
// asks for another round; seen is the verdict should the request lose every
// round (contended).
func (l *Limiter) readWritePass(ctx context.Context, req *request, shard int) (lease *Lease, again bool, seen *RateLimitExceeded, err error) {
	child, err := l.prepare(ctx, req, shard)
	if errors.Is(err, errLostRace) {
		return nil, true, nil, nil
	}
	if err != nil {
		return nil, false, nil, err
	}
	var parent *pass
	if child.cascade {
		preq := req.forEntity(child.owner.ParentID)
		pshard, _ := l.drawShard(l.pairs.get(preq.entity, preq.resource).shardCount, new(shardSet))
		if parent, err = l.prepare(ctx, preq, pshard); errors.Is(err, errLostRace) {
			return nil, true, nil, nil
		} else if err != nil {
			var dis *ResourceDisabled
			if errors.As(err, &dis) {
				dis.EntityID = preq.entity
			}
			return nil, false, nil, err
		}
	}
	if e := l.violations(child, parent); e != nil {
		// A rejected pass still read config uncached: stamps it disagrees
		// with are fixed before the 429 (ADR-151 decision 4).
		l.fixStamps(ctx, child)
		l.fixStamps(ctx, parent)
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

// prepare reads and plans one entity's side of a slow pass.
//
// The limits are those the access walk reads (fresher than the cache).
// When the shard read shows limits that differ from them, limits to seed,
// or a recheck stamp whose deadline has come, the config is read again,
// strongly consistent, after the shard: a write of parameters is never built from a config read
// older than the shard it replaces (docs/decisions.md P58). A shard whose
// limits differ from that read is first brought in line by the shard
// model's rf-locked write (reconcile), and the pass plans from the image
// it leaves.
func (l *Limiter) prepare(ctx context.Context, req *request, slot int) (*pass, error) {
	limits, source, err := l.limitsFor(ctx, req)
	if err != nil {
		return nil, err
	}
	walk, err := l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource,
		config.AccessOptions{IncludeSystem: source == config.LevelSystem})
	if err != nil {
		return nil, err
	}
	if req.override == nil && len(walk.Limits) == 0 && source != config.LevelSystem {
		// The cached limits came from a level that has none now: read the
		// system level too.
		if walk, err = l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource, config.AccessOptions{IncludeSystem: true}); err != nil {
			return nil, err
		}
	}
	if req.override == nil {
		if len(walk.Limits) == 0 {
			return nil, schema.NewValidationError(schema.FieldLimits, req.entity+"/"+req.resource,
				"no limits configured at entity, entity default, resource or system level")
		}
		limits, source = walk.Limits, walk.Source // fresher than the cache, soft flags included (docs/design.md §7)
	}
	if err := walkAllows(req, walk, limits, source); err != nil {
		return nil, err
	}
	p := &pass{req: req, id: schema.BucketID{Namespace: l.ns, Entity: req.entity, Resource: req.resource, Shard: slot},
		mark: l.rejects.mark(req.entity, req.resource)}
	meta, item, err := l.readMetaAndBucket(ctx, p.id)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		p.owner = config.DecodeEntity(meta)
	}
	p.now = l.nowMs()
	p.recheck = p.now + l.stampTTL
	p.shards = l.pairs.get(req.entity, req.resource).shardCount
	if item != nil {
		img, err := bucketitem.Decode(item)
		if err != nil {
			return nil, err
		}
		p.img = &img
		l.pairs.learnImage(req.entity, req.resource, slot, p.img, p.now)
		l.rejects.remember(p.id, p.img, p.mark)
		p.shards = max(img.ShardCount, 1)
	}
	if p.img != nil && req.override == nil {
		d := shard.Compare(p.img, limits, source.EntityLevel(), l.ttlMultiplier)
		if len(d.Changed)+len(d.Extra)+len(d.Missing) > 0 || (d.Unchecked && p.img.Recheck <= p.now) {
			// Parameters to write: the config read again, after the shard.
			if walk, err = l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource,
				config.AccessOptions{Consistent: true, IncludeSystem: true}); err != nil {
				return nil, err
			}
			limits, source = walk.Limits, walk.Source
			if err := walkAllows(req, walk, limits, source); err != nil {
				return nil, err
			}
			p.verified = true
			if d = shard.Compare(p.img, limits, source.EntityLevel(), l.ttlMultiplier); len(d.Changed)+len(d.Extra) > 0 {
				if err := l.reconcile(ctx, p, walk); err != nil {
					return nil, err
				}
			}
		}
	}
	p.cascade = config.EffectiveCascade(p.owner, walk.Cascade)
	p.deadline = walk.ReadAt.UnixMilli() + l.stampTTL
	p.bypass = walk.Mode == config.AccessBypass
	p.plan = l.plan(req, limits, p.img, p.shards, p.now)
	if err := l.fund(ctx, p, func(shards int64) {
		p.shards = shards
		p.plan = l.plan(req, limits, p.img, shards, p.now)
	}); err != nil {
		return nil, err
	}
	p.ttl = l.bucketTTL(limits, source, req.override != nil, p.now)
	return p, nil
}

// walkAllows refuses a request the walk says no to: a disabled pair
// (403), or declared limits the pair's limits lack.
func walkAllows(req *request, walk config.Walk, limits []limit.Limit, source config.Level) error {
	if walk.Mode == config.AccessDisabled {
		return &ResourceDisabled{EntityID: req.entity, Resource: req.resource, Level: walk.Level.String()}
	}
	var missing []string
	for _, d := range req.declared {
		if _, ok := limit.Find(limits, d.Name); !ok {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	e := &LimitNotConfiguredError{EntityID: req.entity, Resource: req.resource, Limits: missing, Level: source.String()}
	if req.override != nil {
		e.Level = "call"
	}
	for _, l := range limits {
		e.Configured = append(e.Configured, l.Name)
	}
	return e
}

// errLostRace reports a write of a slow pass's preparation that another
// writer's beat: the pass is run again from a fresh read.
var errLostRace = errors.New("limiter: another writer moved the bucket first")

// reconcile brings the pass's shard in line with walk, read after it
// (docs/design.md §8): the shard model's materialisation at the shard's
// own parameters up to now, the configured ones from then on, in one
// rf-locked write whose new image the pass then plans from. A lost pin
// is errLostRace. A quota's reset edge on a shard other than 0 is sized
// at the count shard 0 holds.
func (l *Limiter) reconcile(ctx context.Context, p *pass, walk config.Walk) error {
	sp, err := shard.Materialise(p.id, p.img, p.shards, p.now)
	if err != nil {
		return err
	}
	if p.id.Shard > 0 && slices.ContainsFunc(sp.Limits, func(lp shard.Limit) bool { return lp.Pass.Reset }) {
		count, err := l.readShardCount(ctx, p.id)
		if err != nil {
			return err
		}
		if count > sp.S {
			if sp, err = shard.Materialise(p.id, p.img, count, p.now); err != nil {
				return err
			}
		}
	}
	if err := sp.Reconfigure(walk.Limits, true); err != nil {
		return err
	}
	in := sp.Update(shard.Write{
		PinVU: true, Deadline: walk.ReadAt.UnixMilli() + l.stampTTL, ClearRecheck: true,
		SetTTL: true, TTL: l.bucketTTL(walk.Limits, walk.Source, false, sp.At),
	}).UpdateInput(l.table, p.id.Key())
	in.ReturnValues = types.ReturnValueAllNew
	out, err := l.db.UpdateItem(ctx, in)
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return errLostRace
		}
		return &dbError{op: "limits reconcile", err: err}
	}
	img, err := bucketitem.Decode(out.Attributes)
	if err != nil {
		return err
	}
	p.img = &img
	p.now = max(p.now, l.nowMs())
	p.shards = max(p.shards, img.ShardCount, sp.S)
	l.pairs.learnImage(p.id.Entity, p.id.Resource, p.id.Shard, p.img, p.now)
	l.rejects.remember(p.id, p.img, p.mark)
	return nil
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
// eventually consistent BatchGetItem (docs/design.md §5).
func (l *Limiter) readMetaAndBucket(ctx context.Context, id schema.BucketID) (meta, item map[string]types.AttributeValue, err error) {
	metaKey := schema.EntityMetaKey(id.Namespace, id.Entity)
	keys := []map[string]types.AttributeValue{metaKey.AttributeValues(), id.Key().AttributeValues()}
	err = l.batchGet(ctx, "slow path BatchGetItem", keys, false, func(it map[string]types.AttributeValue) error {
		if s, ok := it[schema.AttrSK].(*types.AttributeValueMemberS); ok && s.Value == schema.SKState {
			item = it
		} else {
			meta = it
		}
		return nil
	})
	return meta, item, err
}

// batchGet reads keys (at most 100) in BatchGetItem calls, strongly
// consistent when consistent is set, asking again for the keys left
// unprocessed after the back-offs of docs/design.md §5 (five at most),
// and hands every item found to each. A failed call or keys still left
// are a *dbError naming op; an error of each stops the read.
func (l *Limiter) batchGet(ctx context.Context, op string, keys []map[string]types.AttributeValue, consistent bool, each func(map[string]types.AttributeValue) error) error {
	for attempt := 0; len(keys) > 0; attempt++ {
		if attempt > 0 {
			if err := l.sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
		}
		if attempt > 5 {
			return &dbError{op: op, err: errors.New("keys left unprocessed")}
		}
		ka := types.KeysAndAttributes{Keys: keys}
		if consistent {
			ka.ConsistentRead = aws.Bool(true)
		}
		out, err := l.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{l.table: ka}})
		if err != nil {
			return &dbError{op: op, err: err}
		}
		for _, it := range out.Responses[l.table] {
			if err := each(it); err != nil {
				return err
			}
		}
		keys = out.UnprocessedKeys[l.table].Keys
	}
	return nil
}

// written records what a successful write teaches the caches, and fans
// out the session windows it opened.
func (l *Limiter) written(ctx context.Context, p *pass) {
	l.fanOut(ctx, p)
	l.pairs.update(p.id.Entity, p.id.Resource, func(s *pairState) {
		s.shardCount = max(s.shardCount, p.shards)
		s.bypassed = p.bypass
		s.cascadeKnown, s.cascade, s.parentID = true, p.cascade, p.owner.ParentID
	})
}

// writeOne sends a single entity's write.
func (l *Limiter) writeOne(ctx context.Context, p *pass) (*Lease, bool, error) {
	if len(p.moves) > 0 || p.countCheck {
		return l.writeFunded(ctx, p, nil)
	}
	var err error
	written := p.put
	if p.put != nil {
		_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(l.table), Item: p.put,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		})
	} else {
		var out *dynamodb.UpdateItemOutput
		if out, err = l.db.UpdateItem(ctx, p.update.UpdateInput(l.table, p.id.Key())); err == nil {
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
	if img, err := bucketitem.Decode(written); err == nil && len(written) > 0 {
		l.pairs.learnImage(p.req.entity, p.req.resource, p.id.Shard, &img, p.now)
		l.rejects.remember(p.id, &img, p.mark)
	}
	l.written(ctx, p)
	return &Lease{lim: l, resource: p.id.Resource, parts: []leasePart{p.part()}}, false, nil
}

// writeFunded sends a pass's write (and its parent's, when cascading)
// with the quota moves they take off siblings and the check of shard 0's
// count a fresh grant rests on, in one transaction (ADR-145). A cancellation asks for another pass; one that a move's
// condition caused is counted, so that the next pass starts a covered
// slot empty instead of moving again and again.
func (l *Limiter) writeFunded(ctx context.Context, child, parent *pass) (*Lease, bool, error) {
	passes := []*pass{child}
	if parent != nil {
		passes = append(passes, parent)
	}
	items := make([]types.TransactWriteItem, 0, 4)
	for _, p := range passes {
		items = append(items, p.transactItem(l.table))
	}
	own := len(items)
	for _, p := range passes {
		for i := range p.moves {
			m := &p.moves[i]
			items = append(items, transactUpdate(grant.Update(l.table, m.donor, m.debits, m.edge)))
		}
	}
	moves := len(items)
	for _, p := range passes {
		if p.countCheck {
			zero := p.id
			zero.Shard = 0
			items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(l.table), Key: zero.Key().AttributeValues(),
				ConditionExpression:       aws.String("attribute_not_exists(#sc) OR #sc <= :s"),
				ExpressionAttributeNames:  map[string]string{"#sc": schema.AttrShardCount},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(p.shards)},
			}})
		}
	}
	_, err := l.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err != nil {
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return nil, false, &dbError{op: "slow path funded transaction", err: err}
		}
		for i, r := range tce.CancellationReasons {
			switch code := aws.ToString(r.Code); {
			case code == "TransactionConflict":
				return nil, false, &transactionConflict{err: err}
			case code == "ConditionalCheckFailed" && i >= own && i < moves:
				child.req.lostMoves++
			}
		}
		l.log.Debug("funded transaction cancelled", "reasons", fmtReasons(tce.CancellationReasons))
		return nil, true, nil
	}
	lease := &Lease{lim: l, resource: child.id.Resource}
	for _, p := range passes {
		l.written(ctx, p)
		lease.parts = append(lease.parts, p.part())
	}
	return lease, false, nil
}

// transactItem is the pass's write as a transaction item.
func (p *pass) transactItem(table string) types.TransactWriteItem {
	if p.put != nil {
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(table), Item: p.put,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}}
	}
	return transactUpdate(p.update.UpdateInput(table, p.id.Key()))
}

// writeBoth sends a cascaded pair of writes in one transaction (docs/design.md §5
// step 6: 2 write units per item).
func (l *Limiter) writeBoth(ctx context.Context, child, parent *pass) (*Lease, bool, error) {
	if len(child.moves)+len(parent.moves) > 0 || child.countCheck || parent.countCheck {
		return l.writeFunded(ctx, child, parent)
	}
	items := []types.TransactWriteItem{child.transactItem(l.table), parent.transactItem(l.table)}
	cancelled, err := l.transact(ctx, "slow path transaction", items)
	switch {
	case err != nil:
		return nil, false, err
	case cancelled:
		return l.retryBoth(ctx, child, parent) // a lock or a create was lost
	}
	l.written(ctx, child)
	l.written(ctx, parent)
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

// retryBoth is the Retry shape for a cascaded pair (docs/design.md §5):
// consumption only on both shards, conditioned per hard limit, in one
// transaction. A cancellation asks for another pass, which reads the state
// again and rejects from it if it is short.
func (l *Limiter) retryBoth(ctx context.Context, child, parent *pass) (*Lease, bool, error) {
	items := make([]types.TransactWriteItem, 0, 2)
	now := l.nowMs()
	for _, p := range []*pass{child, parent} {
		var limits []bucketwrite.RetryLimit
		for _, pl := range p.plan {
			if pl.declared {
				limits = append(limits, bucketwrite.RetryLimit{Name: pl.lim.Name, Amount: pl.amount, Hard: !pl.lim.Soft && !p.bypass})
			}
		}
		mode := bucketwrite.AdjustBoth
		var in *dynamodb.UpdateItemInput
		var err error
		if p.bypass {
			// A bypassed side adds tc only, unconditioned but for existence.
			mode = bucketwrite.AdjustConsumed
			ds := make([]bucketwrite.Declared, 0, len(limits))
			for _, r := range limits {
				ds = append(ds, bucketwrite.Declared{Name: r.Name, Amount: r.Amount})
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
	l.written(ctx, child)
	l.written(ctx, parent)
	return &Lease{lim: l, resource: child.id.Resource, parts: []leasePart{child.part(), parent.part()}}, false, nil
}

// retryWrite is the Retry shape after a lost rf lock (docs/design.md §5):
// consumption only, conditioned per hard limit. Its failure is a rejection
// built from the image it returns, unless a declared limit is missing
// there, which needs another pass.
func (l *Limiter) retryWrite(ctx context.Context, p *pass) (*Lease, bool, error) {
	var limits []bucketwrite.RetryLimit
	for _, pl := range p.plan {
		if pl.declared {
			limits = append(limits, bucketwrite.RetryLimit{Name: pl.lim.Name, Amount: pl.amount, Hard: !pl.lim.Soft})
		}
	}
	now := l.nowMs()
	in, err := l.writes.Retry(p.id, limits, now)
	if err != nil {
		return nil, false, err
	}
	out, err := l.db.UpdateItem(ctx, in)
	if err == nil {
		img, err := bucketitem.Decode(out.Attributes)
		if err != nil {
			return nil, false, err
		}
		l.rejects.remember(p.id, &img, p.mark)
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
	img, err := bucketitem.Decode(ccf.Item)
	if err != nil || len(ccf.Item) == 0 || (img.HasVU && img.VU <= now) {
		return nil, true, nil // gone, or past vu: a debit needs a new pass
	}
	l.rejects.remember(p.id, &img, p.mark)
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
		e.Statuses = append(e.Statuses, limitStatus(p.req.entity, p.req.resource, bucketwrite.Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
	}
	if len(e.Violations()) == 0 {
		return nil, true, nil // the shortfall is gone by now: run again
	}
	return nil, false, e
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

// fixStamps sends a pass's stampFix, if any; a failure is logged (the next
// slow pass tries again).
func (l *Limiter) fixStamps(ctx context.Context, p *pass) {
	b := p.stampFix()
	if b == nil {
		return
	}
	in := b.UpdateInput(l.table, p.id.Key())
	in.ReturnValues = types.ReturnValueNone
	key := shardKey{p.id.Entity, p.id.Resource, p.id.Shard}
	l.rejects.forget(key) // the stamps change what the cached state allows
	defer l.rejects.forget(key)
	if _, err := l.db.UpdateItem(ctx, in); err != nil {
		l.log.WarnContext(ctx, "stamp fix failed", "resource", p.id.Resource, "shard", p.id.Shard, "error", err)
	}
}
