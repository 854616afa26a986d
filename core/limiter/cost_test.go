package limiter_test

// Tests that pin what each path of the acquire costs in DynamoDB calls, the
// keys each read asks for and the write units each successful write reports.
// docs/costs.md turns these into read and write units and cites the test of
// every figure. Each expectation is exact: a call more or less, a key more or
// less, or an index written that was not before, fails the test.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

const costNS = "c0stNamesp_"

// cost is what one measured operation spent.
type cost struct {
	// calls counts the requests DynamoDB Local received, per operation
	// (faultproxy's Forwarded); failed counts those it answered with an
	// error (Forwarded − Succeeded): on these paths, failed conditions.
	calls, failed map[string]int
	// keys lists the keys each eventually consistent BatchGetItem asked
	// for, in call order; strong those of each strongly consistent one
	// (the check of a created shard's limits, docs/design.md §8).
	keys, strong []int
	// writes sums the write units the successful writes reported, by
	// "table" or index name (ReturnConsumedCapacity INDEXES).
	writes map[string]float64
}

// String renders c canonically (sorted, zeros left out), so that two costs
// are equal exactly when their strings are.
func (c cost) String() string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(c.calls)) {
		if n := c.calls[op]; n > 0 {
			p := fmt.Sprintf("%s %d", op, n)
			if f := c.failed[op]; f > 0 {
				p += fmt.Sprintf(" (%d failed)", f)
			}
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no call")
	}
	if len(c.keys) > 0 {
		parts = append(parts, fmt.Sprintf("BatchGetItem keys %v", c.keys))
	}
	if len(c.strong) > 0 {
		parts = append(parts, fmt.Sprintf("strongly consistent BatchGetItem keys %v", c.strong))
	}
	var w []string
	for _, k := range slices.Sorted(maps.Keys(c.writes)) {
		if u := c.writes[k]; u != 0 {
			w = append(w, fmt.Sprintf("%s %g", k, u))
		}
	}
	if len(w) > 0 {
		parts = append(parts, "write units: "+strings.Join(w, ", "))
	}
	return strings.Join(parts, "; ")
}

// costMeter sits between the limiter and the proxy. It asks DynamoDB Local
// for the consumed capacity of every read and write and records it; every
// other call passes through untouched (the proxy still counts it).
type costMeter struct {
	limiter.DB
	t *testing.T

	mu           sync.Mutex
	keys, strong []int
	writes       map[string]float64
}

func (m *costMeter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys, m.strong, m.writes = nil, nil, map[string]float64{}
}

func (m *costMeter) wrote(cc *types.ConsumedCapacity) {
	if cc == nil {
		m.t.Error("a successful write reported no consumed capacity")
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cc.Table != nil {
		m.writes["table"] += aws.ToFloat64(cc.Table.CapacityUnits)
	}
	for name, ix := range cc.GlobalSecondaryIndexes {
		m.writes[name] += aws.ToFloat64(ix.CapacityUnits)
	}
	for name, ix := range cc.LocalSecondaryIndexes {
		m.writes[name] += aws.ToFloat64(ix.CapacityUnits)
	}
}

func (m *costMeter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.DB.UpdateItem(ctx, &cp, o...)
	if err == nil {
		m.wrote(out.ConsumedCapacity)
	}
	return out, err
}

func (m *costMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.DB.PutItem(ctx, &cp, o...)
	if err == nil {
		m.wrote(out.ConsumedCapacity)
	}
	return out, err
}

// BatchGetItem records the keys asked for, eventually and strongly
// consistent apart. It also checks the fact the read-unit figures of
// docs/costs.md rest on: every item found is at most 4 KB (DynamoDB Local
// reports 0.5 units per item found by an eventually consistent read, 1 by
// a strongly consistent one; it charges nothing for a key it does not
// find, where DynamoDB charges the same).
func (m *costMeter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.DB.BatchGetItem(ctx, &cp, o...)
	if err != nil {
		return out, err
	}
	keys, found, consistent := 0, 0, false
	for table, ka := range in.RequestItems {
		keys += len(ka.Keys)
		found += len(out.Responses[table])
		consistent = aws.ToBool(ka.ConsistentRead)
	}
	var units float64
	for _, cc := range out.ConsumedCapacity {
		units += aws.ToFloat64(cc.CapacityUnits)
	}
	per := 0.5
	if consistent {
		per = 1
	}
	if units != per*float64(found) {
		m.t.Errorf("BatchGetItem found %d items and reported %g read units, want %g per item (items ≤ 4 KB)", found, units, per)
	}
	m.mu.Lock()
	if consistent {
		m.strong = append(m.strong, keys)
	} else {
		m.keys = append(m.keys, keys)
	}
	m.mu.Unlock()
	return out, err
}

// costEnv is one test's table, proxy, meter, clock and limiter.
type costEnv struct {
	t     *testing.T
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	meter *costMeter
	ms    atomic.Int64 // the limiter's clock, epoch ms
	lim   *limiter.Limiter
}

// forcePass stamps vu = 0 on shard 0, as a parameter sync would, so the
// next acquire materialises the bucket.
func (e *costEnv) forcePass(entity, resource string) {
	e.t.Helper()
	_, err := e.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(costNS, entity, resource, 0).AttributeValues(),
		UpdateExpression:          aws.String("SET vu = :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func newCostEnv(t *testing.T, o limiter.Options, tableOpts ...schema.TableOption) *costEnv {
	t.Helper()
	e := &costEnv{t: t, tbl: ddbtest.NewTable(t, tableOpts...)}
	e.ms.Store(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMilli())
	e.proxy = faultproxy.Start(t, e.tbl.Endpoint)
	// One attempt per call: an SDK retry would be a call the test did not ask for.
	e.meter = &costMeter{DB: e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), t: t}
	e.meter.reset()
	o.Clock = func() time.Time { return time.UnixMilli(e.ms.Load()) }
	o.Rand = func(int) int { return 0 }
	lim, err := limiter.New(e.meter, e.tbl.Name, costNS, o)
	if err != nil {
		t.Fatal(err)
	}
	e.lim = lim
	return e
}

func (e *costEnv) advance(d time.Duration) { e.ms.Add(d.Milliseconds()) }

// measure runs f with fresh counters and returns what it spent.
func (e *costEnv) measure(f func()) cost {
	e.t.Helper()
	e.proxy.ResetStats()
	e.meter.reset()
	f()
	c := cost{calls: map[string]int{}, failed: map[string]int{}}
	for op, s := range e.proxy.Stats() {
		c.calls[op] = s.Forwarded
		c.failed[op] = s.Forwarded - s.Succeeded
	}
	e.meter.mu.Lock()
	c.keys, c.strong, c.writes = e.meter.keys, e.meter.strong, e.meter.writes
	e.meter.mu.Unlock()
	return c
}

// check fails the test unless got is exactly want.
func (e *costEnv) check(what string, got, want cost) {
	e.t.Helper()
	if got.String() != want.String() {
		e.t.Errorf("%s costs\n  %s\nwant\n  %s", what, got, want)
	}
}

func (e *costEnv) setResourceLimits(resource string, limits ...limit.Limit) {
	e.t.Helper()
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(context.Background(), costNS, resource, limits); err != nil {
		e.t.Fatal(err)
	}
}

func (e *costEnv) setSystemLimits(limits ...limit.Limit) {
	e.t.Helper()
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetSystemLimits(context.Background(), costNS, limits, config.SystemOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// acquire must admit.
func (e *costEnv) acquire(entity, resource string, consume limiter.Consume) *limiter.Lease {
	e.t.Helper()
	lease, err := e.lim.Acquire(context.Background(), entity, resource, consume)
	if err != nil {
		e.t.Fatalf("acquire %s on %s: %v", entity, resource, err)
	}
	return lease
}

// reject must return a 429.
func (e *costEnv) reject(entity, resource string, consume limiter.Consume) {
	e.t.Helper()
	_, err := e.lim.Acquire(context.Background(), entity, resource, consume)
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		e.t.Fatalf("acquire %s on %s: %v, want RateLimitExceeded", entity, resource, err)
	}
}

// deleteBucket removes a bucket shard behind the limiter's back, as TTL
// does, so that the next acquire creates it again with a warm config cache.
func (e *costEnv) deleteBucket(entity, resource string, shard int) {
	e.t.Helper()
	_, err := e.tbl.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(costNS, entity, resource, shard).AttributeValues(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// Expected shapes, named after the paths of docs/costs.md.
var (
	// costCreateWrites is a new bucket: the item, and one entry in each index
	// whose keys it carries (GSI2 resource, GSI3 entity, GSI4 namespace).
	costCreateWrites = map[string]float64{"table": 1, schema.GSI2: 1, schema.GSI3: 1, schema.GSI4: 1}
	// costOneWrite is an update of a bucket that moves no index key.
	costOneWrite = map[string]float64{"table": 1}
)

func costOps(kv ...any) map[string]int {
	m := map[string]int{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(int)
	}
	return m
}

// TestCostFastPath: an admission on an existing bucket is one conditional
// UpdateItem and nothing else; with GSI2 KEYS_ONLY (our default,
// docs/compatibility.md C1) it writes the table only, with GSI2 ALL (tables
// shared with Python clients) the GSI2 replica too.
func TestCostFastPath(t *testing.T) {
	for _, c := range []struct {
		name       string
		projection types.ProjectionType
		writes     map[string]float64
	}{
		{"GSI2 KEYS_ONLY", types.ProjectionTypeKeysOnly, costOneWrite},
		{"GSI2 ALL", types.ProjectionTypeAll, map[string]float64{"table": 1, schema.GSI2: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCostEnv(t, limiter.Options{}, schema.WithGSI2Projection(c.projection))
			e.setResourceLimits("api", limit.PerMinute("rpm", 5), limit.PerMinute("tpm", 1000))
			e.acquire("u", "api", limiter.Consume{"rpm": 1, "tpm": 10})
			got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1, "tpm": 10}) })
			e.check("a fast-path admission", got, cost{calls: costOps("UpdateItem", 1), writes: c.writes})
		})
	}
}

// TestCostFastRejection: a 429 that refill cannot avoid is the one failed
// conditional UpdateItem, decided from the image it returns.
func TestCostFastRejection(t *testing.T) {
	e := newCostEnv(t, limiter.Options{RejectionCacheTTL: -1})
	e.setResourceLimits("api", limit.PerMinute("rpm", 2))
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	got := e.measure(func() { e.reject("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("a fast rejection", got, cost{calls: costOps("UpdateItem", 1), failed: costOps("UpdateItem", 1)})
}

// TestCostLocalRejection: with the rejection cache (docs/design.md §10) a
// 429 that the last state seen already shows costs no call; once that state
// is older than the TTL, one failed write re-learns it.
func TestCostLocalRejection(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 2))
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	e.acquire("u", "api", limiter.Consume{"rpm": 1}) // its ALL_NEW shows 0 left
	got := e.measure(func() { e.reject("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("a rejection the cache decides", got, cost{})
	e.advance(limiter.DefaultRejectionCacheTTL)
	got = e.measure(func() { e.reject("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("a rejection after the TTL", got, cost{calls: costOps("UpdateItem", 1), failed: costOps("UpdateItem", 1)})
	got = e.measure(func() { e.reject("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("the next one", got, cost{})
	if s := e.lim.Stats(); s.LocalRejections != 2 || s.ServerRejections != 1 {
		t.Fatalf("stats %+v, want 2 local and 1 server rejections", s)
	}
}

// TestCostCreate: the first acquire on a missing shard. The fast path fails
// (no item), then the slow path reads the limits (one BatchGetItem of the
// four config slots, only on a cold cache), walks the access items without
// the cache (three keys, four when the limits come from the system level),
// reads the entity's META and the shard, and puts the new bucket. The
// config cache holds slots, not pairs: a new entity on a known resource
// reads only its own two entity slots.
func TestCostCreate(t *testing.T) {
	for _, c := range []struct {
		name      string
		system    bool // limits at the system level rather than the resource's
		warm      bool // the config cache already holds the pair's slots
		neighbour bool // another entity's acquire cached the resource and system slots
		keys      []int
		batchGets int
	}{
		{"resource limits, cold config cache", false, false, false, []int{4, 3, 2}, 3},
		{"resource limits, warm config cache", false, true, false, []int{3, 2}, 2},
		{"resource limits, a new entity", false, false, true, []int{2, 3, 2}, 3},
		{"system limits, cold config cache", true, false, false, []int{4, 4, 2}, 3},
		{"system limits, warm config cache", true, true, false, []int{4, 2}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCostEnv(t, limiter.Options{})
			if c.system {
				e.setSystemLimits(limit.PerMinute("rpm", 5))
			} else {
				e.setResourceLimits("api", limit.PerMinute("rpm", 5))
			}
			if c.warm {
				e.acquire("u", "api", limiter.Consume{"rpm": 1})
				e.deleteBucket("u", "api", 0)
			}
			if c.neighbour {
				e.acquire("v", "api", limiter.Consume{"rpm": 1})
			}
			got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
			e.check("creating a shard", got, cost{
				calls:  costOps("UpdateItem", 1, "BatchGetItem", c.batchGets, "PutItem", 1),
				failed: costOps("UpdateItem", 1),
				keys:   c.keys, writes: costCreateWrites,
			})
		})
	}
}

// TestCostFallback: the fast path fails on an exhausted limit that refill
// has since covered (docs/design.md §3), and the slow path admits: the failed
// write, the access walk, META and the shard, and the rf-locked write.
func TestCostFallback(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	e.acquire("u", "api", limiter.Consume{"rpm": 9})
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	e.advance(6 * time.Second) // one token back, far from the ceiling (vu is 60 s away)
	got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("a fallback that refill lets through", got, cost{
		calls:  costOps("UpdateItem", 2, "BatchGetItem", 2),
		failed: costOps("UpdateItem", 1),
		keys:   []int{3, 2}, writes: costOneWrite,
	})
}

// TestCostRefillPass (docs/decisions.md P25): a light user — one request
// per several refill intervals — finds vu passed on every acquire. The
// process holds the image of its last write, so the acquire is one refill
// pass built from it: one UpdateItem, no read. When another process wrote
// in between, the pass loses its pins and is sent again from the image the
// failure returns: two UpdateItems, still no read. A heavy user (faster
// than refill) stays on the one-call fast path.
//
// Once in a shard's life, the first pass past its recheck deadline (a
// minute after its create, docs/design.md §8) also reads the pair's config,
// strongly consistent: four keys.
func TestCostRefillPass(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	onePass := cost{calls: costOps("UpdateItem", 1), writes: costOneWrite}
	e.advance(time.Minute)
	got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("light user, the created shard's one check", got, cost{
		calls: costOps("UpdateItem", 1, "BatchGetItem", 1), strong: []int{4}, writes: costOneWrite,
	})
	for i := range 3 {
		e.advance(time.Minute)
		got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
		e.check(fmt.Sprintf("light user, acquire %d", i), got, onePass)
	}
	// Another process (its own caches) takes one in between.
	other, err := limiter.New(e.tbl.DB, e.tbl.Name, costNS, limiter.Options{
		Clock: func() time.Time { return time.UnixMilli(e.ms.Load()) }, Rand: func(int) int { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.advance(time.Minute)
	if _, err := other.Acquire(context.Background(), "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	e.advance(time.Minute)
	got = e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("light user after another writer", got, cost{
		calls: costOps("UpdateItem", 2), failed: costOps("UpdateItem", 1), writes: costOneWrite,
	})
	// Heavy: faster than refill, the balance stays far from the ceiling.
	for i := range 5 {
		got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
		e.check(fmt.Sprintf("heavy user, acquire %d", i), got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
	}
}

// TestCostDoubling: the fast path fails on an exhausted wcu; the limiter
// doubles shard_count on shard 0 (one UpdateItem), then takes the slow path
// on the drawn shard.
func TestCostDoubling(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 1000))
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	_, err := e.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(costNS, "u", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET b_wcu_tk = :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "500"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("an admission that doubles", got, cost{
		calls:  costOps("UpdateItem", 3, "BatchGetItem", 2),
		failed: costOps("UpdateItem", 1),
		keys:   []int{3, 2}, writes: map[string]float64{"table": 2},
	})
}

// TestCostSlowPathOnly: with speculative writes off every acquire is the
// slow path: no failed write first, and a rejection writes nothing.
func TestCostSlowPathOnly(t *testing.T) {
	e := newCostEnv(t, limiter.Options{DisableSpeculativeWrites: true, RejectionCacheTTL: -1})
	e.setResourceLimits("api", limit.PerMinute("rpm", 2))
	got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("creating a shard, cold config cache", got, cost{
		calls: costOps("BatchGetItem", 3, "PutItem", 1), keys: []int{4, 3, 2}, writes: costCreateWrites,
	})
	got = e.measure(func() { e.acquire("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("an admission, warm config cache", got, cost{
		calls: costOps("BatchGetItem", 2, "UpdateItem", 1), keys: []int{3, 2}, writes: costOneWrite,
	})
	got = e.measure(func() { e.reject("u", "api", limiter.Consume{"rpm": 1}) })
	e.check("a rejection", got, cost{calls: costOps("BatchGetItem", 2), keys: []int{3, 2}})
}

// TestCostLease: Commit writes one UpdateItem when the lease changed since
// admission and nothing otherwise; Rollback writes one. A credit (Rollback,
// or a Commit that gives tokens back) sets vu to now on the shard
// (docs/decisions.md P25), and its ALL_NEW image is kept, so the next
// acquire there is one refill pass built from it: still one UpdateItem.
func TestCostLease(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("llm", limit.PerHour("tpm", 10_000))
	ctx := context.Background()
	e.acquire("u", "llm", limiter.Consume{"tpm": 100})

	lease := e.acquire("u", "llm", limiter.Consume{"tpm": 100})
	got := e.measure(func() {
		if err := lease.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Commit of an unchanged lease", got, cost{})

	lease = e.acquire("u", "llm", limiter.Consume{"tpm": 100})
	if err := lease.Adjust("tpm", 50); err != nil {
		t.Fatal(err)
	}
	got = e.measure(func() {
		if err := lease.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Commit of a lease that took more", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
	got = e.measure(func() { e.acquire("u", "llm", limiter.Consume{"tpm": 100}) })
	e.check("the acquire after a debit", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})

	lease = e.acquire("u", "llm", limiter.Consume{"tpm": 100})
	got = e.measure(func() {
		if err := lease.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Rollback", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
	fastPath := cost{calls: costOps("UpdateItem", 1), writes: costOneWrite}
	got = e.measure(func() { e.acquire("u", "llm", limiter.Consume{"tpm": 100}) })
	e.check("the acquire after a Rollback", got, fastPath)

	lease = e.acquire("u", "llm", limiter.Consume{"tpm": 100})
	if err := lease.Release("tpm", 40); err != nil {
		t.Fatal(err)
	}
	got = e.measure(func() {
		if err := lease.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Commit of a lease that gave tokens back", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
	got = e.measure(func() { e.acquire("u", "llm", limiter.Consume{"tpm": 100}) })
	e.check("the acquire after a credit", got, fastPath)

	// A credit onto a full bucket: a lease takes 100, an hour passes and a
	// materialising pass refills the shard to its ceiling; giving the 100
	// back lifts tk above it. The next acquire's refill pass clamps it.
	lease = e.acquire("u", "llm", limiter.Consume{"tpm": 100})
	e.ms.Add(time.Hour.Milliseconds())
	e.forcePass("u", "llm")
	e.acquire("u", "llm", limiter.Consume{"tpm": 0})
	got = e.measure(func() {
		if err := lease.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Rollback onto a full bucket", got, fastPath)
	got = e.measure(func() { e.acquire("u", "llm", limiter.Consume{"tpm": 100}) })
	e.check("the acquire after a credit onto a full bucket", got, fastPath)
	if tk := e.tk("u", "llm", "tpm"); tk != 10_000_000-100_000 {
		t.Errorf("tpm tk = %d after the clamp and a debit of 100, want %d", tk, 10_000_000-100_000)
	}

	lease = e.acquire("u", "llm", limiter.Consume{"tpm": 0})
	got = e.measure(func() {
		if err := lease.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	})
	e.check("Rollback of a lease that took nothing", got, cost{})
}

// TestCostBadInput: a bad name or amount never reaches DynamoDB; a limit
// the pair does not configure is found out on the slow path, after the
// failed fast-path write and the access walk, before META and the shard
// are read.
func TestCostBadInput(t *testing.T) {
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 5))
	e.acquire("u", "api", limiter.Consume{"rpm": 1})
	invalid := func(consume limiter.Consume) func() {
		return func() {
			if _, err := e.lim.Acquire(context.Background(), "u", "api", consume); !limiter.IsValidationError(err) {
				t.Fatalf("consume %v: %v, want a validation error", consume, err)
			}
		}
	}
	e.check("a reserved limit name", e.measure(invalid(limiter.Consume{"wcu": 1})), cost{})
	e.check("a negative amount", e.measure(invalid(limiter.Consume{"rpm": -1})), cost{})
	e.check("a limit the pair does not have", e.measure(invalid(limiter.Consume{"rpd": 1})), cost{
		calls: costOps("UpdateItem", 1, "BatchGetItem", 1), failed: costOps("UpdateItem", 1), keys: []int{3},
	})
}

// tk reads a limit's stored balance on shard 0, millitokens.
func (e *costEnv) tk(entity, resource, name string) int64 {
	e.t.Helper()
	out, err := e.tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(costNS, entity, resource, 0).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	v, ok := out.Item[schema.BucketAttr(name, schema.LimitTokens)].(*types.AttributeValueMemberN)
	if !ok {
		e.t.Fatalf("no %s tk on the bucket", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestCostQuota: a calendar quota (docs/design.md §15) costs what a drip
// costs on every path: the first acquire after its reset edge fails the
// fast path's vu guard (the edge) and applies the reset in a refill pass
// built from the image that failure returns — two UpdateItem, no read. An exhausted quota's 429 costs nothing
// while the rejection cache holds the image that showed it spent, then the
// one failed write; the cache never rejects past the edge. As for a drip,
// the created shard's vu stops at its recheck deadline a minute on, where
// one refill pass, built from the image the process holds, reads the
// config once (docs/design.md §8).
func TestCostQuota(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	e := newCostEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.Quota("tpd", 10, daily, ""))
	e.acquire("u", "api", limiter.Consume{"tpd": 1})
	e.advance(time.Minute)
	got := e.measure(func() { e.acquire("u", "api", limiter.Consume{"tpd": 1}) })
	e.check("the created shard's one check", got, cost{
		calls: costOps("UpdateItem", 1, "BatchGetItem", 1), strong: []int{4}, writes: costOneWrite,
	})
	got = e.measure(func() { e.acquire("u", "api", limiter.Consume{"tpd": 7}) })
	e.check("a quota's fast path", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
	e.acquire("u", "api", limiter.Consume{"tpd": 1}) // its ALL_NEW shows the quota spent
	got = e.measure(func() { e.reject("u", "api", limiter.Consume{"tpd": 1}) })
	e.check("an exhausted quota's 429", got, cost{})
	e.advance(limiter.DefaultRejectionCacheTTL)
	got = e.measure(func() { e.reject("u", "api", limiter.Consume{"tpd": 1}) })
	e.check("its 429 after the cache's TTL", got, cost{calls: costOps("UpdateItem", 1), failed: costOps("UpdateItem", 1)})
	e.advance(12 * time.Hour) // past midnight
	got = e.measure(func() { e.acquire("u", "api", limiter.Consume{"tpd": 1}) })
	e.check("the first acquire after the reset edge", got, cost{
		calls:  costOps("UpdateItem", 2),
		failed: costOps("UpdateItem", 1),
		writes: costOneWrite,
	})
	got = e.measure(func() { e.acquire("u", "api", limiter.Consume{"tpd": 1}) })
	e.check("the next", got, cost{calls: costOps("UpdateItem", 1), writes: costOneWrite})
}
