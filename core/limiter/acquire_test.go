package limiter_test

import (
	"context"
	"errors"
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
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

const ns = "tEsTnAmEsP0"

func newClock() *clock.Manual { return clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) }

// env is one test's table, proxy and limiter.
type env struct {
	t     *testing.T
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	clk   *clock.Manual
	lim   *limiter.Limiter
}

func newEnv(t *testing.T, o limiter.Options) *env {
	t.Helper()
	tbl := ddbtest.NewTable(t)
	p := faultproxy.Start(t, tbl.Endpoint)
	clk := newClock()
	if o.Clock == nil {
		o.Clock = clk.Now
	}
	if o.Rand == nil {
		o.Rand = func(int) int { return 0 }
	}
	db := p.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	lim, err := limiter.New(db, tbl.Name, ns, o)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, tbl: tbl, proxy: p, clk: clk, lim: lim}
}

func (e *env) setResourceLimits(resource string, limits ...limit.Limit) {
	e.t.Helper()
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(context.Background(), ns, resource, limits); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) bucket(entity, resource string, shard int) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.tbl.Name), ConsistentRead: aws.Bool(true),
		Key: schema.BucketKey(ns, entity, resource, shard).AttributeValues(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

func (e *env) n(item map[string]types.AttributeValue, attr string) string {
	e.t.Helper()
	v, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		e.t.Fatalf("%s missing in %v", attr, item)
	}
	return v.Value
}

func (e *env) calls(op string) int { return e.proxy.StatsFor(op).Forwarded }

// TestFirstAcquireCreatesThenFastPath: the first acquire creates the shard on
// the slow path; the next ones are one conditional UpdateItem each.
func TestFirstAcquireCreatesThenFastPath(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", limit.PerMinute("rpm", 5), limit.PerMinute("tpm", 1000))
	ctx := context.Background()
	lease, err := e.lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"rpm": 1, "tpm": 100})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := lease.Remaining("tpm"); r != 900 {
		t.Fatalf("tpm remaining = %d, want 900", r)
	}
	item := e.bucket("key-1", "gpt-4", 0)
	for attr, want := range map[string]string{
		"b_rpm_tk": "4000", "b_rpm_tc": "1000", "b_tpm_tk": "900000", "b_tpm_tc": "100000",
		"b_rpm_cp": "5000", "b_rpm_ra": "5000", "b_rpm_rp": "60000", "b_wcu_tk": "1000000", "shard_count": "1",
	} {
		if got := e.n(item, attr); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
	if _, ok := item["ttl"]; !ok {
		t.Error("a bucket whose limits come from resource config must carry a ttl (docs/design.md §2)")
	}
	e.proxy.ResetStats()
	for i := 0; i < 3; i++ {
		if _, err := e.lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"rpm": 1, "tpm": 10}); err != nil {
			t.Fatal(err)
		}
	}
	var total int
	for _, s := range e.proxy.Stats() {
		total += s.Forwarded
	}
	if up := e.calls("UpdateItem"); up != 3 || total != 3 {
		t.Fatalf("3 fast-path acquires made %d UpdateItem and %d calls in all, want 3 and 3", up, total)
	}
	item = e.bucket("key-1", "gpt-4", 0)
	if e.n(item, "b_rpm_tk") != "1000" || e.n(item, "b_wcu_tk") != "997000" || e.n(item, "b_tpm_tc") != "130000" {
		t.Fatalf("after 3 fast paths: %v", item)
	}
}

// TestExhaustRejectRefill: capacity 5/min with the clock held still admits 5;
// the 6th is a 429 whose retry-after is when one token has dripped back.
func TestExhaustRejectRefill(t *testing.T) {
	e := newEnv(t, limiter.Options{RejectionCacheTTL: -1}) // the server decides every rejection here
	e.setResourceLimits("api", limit.PerMinute("rpm", 5))
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
	}
	e.proxy.ResetStats()
	_, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("6th acquire: %v, want RateLimitExceeded", err)
	}
	// One token at 5000 milli per 60 000 ms: 12 000 ms, reported +1 ms.
	if got := rle.RetryAfterSeconds(); got != 12.001 {
		t.Fatalf("retry after %v s, want 12.001", got)
	}
	if rle.RetryAfterHeader() != "13" {
		t.Fatalf("Retry-After %q, want 13", rle.RetryAfterHeader())
	}
	if n := e.calls("UpdateItem"); n != 1 || e.calls("BatchGetItem") != 0 {
		t.Fatalf("a fast rejection costs 1 call (the failed write), got %d UpdateItem %d BatchGetItem", n, e.calls("BatchGetItem"))
	}
	e.clk.Advance(11999 * time.Millisecond)
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); !errors.As(err, &rle) {
		t.Fatalf("1 ms early: %v, want a rejection", err)
	}
	e.clk.Advance(2 * time.Millisecond)
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 5))
	ctx := context.Background()
	cases := map[string]struct {
		entity, resource string
		consume          limiter.Consume
	}{
		"empty entity":     {"", "api", limiter.Consume{"rpm": 1}},
		"# in entity":      {"a#b", "api", limiter.Consume{"rpm": 1}},
		"oversized entity": {string(make([]byte, 300)), "api", limiter.Consume{"rpm": 1}},
		"# in resource":    {"u", "a#b", limiter.Consume{"rpm": 1}},
		"reserved wcu":     {"u", "api", limiter.Consume{"wcu": 1}},
		"reserved ttl":     {"u", "api", limiter.Consume{"ttl": 1}},
		"negative amount":  {"u", "api", limiter.Consume{"rpm": -1}},
		"nothing declared": {"u", "api", limiter.Consume{}},
		"unknown limit":    {"u", "api", limiter.Consume{"tpm": 1}},
		"default resource": {"u", "_default_", limiter.Consume{"rpm": 1}},
	}
	for name, c := range cases {
		_, err := e.lim.Acquire(ctx, c.entity, c.resource, c.consume)
		if !limiter.IsValidationError(err) {
			t.Errorf("%s: err = %v, want a validation error", name, err)
		}
	}
	out, err := e.tbl.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if sk := it["SK"].(*types.AttributeValueMemberS).Value; sk == "#STATE" {
			t.Fatalf("bad input wrote a bucket: %v", it["PK"])
		}
	}
}

func TestLeaseAdjustCommitAndRollback(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("llm", limit.PerHour("tpm", 10_000))
	ctx := context.Background()
	lease, err := e.lim.Acquire(ctx, "u", "llm", limiter.Consume{"tpm": 500})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Adjust("tpm", 250); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release("tpm", 100); err != nil {
		t.Fatal(err)
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	item := e.bucket("u", "llm", 0)
	if e.n(item, "b_tpm_tk") != "9350000" || e.n(item, "b_tpm_tc") != "650000" {
		t.Fatalf("after 500 + 250 − 100: tk %s tc %s, want 9350000 and 650000", e.n(item, "b_tpm_tk"), e.n(item, "b_tpm_tc"))
	}
	if err := lease.Adjust("tpm", 1); !errors.Is(err, limiter.ErrLeaseExpired) {
		t.Fatalf("adjust after commit: %v, want ErrLeaseExpired", err)
	}
	// Rollback restores exactly the initial consumption.
	lease, err = e.lim.Acquire(ctx, "u", "llm", limiter.Consume{"tpm": 1234})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	item = e.bucket("u", "llm", 0)
	if e.n(item, "b_tpm_tk") != "9350000" || e.n(item, "b_tpm_tc") != "650000" {
		t.Fatalf("after rollback: tk %s tc %s", e.n(item, "b_tpm_tk"), e.n(item, "b_tpm_tc"))
	}
	// Consume checks the lease's view and rejects without writing.
	lease, err = e.lim.Acquire(ctx, "u", "llm", limiter.Consume{"tpm": 0})
	if err != nil {
		t.Fatal(err)
	}
	var rle *limiter.RateLimitExceeded
	if err := lease.Consume("tpm", 9351); !errors.As(err, &rle) {
		t.Fatalf("consume beyond the balance: %v", err)
	}
	if err := lease.Consume("tpm", 9350); err != nil {
		t.Fatal(err)
	}
}

// TestNoOverAdmission: 32 goroutines on one entity with the clock held still
// admit exactly the capacity, with 1 and 4 shards.
func TestNoOverAdmission(t *testing.T) {
	for _, shards := range []int64{1, 4} {
		t.Run(map[int64]string{1: "1 shard", 4: "4 shards"}[shards], func(t *testing.T) {
			var mu sync.Mutex
			seq := 0
			e := newEnv(t, limiter.Options{Rand: func(n int) int {
				mu.Lock()
				defer mu.Unlock()
				seq++
				return seq % n
			}})
			const capacity = 40
			e.setResourceLimits("api", limit.PerDay("rpd", capacity))
			ctx := context.Background()
			if shards > 1 {
				// Create shard 0, then raise the pair to `shards` shards.
				l, err := e.lim.Acquire(ctx, "hot", "api", limiter.Consume{"rpd": 0})
				if err != nil {
					t.Fatal(err)
				}
				_ = l
				_, err = e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "hot", "api", 0).AttributeValues(),
					UpdateExpression:          aws.String("SET shard_count = :s, b_rpd_tk = :t"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: "4"}, ":t": &types.AttributeValueMemberN{Value: "10000"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.lim.Acquire(ctx, "hot", "api", limiter.Consume{"rpd": 0}); err != nil {
					t.Fatal(err) // learns the shard count from the image
				}
			}
			if got := e.hammer("hot", "api", 32, 4, limiter.Consume{"rpd": 1}); got != capacity {
				t.Fatalf("admitted %d of 128 with capacity %d", got, capacity)
			}
		})
	}
}

func TestWCUExhaustionDoublesShardZero(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 1000))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "u", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET b_wcu_tk = :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "500"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatalf("acquire on an exhausted wcu: %v (it doubles, then takes the slow path)", err)
	}
	if got := e.n(e.bucket("u", "api", 0), "shard_count"); got != "2" {
		t.Fatalf("shard_count = %s, want 2", got)
	}
	// The fast path never refills wcu; the aggregator (or a slow pass)
	// does. Refill it as the aggregator would, then let a second process
	// draw shard 1: it creates it lazily with the per-shard share.
	_, err = e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "u", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET b_wcu_tk = :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":f": &types.AttributeValueMemberN{Value: "1000000"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := limiter.New(e.proxy.DynamoDB(), e.tbl.Name, ns, limiter.Options{Clock: e.clk.Now, Rand: func(n int) int { return n - 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	s1 := e.bucket("u", "api", 1)
	if s1 == nil {
		t.Fatal("shard 1 was not created")
	}
	if got := e.n(s1, "b_rpm_tk"); got != "499000" {
		t.Fatalf("shard 1 tk = %s, want 500 tokens share − 1", got)
	}
}

func TestDisabledStampRefuses(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "u", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET disabled = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	var dis *limiter.ResourceDisabled
	if !errors.As(err, &dis) || dis.Level != limiter.LevelBucket || limiter.IsRateLimitError(err) {
		t.Fatalf("err = %v, want ResourceDisabled at bucket level", err)
	}
}

func TestOnUnavailable(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.ProvisionedThroughputExceeded()})
	_, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	var un *limiter.RateLimiterUnavailable
	if !errors.As(err, &un) || !limiter.IsInfrastructureError(err) {
		t.Fatalf("block: err = %v, want RateLimiterUnavailable", err)
	}
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Fatalf("the cause must be the throttle: %v", err)
	}
	lease, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}, limiter.WithOnUnavailable(config.OnUnavailableAllow))
	if err != nil || !lease.Degraded() {
		t.Fatalf("allow: lease %v err %v, want a degraded lease", lease, err)
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The limiter's own default applies when neither the call nor the
	// system config says; the system config wins over it.
	lim, err := limiter.New(e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), e.tbl.Name, ns,
		limiter.Options{Clock: e.clk.Now, OnUnavailable: config.OnUnavailableAllow, ConfigCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	if lease, err := lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil || !lease.Degraded() {
		t.Fatalf("Options.OnUnavailable allow: lease %v err %v, want a degraded lease", lease, err)
	}
	if err := config.NewStore(e.tbl.DB, e.tbl.Name).Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("rpm", 100)},
		config.SystemOptions{OnUnavailable: config.OnUnavailableBlock}); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); !errors.As(err, &un) {
		t.Fatalf("system block over Options allow: %v, want RateLimiterUnavailable", err)
	}
}

func TestSpeculativeWritesOff(t *testing.T) {
	e := newEnv(t, limiter.Options{DisableSpeculativeWrites: true})
	e.setResourceLimits("api", limit.PerMinute("rpm", 3))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	var rle *limiter.RateLimitExceeded
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); !errors.As(err, &rle) {
		t.Fatalf("4th: %v", err)
	}
	if got := e.n(e.bucket("u", "api", 0), "b_wcu_tk"); got != "1000000" {
		t.Fatalf("the slow path never consumes wcu: b_wcu_tk = %s", got)
	}
}

// TestWCURunDownBySlowTrafficDoesNotDouble: the stored wcu falls one token
// per fast-path write and only rf writers credit it back; when the refill
// earned since rf covers the write, the partition is not hot: the slow path
// refills wcu and nothing doubles (docs/decisions.md P21).
func TestWCURunDownBySlowTrafficDoesNotDouble(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 1000))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	e.setAttr("u", "SET b_wcu_tk = :z", map[string]types.AttributeValue{":z": nv("500")})
	e.clk.Advance(2 * time.Second)
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	item := e.bucket("u", "api", 0)
	if got := e.n(item, "shard_count"); got != "1" {
		t.Fatalf("shard_count = %s, want 1: slow traffic is not write pressure", got)
	}
	if got := e.n(item, "b_wcu_tk"); got != "1000000" {
		t.Fatalf("b_wcu_tk = %s, want the slow pass to refill it to 1000000", got)
	}
}

// hammer runs goroutines × each concurrent acquires of consume on (entity,
// resource) and returns how many were admitted; any error other than a
// rate limit fails the test.
func (e *env) hammer(entity, resource string, goroutines, each int, consume limiter.Consume) int64 {
	e.t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := e.lim.Acquire(context.Background(), entity, resource, consume)
				var rle *limiter.RateLimitExceeded
				switch {
				case err == nil:
					admitted.Add(1)
				case !errors.As(err, &rle):
					e.t.Errorf("acquire: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return admitted.Load()
}
