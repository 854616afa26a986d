package usage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// ErrNoBucket reports an entity with no bucket on a resource: it has not
// acquired there, or its idle bucket expired.
var ErrNoBucket = errors.New("usage: no bucket")

// BucketState is an entity's bucket on a resource as it stands: every
// limit summed over the bucket's shards, its balance projected to an
// instant by the bucket's own refill (docs/design.md §3, §14, §15).
type BucketState struct {
	Entity, Resource string
	// ShardCount is the bucket's shard count (shard 0's shard_count);
	// Shards the shard items read, fewer when some shard below the count
	// has not been created yet.
	ShardCount, Shards int
	// Projected reports that every limit's Remaining is its balance at
	// ProjectedAt, the reader's clock when it read; false when some limit
	// could not be projected (LimitState.Projected).
	Projected   bool
	ProjectedAt time.Time
	// Limits are the bucket's limits, sorted by name; `wcu` is left out.
	Limits []LimitState
}

// LimitState is one limit of a bucket, summed over its shards. Amounts are
// millitokens (1000 to a token), as stored.
type LimitState struct {
	Name string
	// Capacity, RefillAmount and RefillPeriod are the whole bucket's
	// parameters in force at the projection (a parameter schedule's when
	// one is; docs/design.md §14), undivided by the shard count.
	// RefillAmount is 0 for a quota, calendar or session.
	Capacity     int64
	RefillAmount int64
	RefillPeriod time.Duration
	// Stored sums the stored balances, each as of its shard's last refill
	// stamp (rf).
	Stored int64
	// Remaining sums the balances at BucketState.ProjectedAt: each shard's
	// stored balance refilled from its rf to that instant and clamped to
	// its share of the capacity, a calendar quota's reset edge applied
	// (schedule.Materialise), a session quota's window rolled in or, once
	// it has ended, a new one opened with a full share, as the next use
	// would (bucket.Window.Materialise). Negative when in debt. When
	// Projected is false, it is Stored.
	Remaining int64
	// Consumed sums the consumption counters (tc): what the shards have
	// consumed since each was created, net of refunds.
	Consumed int64
	// Projected reports that Remaining is projected; false when a shard's
	// stored schedule or zone does not read, or the shard has no rf.
	Projected bool
}

// RemainingTokens returns Remaining in whole tokens, rounded down (an
// indebted −1.5 tokens is −2, docs/design.md §3).
func (l LimitState) RemainingTokens() int64 { return bucket.Available(l.Remaining) }

// Limit returns the state of the limit called name, and whether the
// bucket has it.
func (b BucketState) Limit(name string) (LimitState, bool) {
	i, found := slices.BinarySearchFunc(b.Limits, name, func(l LimitState, n string) int { return strings.Compare(l.Name, n) })
	if !found {
		return LimitState{}, false
	}
	return b.Limits[i], true
}

// Bucket reads entity's bucket on resource and projects it to the reader's
// clock: shard 0 with GetItem, then the other shards below its shard count
// with one BatchGetItem (docs/costs.md). An entity without one is
// ErrNoBucket; a shard that does not decode, a *bucketitem.CorruptItemError.
func (r *Reader) Bucket(ctx context.Context, entity, resource string) (BucketState, error) {
	if err := schema.ValidateEntityID(entity); err != nil {
		return BucketState{}, fmt.Errorf("usage: %w", err)
	}
	if err := schema.ValidateResource(resource); err != nil {
		return BucketState{}, fmt.Errorf("usage: %w", err)
	}
	what := "bucket of " + strconv.Quote(entity) + " on " + strconv.Quote(resource)
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.table),
		Key:            schema.BucketKey(r.ns, entity, resource, 0).AttributeValues(),
		ConsistentRead: aws.Bool(r.consistent),
	})
	if err != nil {
		return BucketState{}, fmt.Errorf("usage: %s: %w", what, err)
	}
	if len(out.Item) == 0 {
		return BucketState{}, fmt.Errorf("%w: %s", ErrNoBucket, what)
	}
	shard0, err := bucketitem.Decode(out.Item)
	if err != nil {
		return BucketState{}, fmt.Errorf("usage: %s, shard 0: %w", what, err)
	}
	count := int(min(max(shard0.ShardCount, 1), schema.MaxShardCount))
	shards := []bucketitem.Image{shard0}
	if count > 1 {
		keys := make([]schema.Key, 0, count-1)
		for s := 1; s < count; s++ {
			keys = append(keys, schema.BucketKey(r.ns, entity, resource, s))
		}
		found, err := r.batchGet(ctx, keys, "", nil)
		if err != nil {
			return BucketState{}, fmt.Errorf("usage: %s: %w", what, err)
		}
		for s, k := range keys {
			it := found[k]
			if it == nil {
				continue // not created yet: shards are created on first use
			}
			img, err := bucketitem.Decode(it)
			if err != nil {
				return BucketState{}, fmt.Errorf("usage: %s, shard %d: %w", what, s+1, err)
			}
			shards = append(shards, img)
		}
	}
	return project(entity, resource, count, shards, r.now()), nil
}

// project sums the limits of a bucket's shards at now.
func project(entity, resource string, count int, shards []bucketitem.Image, now time.Time) BucketState {
	st := BucketState{Entity: entity, Resource: resource, ShardCount: count, Shards: len(shards),
		Projected: true, ProjectedAt: now}
	at := now.UnixMilli()
	byName := map[string]int{}
	for i := range shards {
		img := &shards[i]
		for j := range img.Limits {
			l := &img.Limits[j]
			k, seen := byName[l.Name]
			if !seen {
				k = len(st.Limits)
				byName[l.Name] = k
				st.Limits = append(st.Limits, LimitState{Name: l.Name, Projected: true})
			}
			ls := &st.Limits[k]
			ls.Stored = bucket.AddSat(ls.Stored, l.Tokens)
			ls.Consumed = bucket.AddSat(ls.Consumed, l.Consumed)
			params := l.Params()
			balance := l.Tokens
			sched, resets, loc, err := img.Schedules(l.Name)
			if err == nil && img.HasRF {
				pass := schedule.Materialise(params, sched, resets, loc, l.Tokens, img.RF, max(img.ShardCount, 1), at)
				params, balance = pass.InForce, pass.Balance
				if l.HasWindow() && l.ResetAfter > 0 {
					// A session quota (docs/design.md §15): what the next
					// pass finds — a window opened elsewhere rolled in, a
					// new one opened on a window that has ended.
					balance = l.Window().Materialise(params, l.Tokens, l.Consumed, img.RF, max(img.ShardCount, 1), at).Balance
				}
			} else {
				ls.Projected, st.Projected = false, false
			}
			ls.Remaining = bucket.AddSat(ls.Remaining, balance)
			if !seen {
				ls.Capacity, ls.RefillAmount = params.Capacity, params.RefillAmount
				ls.RefillPeriod = time.Duration(params.RefillPeriod) * time.Millisecond
			}
		}
	}
	for i := range st.Limits {
		if !st.Limits[i].Projected {
			st.Limits[i].Remaining = st.Limits[i].Stored
		}
	}
	slices.SortFunc(st.Limits, func(a, b LimitState) int { return strings.Compare(a.Name, b.Name) })
	return st
}

// EntityConsumption is one entity's consumption counter of a limit on a
// resource, summed over its bucket's shards.
type EntityConsumption struct {
	Entity string
	// Consumed sums the shards' tc of the limit, millitokens: consumption
	// since each shard was created, net of refunds. A bucket that expired
	// and was created again starts from 0.
	Consumed int64
	// Shards is the number of the entity's shards that carry the counter.
	Shards int
}

// ConsumedTokens returns Consumed in whole tokens, rounded down.
func (e EntityConsumption) ConsumedTokens() int64 {
	return bucket.FloorDiv(e.Consumed, bucket.MilliPerToken)
}

// Top returns the n entities whose buckets on resource have consumed the
// most of limit (the `tc` counter, summed over shards), the largest
// first, ties by entity id. It reads every bucket shard of the resource:
// the buckets' usage-index entries (GSI2, `BUCKET#` keys, eventually
// consistent) page by page, and on a KEYS_ONLY index one BatchGetItem of
// the counters per page (docs/costs.md). Entities whose buckets do not
// carry the limit are left out.
func (r *Reader) Top(ctx context.Context, resource, limit string, n int) ([]EntityConsumption, error) {
	if err := schema.ValidateResource(resource); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	if err := schema.ValidateLimitName(limit); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("usage: %w", schema.NewValidationError("n", strconv.Itoa(n), "must be at least 1"))
	}
	tcAttr := schema.BucketAttr(limit, schema.LimitConsumed)
	names := map[string]string{"#tpk": schema.AttrPK, "#tsk": schema.AttrSK, "#tc": tcAttr}
	sums := map[string]*EntityConsumption{}
	count := func(it item) {
		v, present := it[tcAttr]
		if !present {
			return
		}
		pk, _ := str(it[schema.AttrPK])
		id, err := schema.ParseBucketPK(pk)
		if err != nil || id.Namespace != r.ns || id.Resource != resource {
			return
		}
		tc, reason := integer(v)
		if reason != "" {
			r.log.WarnContext(ctx, "skipping a bucket counter that does not decode", "attribute", tcAttr, "reason", reason)
			return
		}
		e := sums[id.Entity]
		if e == nil {
			e = &EntityConsumption{Entity: id.Entity}
			sums[id.Entity] = e
		}
		e.Consumed = bucket.AddSat(e.Consumed, tc)
		e.Shards++
	}
	var start map[string]types.AttributeValue
	for {
		out, err := r.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(r.table),
			IndexName:              aws.String(schema.GSI2),
			KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :b)"),
			ExpressionAttributeNames: map[string]string{
				"#pk": schema.AttrGSI2PK, "#sk": schema.AttrGSI2SK,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": schema.Str(schema.ResourcePK(r.ns, resource)), ":b": schema.Str(schema.PrefixBucket),
			},
			Limit:             aws.Int32(r.pageSize),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("usage: buckets of resource %q: %w", resource, err)
		}
		var keys []schema.Key
		for _, it := range out.Items {
			if _, whole := it[schema.AttrEntityID]; whole {
				count(it)
				continue
			}
			keys = append(keys, keyOf(it))
		}
		if len(keys) > 0 {
			found, err := r.batchGet(ctx, keys, "#tpk, #tsk, #tc", names)
			if err != nil {
				return nil, fmt.Errorf("usage: buckets of resource %q: %w", resource, err)
			}
			for _, k := range keys {
				if it := found[k]; it != nil {
					count(it)
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	all := make([]EntityConsumption, 0, len(sums))
	for _, e := range sums {
		all = append(all, *e)
	}
	slices.SortFunc(all, func(a, b EntityConsumption) int {
		if c := cmp.Compare(b.Consumed, a.Consumed); c != 0 {
			return c
		}
		return strings.Compare(a.Entity, b.Entity)
	})
	return all[:min(n, len(all))], nil
}
