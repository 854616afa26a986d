package control

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/shard"
	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// SyncLimits brings every bucket of sc in use in line with the limits that
// now resolve for its own entity and resource, before it returns
// (docs/design.md §8, "Limits reach the buckets in use"). The limit
// setters call it after their write, with the scope of the level they
// changed (the namespace for the system level, the resource's buckets for
// a resource, the entity's for an entity); a declarative apply calls it
// for every target whose limits changed. Called again it finishes a sync
// that stopped part way (FanoutIncompleteError): each bucket is compared
// with its config afresh.
//
// Each bucket shard is read strongly consistent, then the config of its
// pair (shard.Compare). A shard in line is counted Unchanged and not
// written. Any other is materialised at its own stored parameters up to
// the sync's instant and brought to the configured ones from then on, in
// one rf-locked write (shard.Pass.Reconfigure, Update): a lowered capacity
// clamps its balance, a raised one grants nothing at once, a new refill
// rate applies from that instant, a limit no longer configured is removed
// (its tc kept), soft stamps, schedules and expiry follow the config. A
// write that loses its pins (another writer moved the shard) is planned
// again from a fresh read, up to maxSyncTries times.
//
// Cost (docs/costs.md): per chunk of up to 100 shards one strongly
// consistent BatchGetItem of the shards and one of their pairs' config
// items, and one UpdateItem per shard out of line; the discovery queries
// besides.
func (c *Controls) SyncLimits(ctx context.Context, ns string, sc Scope) (Progress, error) {
	defer c.changing()()
	return c.syncLimits(ctx, ns, sc)
}

// maxSyncTries bounds the writes of one shard whose pins other writers
// keep moving.
const maxSyncTries = 5

// syncChunk is how many shard keys one read of a sync takes.
const syncChunk = 100

// pairShards are the shards of one pair a sync discovered.
type pairShards struct {
	pair config.Pair
	ids  []schema.BucketID
}

// syncLimits is SyncLimits without the cache invalidation.
func (c *Controls) syncLimits(ctx context.Context, ns string, sc Scope) (Progress, error) {
	return c.passes(ctx, ns, sc, func(t *tally, found []schema.BucketID) {
		onWorkers(c.workers, chunkPairs(found), func(ch []*pairShards) {
			c.syncChunkSafely(ctx, ns, ch, t.record)
		})
	})
}

// chunkPairs groups shards by pair, and the pairs in chunks of at most
// syncChunk shards (a pair is never split).
func chunkPairs(ids []schema.BucketID) [][]*pairShards {
	byPair := map[config.Pair]*pairShards{}
	var pairs []*pairShards
	for _, id := range ids {
		pr := config.Pair{Entity: id.Entity, Resource: id.Resource}
		ps := byPair[pr]
		if ps == nil {
			ps = &pairShards{pair: pr}
			byPair[pr] = ps
			pairs = append(pairs, ps)
		}
		ps.ids = append(ps.ids, id)
	}
	var out [][]*pairShards
	var chunk []*pairShards
	n := 0
	for _, ps := range pairs {
		if n+len(ps.ids) > syncChunk && len(chunk) > 0 {
			out = append(out, chunk)
			chunk, n = nil, 0
		}
		chunk = append(chunk, ps)
		n += len(ps.ids)
	}
	if len(chunk) > 0 {
		out = append(out, chunk)
	}
	return out
}

// syncChunkSafely is syncChunk on a sync worker: a panic is recovered and
// counted as the failure of every shard of the chunk not yet counted, so
// that no panic escapes the request that started the sync and no shard is
// counted from a config that was not read.
func (c *Controls) syncChunkSafely(ctx context.Context, ns string, chunk []*pairShards, record func(outcome, error)) {
	counted := map[schema.BucketID]bool{}
	rec := func(id schema.BucketID, out outcome, err error) {
		counted[id] = true
		record(out, err)
	}
	defer func() {
		if v := recover(); v != nil {
			c.log.ErrorContext(ctx, "control: panic while bringing buckets in line", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			for _, ps := range chunk {
				for _, id := range ps.ids {
					if !counted[id] {
						record(0, fmt.Errorf("panic while bringing %s in line: %v", id.AppendPK(nil), v))
					}
				}
			}
		}
	}()
	c.syncChunk(ctx, ns, chunk, rec)
}

// syncChunk reads a chunk's shards, then their pairs' config, and brings
// each shard in line.
func (c *Controls) syncChunk(ctx context.Context, ns string, chunk []*pairShards, record func(schema.BucketID, outcome, error)) {
	var keys []schema.Key
	pairs := make([]config.Pair, 0, len(chunk))
	for _, ps := range chunk {
		pairs = append(pairs, ps.pair)
		for _, id := range ps.ids {
			keys = append(keys, id.Key())
		}
	}
	failAll := func(err error) {
		for _, ps := range chunk {
			for _, id := range ps.ids {
				record(id, 0, err)
			}
		}
	}
	items, err := c.store.ReadItems(ctx, keys)
	if err != nil {
		failAll(err)
		return
	}
	// The config after the shards: a write never stores parameters older
	// than the ones it replaces (docs/decisions.md P58).
	walks, errs, err := c.store.Resolver().ResolveAccessAll(ctx, ns, pairs, config.AccessOptions{Consistent: true, IncludeSystem: true})
	if err != nil {
		failAll(err)
		return
	}
	for _, ps := range chunk {
		imgs := make([]*bucketitem.Image, len(ps.ids))
		S := int64(1)
		var bad error
		for i, id := range ps.ids {
			it := items[id.Key()]
			if len(it) == 0 {
				continue
			}
			img, err := bucketitem.Decode(it)
			if err != nil {
				bad = fmt.Errorf("%s: %w", id.AppendPK(nil), err)
				continue
			}
			imgs[i] = &img
			S = max(S, img.ShardCount)
		}
		for i, id := range ps.ids {
			switch {
			case errs[ps.pair] != nil:
				record(id, 0, errs[ps.pair])
			case imgs[i] == nil && items[id.Key()] != nil:
				record(id, 0, bad)
			case imgs[i] == nil:
				record(id, outVanished, nil)
			default:
				out, err := c.syncShard(ctx, ns, id, imgs[i], S, walks[ps.pair])
				record(id, out, err)
			}
		}
	}
}

// syncShard brings one shard in line with walk, read after img; a write
// that loses its pins is planned again from a fresh read of the shard and
// then of its pair's config.
func (c *Controls) syncShard(ctx context.Context, ns string, id schema.BucketID, img *bucketitem.Image, S int64, walk config.Walk) (outcome, error) {
	for try := 0; ; try++ {
		in, err := c.planSync(id, img, S, walk)
		if err != nil || in == nil {
			return outUnchanged, err
		}
		_, err = c.db.UpdateItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return outStamped, nil
		case !errors.As(err, &ccf):
			return 0, fmt.Errorf("%s: %w", id.AppendPK(nil), err)
		case len(ccf.Item) == 0:
			return outVanished, nil
		case try+1 >= maxSyncTries:
			return 0, fmt.Errorf("%s: other writers moved the bucket on each of %d tries: %w", id.AppendPK(nil), maxSyncTries, err)
		}
		if err := wait.Sleep(ctx, time.Duration(1+rand.IntN(8))*5*time.Millisecond); err != nil {
			return 0, err
		}
		got, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", id.AppendPK(nil), err)
		}
		if len(got.Item) == 0 {
			return outVanished, nil
		}
		fresh, err := bucketitem.Decode(got.Item)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", id.AppendPK(nil), err)
		}
		img, S = &fresh, max(S, fresh.ShardCount)
		if walk, err = c.store.Resolver().ResolveAccess(ctx, ns, id.Entity, id.Resource, config.AccessOptions{Consistent: true, IncludeSystem: true}); err != nil {
			return 0, err
		}
	}
}

// planSync is the write that brings shard id, read as img, in line with
// walk (shard.Compare, shard.Pass): nil when it is in line already.
func (c *Controls) planSync(id schema.BucketID, img *bucketitem.Image, S int64, walk config.Walk) (*dynamodb.UpdateItemInput, error) {
	entityLevel := walk.Source.EntityLevel()
	if shard.Compare(img, walk.Limits, entityLevel, c.ttlMult).InLine() {
		return nil, nil
	}
	now := c.now().UnixMilli()
	p, err := shard.Materialise(id, img, S, now)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := p.Reconfigure(walk.Limits, true); err != nil {
		return nil, fmt.Errorf("control: %s: %w", id.AppendPK(nil), err)
	}
	in := p.Update(shard.Write{
		PinVU: true, Deadline: walk.ReadAt.Add(c.ttl).UnixMilli(), ClearRecheck: true,
		SetTTL: true, TTL: shard.TTL(walk.Limits, entityLevel, c.ttlMult, p.At),
	}).UpdateInput(c.table, id.Key())
	in.ReturnValues = types.ReturnValueNone
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return in, nil
}
