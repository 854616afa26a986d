package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// rcSteps is how many random steps TestRejectionCacheNeverDecidesAnAdmission
// takes per seed (ZL_RC_STEPS overrides). Its seeds are fixed, so that a
// run is reproducible; ZL_RC_SEED runs one given seed, or a fresh one with
// ZL_RC_SEED=random.
const rcSteps = 1000

var rcSeeds = []uint64{1, 2, 3}

// TestRejectionCacheNeverDecidesAnAdmission drives random interleavings on
// DynamoDB Local — acquires by a process with the rejection cache (A) and
// one without (B, another process: it only debits), A's lease adjustments,
// commits and rollbacks, time moving, and operator writes (disable,
// bypass, soft, limit changes, top-up, reset) made in A's process — over a
// plain pair, a 2-shard pair and a cascading child with its parent, on a
// resource whose limits the operator changes, one that refills within the
// cache's TTL, and one that pairs a slow limit with a fast one (its vu
// passes while the slow one is short: rejections past vu). At
// every local rejection the table itself must agree: no shard of the
// rejected entity carries a disabled or bypass stamp, no limit with a soft
// stamp is named as a violation, a cascading child's parent is not
// disabled, and no shard could cover the request at that instant with its
// hard limits (so DynamoDB would have rejected too). At the end, every token admitted is in tc, once.
func TestRejectionCacheNeverDecidesAnAdmission(t *testing.T) {
	steps := rcSteps
	if v, err := strconv.Atoi(os.Getenv("ZL_RC_STEPS")); err == nil && v > 0 {
		steps = v
	}
	seeds := rcSeeds
	switch v := os.Getenv("ZL_RC_SEED"); {
	case v == "random":
		seeds = []uint64{uint64(time.Now().UnixNano())}
	case v != "":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ZL_RC_SEED=%q: %v", v, err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { rcProperty(t, seed, steps) })
	}
}

func rcProperty(t *testing.T, seed uint64, steps int) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with ZL_RC_SEED=%d ZL_RC_STEPS=%d", seed, steps)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	ctx := context.Background()
	tbl := ddbtest.NewTable(t)
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	newLim := func(ttl time.Duration) *limiter.Limiter {
		l, err := limiter.New(tbl.DB, tbl.Name, ns, limiter.Options{Clock: clk.Now, RejectionCacheTTL: ttl,
			Rand: func(n int) int { return rng.IntN(n) }})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newLim(0), newLim(-1)
	ctl := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now, Caches: []control.Cache{a}})
	if _, err := ctl.CreateEntity(ctx, ns, "org", config.EntityOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.CreateEntity(ctx, ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}, ""); err != nil {
		t.Fatal(err)
	}
	rpmCap, softTpm := int64(4), false
	setLimits := func() {
		tpm := limit.PerMinute("tpm", 100)
		if softTpm {
			tpm = tpm.AsSoft()
		}
		if _, err := ctl.SetResourceLimits(ctx, ns, "api", []limit.Limit{limit.PerMinute("rpm", rpmCap), tpm}, ""); err != nil {
			t.Fatal(err)
		}
	}
	setLimits()
	// fast refills within the cache's TTL: a rejection that misjudged the
	// refill since rf (past vu above all) would show there.
	if _, err := ctl.SetResourceLimits(ctx, ns, "fast", []limit.Limit{limit.Custom("rps", 3, 3, 2*time.Second)}, ""); err != nil {
		t.Fatal(err)
	}
	// mixed pairs a slow hard limit with one that refills within the
	// cache's TTL: a shard short on rpm reaches rps's full-at, its vu,
	// within the second, so rejections past vu are common whatever the
	// operator writes did to api's buckets.
	if _, err := ctl.SetResourceLimits(ctx, ns, "mixed", []limit.Limit{limit.PerMinute("rpm", 3), limit.Custom("rps", 5, 5, time.Second)}, ""); err != nil {
		t.Fatal(err)
	}
	// v gets 2 shards.
	if _, err := b.Acquire(ctx, "v", "api", limiter.Consume{"rpm": 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl.Name),
		Key: schema.BucketKey(ns, "v", "api", 0).AttributeValues(), UpdateExpression: aws.String("SET shard_count = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(2)}}); err != nil {
		t.Fatal(err)
	}

	entities := []string{"u", "v", "key", "org"}
	resources := []string{"api", "fast", "mixed"}
	// counted is the limit whose tokens the conservation check adds up.
	counted := map[string]string{"api": "rpm", "fast": "rps", "mixed": "rpm"}
	consumeOf := func(resource string) limiter.Consume {
		switch resource {
		case "fast":
			return limiter.Consume{"rps": 1 + rng.Int64N(3)}
		case "mixed":
			return limiter.Consume{"rpm": 1, "rps": 1}
		}
		return limiter.Consume{"rpm": 1, "tpm": rng.Int64N(40)}
	}
	admitted := map[[2]string]int64{} // tokens of counted[resource] each pair's tc must show
	type heldLease struct {
		*limiter.Lease
		tokens int64 // of counted[resource]
	}
	var held []heldLease
	count := func(l *limiter.Lease, tokens int64) {
		admitted[[2]string{l.Entity(), l.Resource()}] += tokens
		if p := l.Parent(); p != "" {
			admitted[[2]string{p, l.Resource()}] += tokens
		}
	}
	var locals, checked, pastVU int
	var history []string // the last actions, printed on failure
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range history[max(0, len(history)-12):] {
				t.Log(h)
			}
		}
	})
	note := func(format string, args ...any) { history = append(history, fmt.Sprintf(format, args...)) }
	for step := range steps {
		switch r := rng.IntN(100); {
		case r < 50: // A acquires
			ent, res := entities[rng.IntN(len(entities))], resources[rng.IntN(len(resources))]
			consume := consumeOf(res)
			lease, err := a.Acquire(ctx, ent, res, consume)
			note("step %d at %d: A acquires %s %s %v: %v", step, clk.Now().UnixMilli(), ent, res, consume, err)
			var rle *limiter.RateLimitExceeded
			var dis *limiter.ResourceDisabled
			switch {
			case err == nil:
				count(lease, consume[counted[res]])
				if len(held) < 6 && rng.IntN(2) == 0 {
					held = append(held, heldLease{lease, consume[counted[res]]})
				}
			case errors.As(err, &rle) && rle.Local:
				locals++
				n, past := rcCheckLocal(t, tbl, clk.Now().UnixMilli(), ent, res, consume, rle, step)
				checked += n
				if past {
					pastVU++
				}
			case errors.As(err, &rle), errors.As(err, &dis):
			default:
				t.Fatalf("step %d: A acquire %s: %v", step, ent, err)
			}
		case r < 62: // B, another process, only debits
			ent, res := entities[rng.IntN(len(entities))], resources[rng.IntN(len(resources))]
			consume := consumeOf(res)
			lease, err := b.Acquire(ctx, ent, res, consume)
			note("step %d at %d: B acquires %s %s: %v", step, clk.Now().UnixMilli(), ent, res, err)
			var rle *limiter.RateLimitExceeded
			var dis *limiter.ResourceDisabled
			switch {
			case err == nil:
				count(lease, consume[counted[res]])
			case errors.As(err, &rle) && rle.Local:
				t.Fatalf("step %d: B has no cache but rejected locally", step)
			case errors.As(err, &rle), errors.As(err, &dis):
			default:
				t.Fatalf("step %d: B acquire %s: %v", step, ent, err)
			}
		case r < 72: // A settles a held lease
			if len(held) == 0 {
				continue
			}
			i := rng.IntN(len(held))
			lease := held[i]
			held = append(held[:i], held[i+1:]...)
			note("step %d: A settles a lease of %s", step, lease.Entity())
			if rng.IntN(2) == 0 {
				count(lease.Lease, -lease.tokens)
				if err := lease.Rollback(ctx); err != nil {
					t.Fatalf("step %d: rollback: %v", step, err)
				}
				continue
			}
			// Settling an estimate: api's tpm either way, fast's rps
			// down (a credit, which sets vu to its instant).
			if lease.Resource() == "api" {
				if err := lease.Adjust("tpm", rng.Int64N(60)-30); err != nil {
					t.Fatalf("step %d: adjust: %v", step, err)
				}
			} else if d := -rng.Int64N(lease.tokens); d != 0 {
				if err := lease.Adjust("rps", d); err != nil {
					t.Fatalf("step %d: adjust: %v", step, err)
				}
				count(lease.Lease, d)
			}
			if err := lease.Commit(ctx); err != nil {
				t.Fatalf("step %d: commit: %v", step, err)
			}
		case r < 96: // time moves, mostly by less than the TTL
			clk.Advance(time.Duration(rng.IntN(800)) * time.Millisecond)
		default: // an operator write in A's process
			note("step %d: operator write", step)
			rcOperatorWrite(t, ctx, ctl, rng, &rpmCap, &softTpm, setLimits, step)
		}
	}
	for _, l := range held {
		if err := l.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Conservation: every admitted token is in tc exactly once.
	for _, ent := range entities {
		for _, res := range resources {
			var tc int64
			for shard := range schema.MaxShardCount {
				img, ok := rcTrueImage(t, tbl, ent, res, shard)
				if !ok {
					break
				}
				if li := img.Limit(counted[res]); li != nil {
					tc += li.Consumed
				}
			}
			if want := admitted[[2]string{ent, res}]; tc != want*bucket.MilliPerToken {
				t.Errorf("%s on %s: %s tc %d, want %d admitted tokens", ent, res, counted[res], tc, want)
			}
		}
	}
	if s := a.Stats(); s.LocalRejections != int64(locals) {
		t.Errorf("A counted %d local rejections, the test saw %d", s.LocalRejections, locals)
	}
	if locals < steps/50 {
		t.Errorf("only %d local rejections in %d steps: the property was hardly exercised", locals, steps)
	}
	// Rejections decided while vu had passed (after a credit, or a bucket
	// left to refill) are the ones the lazy refill must judge.
	if pastVU < 5 {
		t.Errorf("only %d of %d local rejections met a passed vu: that case was hardly exercised", pastVU, locals)
	}
	t.Logf("seed %d: %d steps, %d local rejections (%d past vu), %d shard states checked against the table", seed, steps, locals, pastVU, checked)
}

// rcOperatorWrite makes one random operator write through the controls.
func rcOperatorWrite(t *testing.T, ctx context.Context, ctl *control.Controls, rng *rand.Rand, rpmCap *int64, softTpm *bool, setLimits func(), step int) {
	t.Helper()
	// Mostly back to inherit, so that disabled and bypass come and go.
	access := []config.Access{config.AccessInherit, config.AccessInherit, config.AccessInherit, config.AccessInherit,
		config.AccessBypass, config.AccessDisabled}
	var err error
	switch rng.IntN(5) {
	case 0:
		_, err = ctl.SetAccess(ctx, ns, "", []string{"api", "fast"}[rng.IntN(2)], access[rng.IntN(len(access))], "")
	case 1:
		_, err = ctl.SetAccess(ctx, ns, []string{"u", "v", "key", "org"}[rng.IntN(4)], []string{"api", "fast"}[rng.IntN(2)], access[rng.IntN(len(access))], "")
	case 2:
		*rpmCap, *softTpm = 2+rng.Int64N(5), rng.IntN(2) == 0
		setLimits()
	case 3:
		_, err = ctl.TopUp(ctx, ns, []string{"u", "v", "key", "org"}[rng.IntN(4)], "api", map[string]int64{"rpm": 1 + rng.Int64N(2)}, control.OperationOptions{})
	case 4:
		_, err = ctl.Reset(ctx, ns, []string{"u", "v", "key", "org"}[rng.IntN(4)], "api", nil, control.OperationOptions{})
	}
	if err != nil && !schema.IsValidationError(err) { // a reset of a bucket not yet made
		t.Fatalf("step %d: operator write: %v", step, err)
	}
}

// rcTrueImage reads one shard as it is in the table (strongly consistent).
func rcTrueImage(t *testing.T, tbl *ddbtest.Table, entity, resource string, shard int) (*bucketitem.Image, bool) {
	t.Helper()
	out, err := tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl.Name),
		Key: schema.BucketKey(ns, entity, resource, shard).AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil, false
	}
	img, err := bucketitem.Decode(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	return &img, true
}

// rcCheckLocal checks one local rejection against the table at now; it
// returns how many shard states it compared, and whether the vu of one of
// them had passed (its balances are then what the refill from rf makes of
// them: the arithmetic the check applies).
func rcCheckLocal(t *testing.T, tbl *ddbtest.Table, now int64, asked, resource string, consume limiter.Consume, rle *limiter.RateLimitExceeded, step int) (int, bool) {
	t.Helper()
	rejected := rle.Statuses[0].EntityID // the child, or its parent
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: local rejection of %s (decided on %s): %s", step, asked, rejected, fmt.Sprintf(format, args...))
	}
	first, ok := rcTrueImage(t, tbl, rejected, resource, 0)
	if !ok {
		fail("no bucket in the table")
	}
	n := int(max(first.ShardCount, 1))
	pastVU := false
	for shard := range n {
		img, ok := rcTrueImage(t, tbl, rejected, resource, shard)
		if !ok {
			fail("shard %d of %d is missing: it could admit", shard, n)
		}
		if img.HasDisabled || img.Bypass.Present {
			fail("shard %d carries disabled %v / bypass %+v", shard, img.HasDisabled, img.Bypass)
		}
		pastVU = pastVU || (img.HasVU && img.VU <= now)
		var limits []bucket.ImageLimit
		for name, amount := range consume {
			li := img.Limit(name)
			if li == nil {
				fail("shard %d lacks %s", shard, name)
			}
			if li.Soft.Present {
				// A soft limit is never a reason to reject (ADR-151).
				for _, v := range rle.Violations() {
					if v.LimitName == name {
						fail("shard %d: rejected on %s, which carries a soft stamp", shard, name)
					}
				}
			}
			limits = append(limits, li.ImageLimit(amount, li.Soft.Present))
		}
		if satisfy, _ := bucket.WouldRefillSatisfy(nil, limits, img.RF, max(img.ShardCount, 1), now); satisfy {
			fail("shard %d could cover %v at this instant: %+v", shard, consume, img)
		}
	}
	if rejected == asked && first.HasCascade && first.Cascade && first.ParentID != "" {
		if p, ok := rcTrueImage(t, tbl, first.ParentID, resource, 0); ok && p.HasDisabled {
			fail("the parent %s is disabled: the answer is DynamoDB's 403", first.ParentID)
		}
	}
	return n, pastVU
}
