package aggregator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// shardKey identifies a bucket shard; idempotency marks and runs are per
// bucket shard (docs/design.md §6).
type shardKey struct {
	ns, entity, resource string
	shard                int
}

// snapKey is a snapshot item's primary key.
type snapKey struct{ pk, sk string }

// run is a maximal sequence of consecutive contributing records of one
// bucket shard (in stream order) that map to the same snapshot item: one
// conditional UpdateItem (docs/design.md §6).
type run struct {
	key       snapKey
	window    Window
	windowKey string // the item's key: window_start, suffixed where needed
	start     string // window_start
	startAt   time.Time
	shard     shardKey
	recs      []*bucketRecord

	// Sums over recs. counters and overdraws are sorted by name; a limit
	// is listed when some record contributed to it, even when the sum is
	// zero, so that a coalesced write and one write per record leave the
	// same attributes.
	counters  []counter
	overdraws []counter
	events    int64

	// Results, written by the one worker that owns the key.
	done     bool  // the run's contribution is applied (now or before)
	writes   int   // UpdateItems that applied
	failures int   // failed writes (not a lost condition)
	err      error // why the run is not done
}

// counter is a named sum.
type counter struct {
	name string
	n    int64
}

// first and last are the run's first and last records.
func (r *run) first() *bucketRecord { return r.recs[0] }
func (r *run) last() *bucketRecord  { return r.recs[len(r.recs)-1] }

// add folds rec's contribution into the run; it refuses (false) when a sum
// would overflow an int64, and the caller starts a new run.
func (r *run) add(rec *bucketRecord) bool {
	// Check every sum first, then apply: a refused record leaves the run
	// as it was. A record names each limit once (contributions), so each
	// check sees the run's own sum.
	events := int64(0)
	for _, d := range rec.contrib {
		if d.tokens != 0 {
			events++
			if !fits(r.counters, d.name, d.tokens) {
				return false
			}
		}
		if d.overdraw && !fits(r.overdraws, d.name, 1) {
			return false
		}
	}
	if r.events > math.MaxInt64-events {
		return false
	}
	for _, d := range rec.contrib {
		if d.tokens != 0 {
			r.counters = addCounter(r.counters, d.name, d.tokens)
		}
		if d.overdraw {
			r.overdraws = addCounter(r.overdraws, d.name, 1)
		}
	}
	r.events += events
	r.recs = append(r.recs, rec)
	return true
}

// findCounter returns where the counter called name is in cs (sorted), or
// where it would go.
func findCounter(cs []counter, name string) (int, bool) {
	return slices.BinarySearchFunc(cs, name, func(c counter, name string) int { return strings.Compare(c.name, name) })
}

// fits reports whether adding n to the counter called name keeps it within
// an int64.
func fits(cs []counter, name string, n int64) bool {
	i, found := findCounter(cs, name)
	if !found {
		return true
	}
	s := cs[i].n + n
	return !((n > 0 && s < cs[i].n) || (n < 0 && s > cs[i].n))
}

// addCounter adds n to the counter called name, keeping cs sorted; the sum
// must fit (fits).
func addCounter(cs []counter, name string, n int64) []counter {
	i, found := findCounter(cs, name)
	if !found {
		return slices.Insert(cs, i, counter{name: name, n: n})
	}
	cs[i].n += n
	return cs
}

// plan groups the contributing records into runs, per window, and the runs
// by snapshot item. keys lists the items in order of their first run; each
// item's runs are in stream order.
//
// Each window gets its own item: SnapshotKey suffixes a finer window's key
// where it equals a coarser configured window's (docs/decisions.md P22).
func plan(recs []*bucketRecord, windows []Window) (keys []snapKey, byKey map[snapKey][]*run) {
	byKey = make(map[snapKey][]*run)
	type open struct {
		shard  shardKey
		window Window
	}
	current := make(map[open]*run)
	for _, rec := range recs {
		if len(rec.contrib) == 0 {
			continue
		}
		sh := shardKey{rec.id.Namespace, rec.id.Entity, rec.id.Resource, rec.id.Shard}
		for _, w := range windows {
			o := open{sh, w}
			// A run's item is its shard's, window's and window start's (the
			// configured windows are the same for the whole batch): the
			// key strings are made only when a run starts.
			startAt, _ := windowStart(w, rec.instant)
			cur := current[o]
			if cur != nil && cur.startAt.Equal(startAt) && cur.add(rec) {
				continue
			}
			wk := SnapshotKey(w, rec.instant, windows)
			uk := schema.UsageKey(sh.ns, sh.entity, sh.resource, wk)
			key := snapKey{uk.PK, uk.SK}
			r := &run{key: key, window: w, windowKey: wk, start: WindowKey(w, rec.instant), startAt: startAt, shard: sh}
			if !r.add(rec) {
				continue // unreachable: one record's sums always fit
			}
			current[o] = r
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], r)
		}
	}
	return keys, byKey
}

// errDeadline marks work not started because the invocation is about to
// end (docs/design.md §6).
var errDeadline = errors.New("aggregator: too little time left to start a write")

// writeSnapshots applies every run: items in parallel on at most
// cfg.Workers goroutines, the runs of one item one after the other in
// stream order. After a run of an item fails, later runs of that item are
// not attempted (they come later in the stream and are redelivered; applying
// them first would raise the seq# mark over the failed records).
//
// ctx is the invocation's context, whose deadline decides whether a write
// may start; work carries the calls.
func (a *Aggregator) writeSnapshots(ctx, work context.Context, keys []snapKey, byKey map[snapKey][]*run, ttl int64) {
	jobs := make(chan []*run)
	var wg sync.WaitGroup
	for range min(a.cfg.Workers, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runs := range jobs {
				a.writeItemSafely(ctx, work, runs, ttl)
			}
		}()
	}
	for _, k := range keys {
		jobs <- byKey[k]
	}
	close(jobs)
	wg.Wait()
}

// errPanic marks runs left undone by a panic in their worker.
var errPanic = errors.New("aggregator: panic while writing a snapshot")

// writeItemSafely is writeItem in a worker goroutine, where Process's own
// recover cannot reach: a panic leaves the item's unfinished runs failed
// (and so reported) instead of killing the process.
func (a *Aggregator) writeItemSafely(ctx, work context.Context, runs []*run, ttl int64) {
	defer func() {
		if v := recover(); v != nil {
			a.log.ErrorContext(ctx, "panic while writing a snapshot item", "panic", fmt.Sprint(v))
			for _, r := range runs {
				if !r.done && r.err == nil {
					r.err, r.failures = errPanic, 1
				}
			}
		}
	}()
	a.writeItem(ctx, work, runs, ttl)
}

// writeItem applies the runs of one snapshot item in order.
func (a *Aggregator) writeItem(ctx, work context.Context, runs []*run, ttl int64) {
	for i, r := range runs {
		a.writeRun(ctx, work, r, ttl)
		if !r.done {
			for _, later := range runs[i+1:] {
				later.err = errSkippedAfterFailure
			}
			return
		}
	}
}

var errSkippedAfterFailure = errors.New("aggregator: an earlier write to the same snapshot item failed")

// writeRun applies one run: one coalesced conditional write; when its
// condition fails (part of the run was applied by an earlier delivery), one
// write per record not yet covered by the item's mark (docs/design.md §6).
func (a *Aggregator) writeRun(ctx, work context.Context, r *run, ttl int64) {
	if !a.canStart(ctx) {
		r.err = errDeadline
		return
	}
	in := a.updateInput(r, false, ttl)
	_, err := a.db.UpdateItem(work, in)
	if err == nil {
		r.done, r.writes = true, 1
		return
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		r.err, r.failures = err, 1
		return
	}
	// The mark is at or past the run's first record. Records at or below
	// it are applied (the mark only grows, so their own conditions would be
	// false forever); write the others one by one.
	mark := markOf(ccf.Item, schema.SeqAttr(r.shard.shard))
	for _, rec := range r.recs {
		if mark != "" && rec.padded <= mark {
			continue
		}
		if !a.canStart(ctx) {
			r.err = errDeadline
			return
		}
		one := &run{shard: r.shard, window: r.window, windowKey: r.windowKey, start: r.start, startAt: r.startAt, key: r.key}
		one.add(rec) // cannot overflow: it fit in the run
		in := a.updateInput(one, true, ttl)
		_, err := a.db.UpdateItem(work, in)
		switch {
		case err == nil:
			r.writes++
		case errors.As(err, &ccf):
			// Already applied.
		default:
			r.err = err
			r.failures++
			return
		}
	}
	r.done = true
}

// markOf returns the S value of the seq# attribute of item, or "".
func markOf(item map[string]types.AttributeValue, attr string) string {
	if s, ok := item[attr].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// canStart reports whether a new write may start: ctx is live and, when it
// has a deadline, at least cfg.DeadlineMargin of it is left.
func (a *Aggregator) canStart(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) >= a.cfg.DeadlineMargin
}

// The fixed part of the snapshot write (docs/design.md §6). Limit counters and
// overdraw counters get positional aliases (#l0, #od0, …): names may hold
// `_`, `.` and `-`.
const (
	snapshotSet = "SET entity_id = :e, #res = if_not_exists(#res, :r), #win = if_not_exists(#win, :w), " +
		"#wst = if_not_exists(#wst, :k), GSI2PK = :g2p, GSI2SK = :g2s, " +
		"GSI4PK = if_not_exists(GSI4PK, :g4p), GSI4SK = if_not_exists(GSI4SK, :g4s), " +
		"#ttl = if_not_exists(#ttl, :ttl), #sq = "
	runCondition    = "attribute_not_exists(#sq) OR #sq < :first"
	recordCondition = "attribute_not_exists(#sq) OR #sq < :seq"
)

// updateInput builds the snapshot UpdateItem of a run (docs/design.md §6) or, with
// single, the fallback's write of the one record r holds (docs/design.md §6).
//
// The request is built with few allocations: its S and N members come from
// two slabs of the exact size, its maps are sized once, and the
// expression's aliases are constants for the first limits.
func (a *Aggregator) updateInput(r *run, single bool, ttl int64) *dynamodb.UpdateItemInput {
	keys := schema.UsageItemKeys(r.shard.ns, r.shard.entity, r.shard.resource, r.windowKey)
	nc, no := len(r.counters), len(r.overdraws)
	names := make(map[string]string, 6+nc+no)
	names["#res"] = schema.AttrResource
	names["#win"] = schema.AttrWindow
	names["#wst"] = schema.AttrWindowStart
	names["#ttl"] = schema.AttrTTL
	names["#te"] = schema.AttrTotalEvents
	names["#sq"] = schema.SeqAttr(r.shard.shard)

	// S members: :e :r :w :k :g2p :g2s :g4p :g4s, then :seq or :first and
	// :last, then the key's PK and SK. N members: :ttl :events and one
	// per counter.
	ss := make([]types.AttributeValueMemberS, 0, 12)
	ns := make([]types.AttributeValueMemberN, 0, 2+nc+no)
	s := func(v string) types.AttributeValue {
		ss = append(ss, types.AttributeValueMemberS{Value: v})
		return &ss[len(ss)-1]
	}
	n := func(v int64) types.AttributeValue {
		ns = append(ns, types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)})
		return &ns[len(ns)-1]
	}
	values := make(map[string]types.AttributeValue, 12+nc+no)
	values[":e"] = s(r.shard.entity)
	values[":r"] = s(r.shard.resource)
	values[":w"] = s(string(r.window))
	values[":k"] = s(r.start)
	values[":g2p"] = s(keys.GSI2.PK)
	values[":g2s"] = s(keys.GSI2.SK)
	values[":g4p"] = s(keys.GSI4.PK)
	values[":g4s"] = s(keys.GSI4.SK)
	values[":ttl"] = n(ttl)
	values[":events"] = n(r.events)
	var b strings.Builder
	b.Grow(len(snapshotSet) + len(" ADD #te :events") + 16 + 16*(nc+no))
	b.WriteString(snapshotSet)
	cond := runCondition
	if single {
		b.WriteString(":seq")
		values[":seq"] = s(r.first().padded)
		cond = recordCondition
	} else {
		b.WriteString(":last")
		values[":first"] = s(r.first().padded)
		values[":last"] = s(r.last().padded)
	}
	b.WriteString(" ADD ")
	for i, c := range r.counters {
		alias, val := positional("#l", i), positional(":d", i)
		names[alias] = c.name
		values[val] = n(c.n)
		b.WriteString(alias)
		b.WriteByte(' ')
		b.WriteString(val)
		b.WriteString(", ")
	}
	for i, c := range r.overdraws {
		alias, val := positional("#od", i), positional(":o", i)
		names[alias] = schema.OverdrawAttr(c.name)
		values[val] = n(c.n)
		b.WriteString(alias)
		b.WriteByte(' ')
		b.WriteString(val)
		b.WriteString(", ")
	}
	b.WriteString("#te :events")
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(a.cfg.TableName),
		Key: map[string]types.AttributeValue{
			schema.AttrPK: s(keys.Key.PK),
			schema.AttrSK: s(keys.Key.SK),
		},
		UpdateExpression:                    aws.String(b.String()),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// positional returns prefix followed by i in decimal; the aliases of the
// first limits are constants, so that common writes make no alias strings.
func positional(prefix string, i int) string {
	if i < 4 {
		switch prefix {
		case "#l":
			return [...]string{"#l0", "#l1", "#l2", "#l3"}[i]
		case ":d":
			return [...]string{":d0", ":d1", ":d2", ":d3"}[i]
		case "#od":
			return [...]string{"#od0", "#od1", "#od2", "#od3"}[i]
		case ":o":
			return [...]string{":o0", ":o1", ":o2", ":o3"}[i]
		}
	}
	return prefix + strconv.Itoa(i)
}
