package limiter_test

// Benchmarks of the acquire path, side by side with the floors of
// internal/benchkit (`make bench`):
//
//   - BenchmarkAcquire: latency, DynamoDB calls and write units of an
//     acquire on DynamoDB Local, with each acquire's p50 as a ratio of the
//     bare conditional UpdateItem measured in the same run (p50/floor);
//   - BenchmarkClientCost: the client's own CPU time and allocations, with
//     no emulator: an acquire and a bare SDK UpdateItem of the same request
//     against a canned in-process endpoint (allocs-ratio, ns-ratio).
//
// The tests at the end keep the benchmarks honest: the acquire cases make
// the calls they claim, the bare call sends exactly the fast-path request,
// and the canned answer is what DynamoDB Local answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// The decorator must meter every call the limiter can make: when limiter.DB
// grows, add the method to benchkit.MeteredDB (and benchkit.DB).
var _ limiter.DB = (*benchkit.MeteredDB)(nil)

// benchNS is the namespace of every benchmark and of the canned image.
const benchNS = "bEnChNaMeSp"

// benchHuge is a capacity no benchmark run drains, in tokens.
const benchHuge = 1_000_000_000_000

// heavyLimit and heavyWarm make a heavy user's bucket (docs/decisions.md
// P25): the warm-up takes half of an hourly capacity, so the balance stays
// far below the ceiling (vu is half an hour ahead) and every timed acquire
// is a fast path.
var (
	heavyLimit = limit.PerHour("rpm", benchHuge)
	heavyWarm  = limiter.Consume{"rpm": benchHuge / 2}
)

// fastPathsPerBucket is how many fast-path acquires a benchmark sends to one
// bucket. The fast path debits the bucket's stored wcu balance (1000
// tokens, docs/design.md §2) without refilling it; today only a slow pass refills
// it, so the 1000th fast path in a row on one bucket finds wcu exhausted
// and doubles the shard count (docs/design.md §5 row 7), however slowly the 1000
// came. Spreading the acquires over a pool of warm buckets keeps every
// timed acquire on the fast path.
const fastPathsPerBucket = 900

// warmBuckets is the pool size for n fast-path acquires.
func warmBuckets(n int) int { return n/fastPathsPerBucket + 1 }

// acquireEnv is what BenchmarkAcquire's sub-benchmarks share: one table on
// DynamoDB Local, and the result of floor/UpdateItem, which runs first.
type acquireEnv struct {
	tbl   *ddbtest.Table
	floor benchkit.Result
	pair  benchkit.Result // floor/UpdateItem-pair-parallel
	runs  atomic.Int64    // tags the entities of each run, so every run starts cold
}

// acquireRun is one run of an acquire case: a limiter on the shared table
// whose calls go through a metering decorator.
type acquireRun struct {
	lim   *limiter.Limiter
	db    *benchkit.MeteredDB // the limiter's DB
	table string
	tag   string // fresh per run: the run's entity names carry it
}

// run returns a fresh run whose limiter has options o and meters into m.
func (e *acquireEnv) run(tb testing.TB, m *benchkit.Meter, o limiter.Options) acquireRun {
	tb.Helper()
	db := benchkit.Metered(e.tbl.DB, m)
	lim, err := limiter.New(db, e.tbl.Name, benchNS, o)
	if err != nil {
		tb.Fatal(err)
	}
	return acquireRun{lim: lim, db: db, table: e.tbl.Name, tag: strconv.FormatInt(e.runs.Add(1), 10)}
}

// acquireCase is one acquire sub-benchmark of BenchmarkAcquire.
type acquireCase struct {
	name string
	// goal is the p50/floor the issue asks for (0: none). It is reported
	// beside the ratio, never enforced: DynamoDB Local is too noisy to gate
	// on.
	goal float64
	// calls is the exact number of DynamoDB calls one acquire makes
	// (0: not fixed). A run that makes another number fails.
	calls float64
	// local: the acquire makes no call at all (a local rejection).
	local bool
	opts  limiter.Options
	// setup makes n timed operations possible (limits set, buckets warm)
	// and returns the operation to time.
	setup func(tb testing.TB, r acquireRun, n int) benchkit.Op
}

// acquireCases are BenchmarkAcquire's acquire sub-benchmarks, in run order.
// fast-path-request, the fast path's own UpdateItem sent bare, comes first:
// between it and floor/UpdateItem lies what the bucket item and the
// fast-path expressions cost DynamoDB and the SDK; between it and fast-path,
// what the limiter's code costs.
//
// warm-cascade (goal ≤ 1.25× floor/UpdateItem) times an acquire whose pair
// cascades and whose cache knows it: the child's and the parent's fast-path
// writes go out in parallel (Limiter.speculatePair), 2 calls.
var acquireCases = []acquireCase{
	{name: "fast-path-request", calls: 1, setup: setupFastPathRequest},
	{name: "fast-path", goal: 1.10, calls: 1, setup: setupFastPath},
	{name: "light-user", calls: 1, setup: setupLightUser},
	{name: "light-user-shared", calls: 2, setup: setupLightShared},
	{name: "warm-cascade", goal: 1.25, calls: 2, setup: setupWarmCascade},
	{name: "slow-path", opts: limiter.Options{DisableSpeculativeWrites: true}, setup: setupSlowPath},
	{name: "fast-reject", calls: 1, opts: limiter.Options{RejectionCacheTTL: -1}, setup: setupFastReject},
	// local-reject: the same rejection decided by the rejection cache, no
	// call (a long TTL, so that the run never re-reads).
	{name: "local-reject", local: true, opts: limiter.Options{RejectionCacheTTL: time.Hour}, setup: setupFastReject},
	// The same three on a calendar quota (docs/design.md §15): its fast
	// path is the same one conditional UpdateItem (no schedule evaluated);
	// an exhausted one is refused from the failed write's image, then by
	// the rejection cache, each knowing the reset edge. A clock of their
	// own keeps the reset two weeks away whatever the date of the run.
	{name: "quota-fast-path", calls: 1, opts: limiter.Options{Clock: midPeriodClock()}, setup: setupQuotaFastPath},
	{name: "quota-fast-reject", calls: 1, opts: limiter.Options{RejectionCacheTTL: -1, Clock: midPeriodClock()}, setup: setupQuotaFastReject},
	{name: "quota-local-reject", local: true, opts: limiter.Options{RejectionCacheTTL: time.Hour, Clock: midPeriodClock()}, setup: setupQuotaFastReject},
}

// midPeriodClock reads a fixed mid-month instant advanced by the real
// time since it was made, so a quota case never meets its monthly reset.
func midPeriodClock() func() time.Time {
	base, start := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), time.Now()
	return func() time.Time { return base.Add(time.Since(start)) }
}

// monthly resets at 00:00 UTC on the 1st.
var monthly = schedule.Resets{schedule.MustParseCron("0 0 1 * *")}

// setupQuotaFastPath: warm buckets of a monthly quota that never runs out;
// each timed acquire is one conditional UpdateItem, as for a drip.
func setupQuotaFastPath(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-quota"
	benchSetLimits(tb, r.lim, resource, limit.Quota("tpm-month", benchHuge, monthly, ""))
	entities := make([]string, warmBuckets(n))
	for i := range entities {
		entities[i] = "quota-" + r.tag + "-" + strconv.Itoa(i)
	}
	benchWarm(tb, r.lim, resource, limiter.Consume{"tpm-month": 1}, entities...)
	return func(ctx context.Context, i int) error {
		_, err := r.lim.Acquire(ctx, entities[i%len(entities)], resource, limiter.Consume{"tpm-month": 1})
		return err
	}
}

// setupQuotaFastReject: a monthly quota of one token, spent.
func setupQuotaFastReject(tb testing.TB, r acquireRun, _ int) benchkit.Op {
	const resource = "bench-quota-reject"
	benchSetLimits(tb, r.lim, resource, limit.Quota("tpm-month", 1, monthly, ""))
	entity := "quota-reject-" + r.tag
	benchWarm(tb, r.lim, resource, limiter.Consume{"tpm-month": 1}, entity)
	return func(ctx context.Context, _ int) error {
		_, err := r.lim.Acquire(ctx, entity, resource, limiter.Consume{"tpm-month": 1})
		switch {
		case err == nil:
			return errAdmitted
		case limiter.IsRateLimitError(err):
			return nil
		}
		return err
	}
}

func benchSetLimits(tb testing.TB, lim *limiter.Limiter, resource string, limits ...limit.Limit) {
	tb.Helper()
	if err := lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(context.Background(), benchNS, resource, limits); err != nil {
		tb.Fatal(err)
	}
}

// benchWarm acquires once on each entity: the first acquire of a pair
// creates its bucket on the slow path.
func benchWarm(tb testing.TB, lim *limiter.Limiter, resource string, consume limiter.Consume, entities ...string) {
	tb.Helper()
	for _, ent := range entities {
		if _, err := lim.Acquire(context.Background(), ent, resource, consume); err != nil {
			tb.Fatalf("warming %s: %v", ent, err)
		}
	}
}

// fastBuckets sets a limit that never rejects on resource and warms a pool
// of buckets for n fast-path acquires; it returns their entities.
func fastBuckets(tb testing.TB, r acquireRun, resource string, n int) []string {
	tb.Helper()
	benchSetLimits(tb, r.lim, resource, heavyLimit)
	entities := make([]string, warmBuckets(n))
	for i := range entities {
		entities[i] = "fast-" + r.tag + "-" + strconv.Itoa(i)
	}
	benchWarm(tb, r.lim, resource, heavyWarm, entities...)
	return entities
}

// setupLightUser: a light user's buckets — a per-minute capacity so large
// that one token refills in a millisecond, so every acquire finds the
// bucket back at its ceiling and vu passed (docs/decisions.md P25). The
// process holds the image of its last write to each bucket: each timed
// acquire is one refill pass built from it, no read.
func setupLightUser(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-light"
	benchSetLimits(tb, r.lim, resource, limit.PerMinute("rpm", benchHuge))
	entities := make([]string, warmBuckets(n))
	for i := range entities {
		entities[i] = "light-" + r.tag + "-" + strconv.Itoa(i)
	}
	// Twice: the create, then the first refill pass, which checks the
	// created bucket's limits against config once (docs/design.md §8).
	benchWarm(tb, r.lim, resource, limiter.Consume{"rpm": 1}, entities...)
	benchWarm(tb, r.lim, resource, limiter.Consume{"rpm": 1}, entities...)
	return func(ctx context.Context, i int) error {
		_, err := r.lim.Acquire(ctx, entities[i%len(entities)], resource, limiter.Consume{"rpm": 1})
		return err
	}
}

// setupLightShared: the light user's buckets shared by two processes (two
// limiters, separate caches) taking turns, so the image each holds is
// always one write old: its refill pass loses its pins and is sent again
// from the image the failure returns — two calls, the first a failed
// conditional write (charged 1 WCU by DynamoDB; DynamoDB Local reports no
// capacity for it).
func setupLightShared(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-light-shared"
	benchSetLimits(tb, r.lim, resource, limit.PerMinute("rpm", benchHuge))
	other, err := limiter.New(r.db, r.table, benchNS, limiter.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	entities := make([]string, warmBuckets(n))
	for i := range entities {
		entities[i] = "shared-" + r.tag + "-" + strconv.Itoa(i)
	}
	benchWarm(tb, r.lim, resource, limiter.Consume{"rpm": 1}, entities...)
	benchWarm(tb, other, resource, limiter.Consume{"rpm": 1}, entities...) // and the created bucket's one check (§8)
	lims := [2]*limiter.Limiter{r.lim, other}
	return func(ctx context.Context, i int) error {
		ent := i % len(entities)
		_, err := lims[(i/len(entities))%2].Acquire(ctx, entities[ent], resource, limiter.Consume{"rpm": 1})
		return err
	}
}

// setupFastPath: warm buckets with a limit that never rejects; each timed
// acquire is one conditional UpdateItem.
func setupFastPath(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-fast"
	entities := fastBuckets(tb, r, resource, n)
	return func(ctx context.Context, i int) error {
		_, err := r.lim.Acquire(ctx, entities[i%len(entities)], resource, limiter.Consume{"rpm": 1})
		return err
	}
}

// setupWarmCascade: warmBuckets(n) (parent, child) pairs with a limit that
// never rejects, each child cascading to its parent; one acquire per child
// creates both buckets and teaches the pair cache the cascade.
func setupWarmCascade(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-cascade"
	ctx := context.Background()
	benchSetLimits(tb, r.lim, resource, heavyLimit)
	children := make([]string, warmBuckets(n))
	for i := range children {
		parent := "org-" + r.tag + "-" + strconv.Itoa(i)
		children[i] = "key-" + r.tag + "-" + strconv.Itoa(i)
		if _, err := r.lim.Store().Writer(capability.ConfigWrite{}).CreateEntity(ctx, benchNS, parent, config.EntityOptions{}); err != nil {
			tb.Fatal(err)
		}
		if _, err := r.lim.Store().Writer(capability.ConfigWrite{}).CreateEntity(ctx, benchNS, children[i], config.EntityOptions{ParentID: parent, Cascade: true}); err != nil {
			tb.Fatal(err)
		}
	}
	benchWarm(tb, r.lim, resource, heavyWarm, children...)
	return func(ctx context.Context, i int) error {
		lease, err := r.lim.Acquire(ctx, children[i%len(children)], resource, limiter.Consume{"rpm": 1})
		if err == nil && lease.Parent() == "" {
			return errors.New("warm-cascade: the lease does not hold the parent")
		}
		return err
	}
}

// setupFastPathRequest: the same warm buckets, and on each the request the
// fast path sends, built once by the limiter's write builder at setup time
// (its clock reading stays valid far longer than a run: the bucket's ttl is
// minutes ahead) and sent bare through the same DB, with no limiter code.
func setupFastPathRequest(tb testing.TB, r acquireRun, n int) benchkit.Op {
	const resource = "bench-fast"
	entities := fastBuckets(tb, r, resource, n)
	w, now := bucketwrite.NewWrites(r.table), time.Now().UnixMilli()
	requests := make([]*dynamodb.UpdateItemInput, len(entities))
	for i, ent := range entities {
		id := schema.BucketID{Namespace: benchNS, Entity: ent, Resource: resource}
		in, err := w.Speculative(id, bucketwrite.ShapeEnforce, []bucketwrite.Declared{{Name: "rpm", Amount: 1}}, now)
		if err != nil {
			tb.Fatal(err)
		}
		requests[i] = in
	}
	return func(ctx context.Context, i int) error {
		_, err := r.db.UpdateItem(ctx, requests[i%len(requests)])
		return err
	}
}

// setupSlowPath: speculative writes off, so every acquire reads the access
// config and the bucket and writes under the rf lock (docs/design.md §5).
func setupSlowPath(tb testing.TB, r acquireRun, _ int) benchkit.Op {
	const resource = "bench-slow"
	benchSetLimits(tb, r.lim, resource, limit.PerMinute("rpm", benchHuge))
	entity := "slow-" + r.tag
	benchWarm(tb, r.lim, resource, limiter.Consume{"rpm": 1}, entity)
	return func(ctx context.Context, _ int) error {
		_, err := r.lim.Acquire(ctx, entity, resource, limiter.Consume{"rpm": 1})
		return err
	}
}

// errAdmitted is a fast-reject acquire that was admitted.
var errAdmitted = errors.New("admitted, want a rejection")

// setupFastReject: a bucket whose one token a day is spent; each timed
// acquire fails its conditional write and is rejected from the ALL_OLD
// image, since refill would not satisfy it (docs/design.md §3): one call.
func setupFastReject(tb testing.TB, r acquireRun, _ int) benchkit.Op {
	const resource = "bench-reject"
	benchSetLimits(tb, r.lim, resource, limit.PerDay("rpd", 1))
	entity := "reject-" + r.tag
	benchWarm(tb, r.lim, resource, limiter.Consume{"rpd": 1}, entity)
	return func(ctx context.Context, _ int) error {
		_, err := r.lim.Acquire(ctx, entity, resource, limiter.Consume{"rpd": 1})
		if _, ok := err.(*limiter.RateLimitExceeded); ok { //nolint:errorlint // the type itself, cheaply: this is timed
			return nil
		}
		switch {
		case err == nil:
			return errAdmitted
		case limiter.IsRateLimitError(err):
			return nil
		}
		return err
	}
}

// BenchmarkAcquire measures the acquire path on one DynamoDB Local table,
// side by side with the floors: floor/UpdateItem (the bare conditional
// UpdateItem) and floor/TransactWriteItems2 first, then each acquireCase,
// reporting p50/floor: its p50 over floor/UpdateItem's in the same run
// (only when -bench selects floor/UpdateItem too), and goal, the p50/floor
// the issue asks for, where it asks for one.
// Calls and write units per acquire come from a metering decorator on the
// limiter's DB; a failed conditional write reports no units. It runs on an
// emulator of its own (benchTable).
func BenchmarkAcquire(b *testing.B) {
	env := &acquireEnv{tbl: benchTable(b)}
	benchWarmEmulator(b, env)
	b.Run("floor", func(b *testing.B) {
		ctx := context.Background()
		b.Run("UpdateItem", func(b *testing.B) {
			var m benchkit.Meter
			op, err := benchkit.FloorUpdateItem(ctx, env.tbl.DB, env.tbl.Name, &m)
			if err != nil {
				b.Fatal(err)
			}
			env.floor = benchkit.Measure(b, &m, op)
		})
		b.Run("TransactWriteItems2", func(b *testing.B) {
			var m benchkit.Meter
			op, err := benchkit.FloorTransactWrite(ctx, env.tbl.DB, env.tbl.Name, &m)
			if err != nil {
				b.Fatal(err)
			}
			benchkit.Measure(b, &m, op)
		})
		// Two bare UpdateItems at once: what the emulator allows a warm
		// cascade's parallel writes (warm-cascade also reports its p50
		// over this one, p50/pair).
		b.Run("UpdateItem-pair-parallel", func(b *testing.B) {
			var m benchkit.Meter
			op, err := benchkit.FloorParallelUpdates(ctx, env.tbl.DB, env.tbl.Name, &m)
			if err != nil {
				b.Fatal(err)
			}
			env.pair = benchkit.Measure(b, &m, op)
		})
	})
	for _, c := range acquireCases {
		b.Run(c.name, func(b *testing.B) {
			var m benchkit.Meter
			op := c.setup(b, env.run(b, &m, c.opts), b.N)
			r := benchkit.Measure(b, &m, op)
			if c.local && r.CallsPerOp != 0 {
				b.Errorf("%s made %v DynamoDB calls per acquire, want none", c.name, r.CallsPerOp)
			}
			if c.calls > 0 && r.CallsPerOp != c.calls {
				b.Errorf("%s made %v DynamoDB calls per acquire, want %v", c.name, r.CallsPerOp, c.calls)
			}
			if c.calls == 2 && env.pair.P50 > 0 {
				b.ReportMetric(float64(r.P50)/float64(env.pair.P50), "p50/pair")
			}
			if env.floor.P50 > 0 {
				b.ReportMetric(float64(r.P50)/float64(env.floor.P50), "p50/floor")
				if c.goal > 0 {
					b.ReportMetric(c.goal, "goal")
				}
			}
		})
	}
}

// benchWarmEmulator sends a few hundred floor writes and fast-path
// acquires before anything is timed, so the floor, which runs first, does
// not pay for a cold emulator that the acquires after it no longer see.
func benchWarmEmulator(b *testing.B, env *acquireEnv) {
	const rounds = 300
	ctx := context.Background()
	floor, err := benchkit.FloorUpdateItem(ctx, env.tbl.DB, env.tbl.Name, nil)
	if err != nil {
		b.Fatal(err)
	}
	var m benchkit.Meter
	acquire := setupFastPath(b, env.run(b, &m, limiter.Options{}), rounds)
	for i := range rounds {
		if err := floor(ctx, i); err != nil {
			b.Fatal(err)
		}
		if err := acquire(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAcquireBenchCases runs every acquire case on DynamoDB Local and checks
// it makes the calls it claims: a benchmark of the wrong path is worse than
// none.
func TestAcquireBenchCases(t *testing.T) {
	env := &acquireEnv{tbl: ddbtest.NewTable(t)}
	ctx := context.Background()
	const n = 40
	for _, c := range acquireCases {
		t.Run(c.name, func(t *testing.T) {
			var m benchkit.Meter
			op := c.setup(t, env.run(t, &m, c.opts), n)
			m.Reset()
			for i := range n {
				if err := op(ctx, i); err != nil {
					t.Fatalf("acquire %d: %v", i, err)
				}
			}
			got := m.Totals()
			if c.calls > 0 && float64(got.Calls) != c.calls*n {
				t.Errorf("%d acquires made %d calls, want %v each", n, got.Calls, c.calls)
			}
			if c.local && got.Calls != 0 {
				t.Errorf("%d local rejections made %d calls, want none", n, got.Calls)
			}
			if c.calls == 0 && !c.local && got.Calls < 2*n {
				t.Errorf("%d slow-path acquires made %d calls, want at least a read and a write each", n, got.Calls)
			}
		})
	}
}

// The canned endpoint of BenchmarkClientCost. cannedImage is the ALL_NEW
// answer DynamoDB Local gives the fast-path write of cannedConsume on a
// bucket of cannedLimits that one acquire of cannedConsume created, with the
// clock at cannedNow (TestCannedImageIsDynamoDBLocals checks it, and prints
// the new answer when the item's shape changes).
const (
	cannedEndpoint = "http://dynamodb.canned.invalid" // never dialled: the RoundTripper answers
	cannedTable    = "canned-table"
	cannedEntity   = "canned-user"
	cannedResource = "canned-model"
	cannedImage    = `{"Attributes":{"b_rpm_rp":{"N":"60000"},"b_tpm_ra":{"N":"100000000000"},"b_tpm_tc":{"N":"200000"},` +
		`"b_tpm_cp":{"N":"100000000000"},"b_rpm_tk":{"N":"999998000"},"b_wcu_rp":{"N":"1000"},` +
		`"GSI4SK":{"S":"BUCKET#canned-user#canned-model#0"},"pgen":{"N":"0"},"GSI3SK":{"S":"BUCKET#canned-model#0"},` +
		`"GSI2SK":{"S":"BUCKET#canned-user#0"},"b_wcu_tk":{"N":"999000"},"shard_count":{"N":"1"},"SK":{"S":"#STATE"},` +
		`"b_wcu_cp":{"N":"1000000"},"b_wcu_ra":{"N":"1000000"},"b_wcu_tc":{"N":"1000"},"resource":{"S":"canned-model"},` +
		`"cascade":{"BOOL":false},"GSI4PK":{"S":"bEnChNaMeSp"},"GSI3PK":{"S":"bEnChNaMeSp/ENTITY#canned-user"},` +
		`"GSI2PK":{"S":"bEnChNaMeSp/RESOURCE#canned-model"},"entity_id":{"S":"canned-user"},"ttl":{"N":"1795954020"},` +
		`"b_tpm_tk":{"N":"99999800000"},"b_rpm_cp":{"N":"1000000000"},"b_rpm_ra":{"N":"1000000000"},"b_rpm_tc":{"N":"2000"},` +
		`"rf":{"N":"1795953600000"},"PK":{"S":"bEnChNaMeSp/BUCKET#canned-user#canned-model#0"},"b_tpm_rp":{"N":"60000"},"vu":{"N":"1795953600001"},` +
		`"recheck":{"N":"1795953660000"}}}`
)

var (
	cannedNow    = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cannedLimits = []limit.Limit{limit.PerMinute("rpm", 1_000_000), limit.PerMinute("tpm", 100_000_000)}
)

func cannedConsume() limiter.Consume { return limiter.Consume{"rpm": 1, "tpm": 100} }

// cannedDynamoDB is an http.RoundTripper that answers every UpdateItem with
// cannedImage (and its x-amz-crc32) and anything else with a 400. It stands
// in for the whole network: what a benchmark through it measures is the
// client alone (SDK, limiter), not an HTTP transport or a server.
type cannedDynamoDB struct {
	body  []byte
	crc   string
	calls atomic.Int64

	record   bool // keep request bodies (tests)
	mu       sync.Mutex
	requests [][]byte
}

func newCannedDynamoDB() *cannedDynamoDB {
	body := []byte(cannedImage)
	return &cannedDynamoDB{body: body, crc: strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}
}

// RoundTrip implements http.RoundTripper.
func (c *cannedDynamoDB) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	if req.Body != nil {
		if c.record {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.requests = append(c.requests, b)
			c.mu.Unlock()
		} else if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	status, body, crc := http.StatusOK, c.body, c.crc
	if target := req.Header.Get("X-Amz-Target"); target != "DynamoDB_20120810.UpdateItem" {
		status = http.StatusBadRequest
		body = []byte(`{"__type":"com.amazon.coral.service#UnknownOperationException","message":"canned endpoint answers UpdateItem only, not ` + target + `"}`)
		crc = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
	}
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amz-Crc32":      {crc},
			"X-Amzn-Requestid": {"canned"},
		},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}, nil
}

func (c *cannedDynamoDB) recorded() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.requests...)
}

// client is an SDK client, configured as every client of the project is
// (ddblocal.DynamoDB), whose HTTP client is the canned endpoint.
func (c *cannedDynamoDB) client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: c}
	}}, optFns...)
	return ddblocal.DynamoDB(cannedEndpoint, opts...)
}

// cannedFastPath is the request the limiter's fast path sends for
// cannedConsume at now: built by the limiter's own write builder.
func cannedFastPath(tb testing.TB, table string, now time.Time) *dynamodb.UpdateItemInput {
	tb.Helper()
	id := schema.BucketID{Namespace: benchNS, Entity: cannedEntity, Resource: cannedResource}
	in, err := bucketwrite.NewWrites(table).Speculative(id, bucketwrite.ShapeEnforce,
		[]bucketwrite.Declared{{Name: "rpm", Amount: 1}, {Name: "tpm", Amount: 100}}, now.UnixMilli())
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// measureClientCost runs op b.N times, reporting cpu-ns/op (process CPU
// time per call) beside the standard columns.
func measureClientCost(b *testing.B, op func() error) {
	b.Helper()
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	cpu0, cpuOK := benchkit.CPUTime()
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	cpu1, _ := benchkit.CPUTime()
	b.StopTimer()
	if cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// cannedClock is the clock of the limiter and of the bare request of
// BenchmarkClientCost. It reads the wall clock, as the default clock does,
// so the acquire pays what a clock read costs, but answers cannedNow: the
// canned image was written at cannedNow and its vu is 1 ms later, so on
// the wall clock every acquire after the first would find vu passed and
// take a refill pass, which resolves config (a GetItem the canned endpoint
// refuses), not the fast path.
func cannedClock() time.Time {
	_ = time.Now()
	return cannedNow
}

// cannedBare returns the bare call of BenchmarkClientCost: an SDK
// UpdateItem of the fast-path request at cannedNow, built once, sent to
// canned.
func cannedBare(tb testing.TB, canned *cannedDynamoDB) func() error {
	tb.Helper()
	ctx := context.Background()
	db := canned.client()
	in := cannedFastPath(tb, cannedTable, cannedNow)
	if _, err := db.UpdateItem(ctx, in); err != nil {
		tb.Fatal(err)
	}
	return func() error {
		_, err := db.UpdateItem(ctx, in)
		return err
	}
}

// cannedAcquire returns the acquire of BenchmarkClientCost: lim.Acquire on
// canned, by a limiter on cannedClock whose pair cache one acquire has
// warmed. canned answers UpdateItem only, so an acquire that strays from
// the fast path fails.
func cannedAcquire(tb testing.TB, canned *cannedDynamoDB) func() error {
	tb.Helper()
	return cannedAcquireWith(tb, canned, limiter.Options{})
}

// cannedAcquireWith is cannedAcquire by a limiter with options o (its
// clock cannedClock).
func cannedAcquireWith(tb testing.TB, canned *cannedDynamoDB, o limiter.Options) func() error {
	tb.Helper()
	return acquireOn(tb, canned.client(), o)
}

// acquireOn is cannedAcquireWith's acquire on db, a client of a canned
// endpoint however it is reached (in process, or over HTTP:
// cannedServer).
func acquireOn(tb testing.TB, db *dynamodb.Client, o limiter.Options) func() error {
	tb.Helper()
	ctx := context.Background()
	o.Clock = cannedClock
	lim, err := limiter.New(db, cannedTable, benchNS, o)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := lim.Acquire(ctx, cannedEntity, cannedResource, cannedConsume()); err != nil {
		tb.Fatal(err)
	}
	return func() error {
		// A literal Consume per call, as callers write it.
		_, err := lim.Acquire(ctx, cannedEntity, cannedResource, limiter.Consume{"rpm": 1, "tpm": 100})
		return err
	}
}

// BenchmarkClientCost measures the client's own CPU time and allocations
// per call, with no emulator: bare-UpdateItem is an SDK UpdateItem of
// exactly the fast-path request (built once, sent b.N times), acquire is
// lim.Acquire of the same two limits with a warm pair cache, so it is that
// request plus everything the limiter does around it (validation, the
// write's construction, the image's decoding, the lease). Both go to the
// same canned endpoint, which answers UpdateItem only. Each reports
// cpu-ns/op (process CPU time per call) beside ns/op (wall time). After its
// timed loop, acquire runs b.N more acquires interleaved with b.N bare
// calls (benchkit.PairedCost) and reports acquire over bare: ns-ratio (CPU time),
// allocs-ratio and B-ratio. The goals are ns-ratio ≤ 1.10 and
// allocs-ratio ≤ 1.05 (docs/costs.md). limiter-only is the acquire with
// no SDK call at all.
func BenchmarkClientCost(b *testing.B) {
	b.Run("bare-UpdateItem", func(b *testing.B) {
		measureClientCost(b, cannedBare(b, newCannedDynamoDB()))
	})
	b.Run("acquire", func(b *testing.B) {
		canned := newCannedDynamoDB()
		acquire := cannedAcquire(b, canned)
		before := canned.calls.Load()
		measureClientCost(b, acquire)
		if calls := canned.calls.Load() - before; calls != int64(b.N) {
			b.Fatalf("%d acquires sent %d requests, want one each", b.N, calls)
		}
		op, ref, err := benchkit.PairedCost(b.N, acquire, cannedBare(b, newCannedDynamoDB()))
		if err != nil {
			b.Fatal(err)
		}
		if calls := canned.calls.Load() - before; calls != 2*int64(b.N) {
			b.Fatalf("%d acquires sent %d requests, want one each", 2*b.N, calls)
		}
		b.ReportMetric(op.CPU/ref.CPU, "ns-ratio")
		b.ReportMetric(op.Allocs/ref.Allocs, "allocs-ratio")
		b.ReportMetric(op.Bytes/ref.Bytes, "B-ratio")
	})
	// limiter-only is the same acquire on a DB that hands back the canned
	// answer with no SDK call: the limiter's own share, which the two
	// cases above compare through the SDK's noise.
	b.Run("limiter-only", func(b *testing.B) {
		measureClientCost(b, sdkFreeAcquire(b))
	})
}

// TestBareCallSendsTheFastPathRequest: the bare call and the acquire of
// BenchmarkClientCost, set up as the benchmark sets them up, send the same
// request body, so the benchmark compares the limiter with exactly its own
// DynamoDB call.
func TestBareCallSendsTheFastPathRequest(t *testing.T) {
	canned := newCannedDynamoDB()
	canned.record = true
	bare := cannedBare(t, canned)
	acquire := cannedAcquire(t, canned)
	for _, f := range []func() error{bare, acquire} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	reqs := canned.recorded()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (each side's setup call and one call)", len(reqs))
	}
	var want map[string]any
	if err := json.Unmarshal(reqs[0], &want); err != nil {
		t.Fatal(err)
	}
	for i, req := range reqs[1:] {
		var got map[string]any
		if err := json.Unmarshal(req, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("request %d differs from the bare call's:\nbare %s\ngot  %s", i+1, reqs[0], req)
		}
	}
}

// TestClientCostSetup runs BenchmarkClientCost's acquire as the timed loop
// and benchkit.PairedCost run it: many times in a row, each one UpdateItem (the only
// call the canned endpoint answers), so the benchmark's setup cannot break
// unnoticed (it did once: the canned image's vu fell behind the wall
// clock, and every timed acquire became a refill pass).
func TestClientCostSetup(t *testing.T) {
	canned := newCannedDynamoDB()
	acquire := cannedAcquire(t, canned)
	const n = 2*benchkit.PairBlock + 1
	before := canned.calls.Load()
	op, ref, err := benchkit.PairedCost(n, acquire, cannedBare(t, newCannedDynamoDB()))
	if err != nil {
		t.Fatal(err)
	}
	if calls := canned.calls.Load() - before; calls != n {
		t.Errorf("%d acquires sent %d requests, want one each", n, calls)
	}
	if op.CPU <= 0 || ref.CPU <= 0 || op.Allocs <= 0 || ref.Allocs <= 0 {
		t.Errorf("PairedCost measured %+v and %+v per call, want time and allocations on both sides", op, ref)
	}
}

// TestCannedEndpointAnswersLikeDynamoDB: an acquire against the canned
// endpoint, with response checksum validation on, is one call and returns a
// lease whose Remaining is the canned image's balance.
func TestCannedEndpointAnswersLikeDynamoDB(t *testing.T) {
	canned := newCannedDynamoDB()
	db := canned.client(func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = false })
	lim, err := limiter.New(db, cannedTable, benchNS, limiter.Options{Clock: cannedClock})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := lim.Acquire(context.Background(), cannedEntity, cannedResource, cannedConsume())
	if err != nil {
		t.Fatal(err)
	}
	// b_rpm_tk 999998000 and b_tpm_tk 99999800000 millitokens, at rf = now.
	for name, want := range map[string]int64{"rpm": 999_998, "tpm": 99_999_800} {
		if got, ok := lease.Remaining(name); !ok || got != want {
			t.Errorf("Remaining(%s) = %d, %v; want %d", name, got, ok, want)
		}
	}
	if lease.Shard() != 0 || lease.Bypassed() || lease.Degraded() {
		t.Errorf("lease shard %d, bypassed %v, degraded %v; want 0, false, false", lease.Shard(), lease.Bypassed(), lease.Degraded())
	}
	if n := canned.calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	// Anything but an UpdateItem is refused, so a benchmark that strays
	// from the fast path fails instead of measuring something else.
	_, err = db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(cannedTable), Key: schema.BucketKey(benchNS, cannedEntity, cannedResource, 0).AttributeValues()})
	if err == nil {
		t.Fatal("the canned endpoint answered a GetItem")
	}
}

// TestCannedImageIsDynamoDBLocals creates the canned bucket on DynamoDB
// Local exactly as the canned image says (one acquire at cannedNow), sends
// the fast-path request and checks DynamoDB Local's answer equals the
// canned one. When the bucket item changes shape, it prints the new answer
// to paste into cannedImage.
func TestCannedImageIsDynamoDBLocals(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	clock := func() time.Time { return cannedNow }
	lim, err := limiter.New(tbl.DB, tbl.Name, benchNS, limiter.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, benchNS, cannedResource, cannedLimits); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Acquire(ctx, cannedEntity, cannedResource, cannedConsume()); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	emu := ddblocal.DynamoDB(tbl.Endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: recordBody{&raw}}
	})
	got, err := emu.UpdateItem(ctx, cannedFastPath(t, tbl.Name, cannedNow))
	if err != nil {
		t.Fatal(err)
	}
	want, err := newCannedDynamoDB().client().UpdateItem(ctx, cannedFastPath(t, cannedTable, cannedNow))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Attributes, want.Attributes) {
		t.Fatalf("DynamoDB Local answers the fast path differently from cannedImage; its answer:\n%s", raw)
	}
}

// recordBody is a RoundTripper to the real network that keeps the last
// response body.
type recordBody struct{ last *[]byte }

func (r recordBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	*r.last = b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// imageDB answers every UpdateItem with one decoded output, and nothing
// else: the limiter's side of an acquire, without the SDK's.
type imageDB struct {
	limiter.DB
	out *dynamodb.UpdateItemOutput
}

func (d imageDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return d.out, nil
}

// sdkFreeAcquire returns BenchmarkClientCost's acquire on a limiter whose
// DB hands back the canned answer with no SDK call (imageDB).
func sdkFreeAcquire(tb testing.TB) func() error {
	tb.Helper()
	return sdkFreeAcquireWith(tb, limiter.Options{})
}

// sdkFreeAcquireWith is sdkFreeAcquire by a limiter with options o (its
// clock cannedClock).
func sdkFreeAcquireWith(tb testing.TB, o limiter.Options) func() error {
	tb.Helper()
	ctx := context.Background()
	out, err := newCannedDynamoDB().client().UpdateItem(ctx, cannedFastPath(tb, cannedTable, cannedNow))
	if err != nil {
		tb.Fatal(err)
	}
	o.Clock = cannedClock
	lim, err := limiter.New(imageDB{out: out}, cannedTable, benchNS, o)
	if err != nil {
		tb.Fatal(err)
	}
	return func() error {
		// A literal Consume per call, as callers write it.
		_, err := lim.Acquire(ctx, cannedEntity, cannedResource, limiter.Consume{"rpm": 1, "tpm": 100})
		return err
	}
}

// TestAcquireAllocs guards the limiter's own allocations of a fast-path
// acquire (BenchmarkClientCost's acquire less its SDK call): the request,
// the write (one string of numbers, the input block, the values map; the
// key and names maps are shared), the image and its limits, and the lease.
func TestAcquireAllocs(t *testing.T) {
	acquireErr := sdkFreeAcquire(t)
	acquire := func() {
		if err := acquireErr(); err != nil {
			t.Fatal(err)
		}
	}
	acquire()
	if n := testing.AllocsPerRun(200, acquire); n > 8 {
		t.Errorf("a fast-path acquire makes %v allocations of its own, want ≤ 8", n)
	}
}
