package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// The quota conservation invariants of ADR-145 (docs/design.md §15) over
// random interleavings of acquires by two clients whose views of the
// shard count differ, doublings by a third, and reset edges crossed on
// the injected clock, operators' top-ups and resets, and changes of the
// configured allowance by an operator in another process (docs/design.md
// §15: a lowering clamps what the shards hold, a raise grants nothing to
// them), checked after every step against a ledger of what entered the
// period: I1 (allowance enters a period only by a reset, a fresh grant or
// a top-up of exactly N), I3/I4 (a grant is sized at a count the shard's own count
// never passes: gc ≤ shard_count, a power of two), I7 (a current-period
// shard holds at most C // gc + tu, C in force) and I8 (admitted + held
// by current-period shards + still grantable = C + top-ups this period;
// after a change of C, what the shards then held and could grant, never
// above the new C and their top-ups, stands for C).
//
// Seeds 1–3 run every time, and one more drawn afresh, logged so that a
// failure replays with QUOTA_PROPERTY_SEED=<seed>.
func TestQuotaConservationProperty(t *testing.T) {
	propertySeeds(t, "QUOTA_PROPERTY_SEED", func(t *testing.T, seed uint64) { runQuotaProperty(t, seed, 120) })
}

// propertySeeds runs a property over seeds 1–3 and one drawn afresh, each
// on a table of its own in parallel, or over the one seed the environment
// variable env names (a replay).
func propertySeeds(t *testing.T, env string, run func(t *testing.T, seed uint64)) {
	seeds := []uint64{1, 2, 3, rand.Uint64()}
	if s := os.Getenv(env); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel() // a table each
			t.Logf("replay with %s=%d", env, seed)
			run(t, seed)
		})
	}
}

// quotaLedger is the reference model: what the period's allowance became.
// The account is rebased where the allowance itself changes: at a reset
// edge and an operator's reset (to C) and at a change of the configured
// allowance, where it is what the shards then hold and can still grant
// (a lowered allowance clamps what they hold; docs/design.md §15).
type quotaLedger struct {
	capacity int64 // C in force, millitokens
	base     int64 // the period's allowance at the last rebasing, millitokens
	admitted int64 // millitokens admitted since the rebasing
	topUps   int64 // millitokens topped up since the rebasing
	period   int64 // the period's reset edge, epoch ms
}

// propertyRun is one run of a quota property: two clients (their own
// caches, as two processes) and an operator on a table of its own, a
// seeded draw, the injected clock, and the log of the steps taken.
type propertyRun struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	tbl     *ddbtest.Table
	clk     *clock.Manual
	clients []*limiter.Limiter
	ops     *control.Controls
	quota   limit.Limit
	log     []string
}

// newPropertyRun sets quota as the resource gpt-4's limit.
func newPropertyRun(t *testing.T, seed uint64, quota limit.Limit) *propertyRun {
	r := &propertyRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), tbl: ddbtest.NewTable(t),
		clk: clock.NewManual(time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)), quota: quota}
	for range 2 {
		lim, err := limiter.New(r.tbl.DB, r.tbl.Name, ns, limiter.Options{
			Clock: r.clk.Now, Rand: func(n int) int { return r.rng.IntN(n) },
			Sleep: func(context.Context, time.Duration) error { return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		r.clients = append(r.clients, lim)
	}
	if err := r.clients[0].Store().Writer(capability.ConfigWrite{}).SetResourceLimits(context.Background(), ns, "gpt-4", []limit.Limit{quota}); err != nil {
		t.Fatal(err)
	}
	r.ops = control.New(r.tbl.DB, r.tbl.Name, control.Options{Clock: r.clk.Now, Caches: []control.Cache{r.clients[0], r.clients[1]}})
	return r
}

// fail stops the run with its seed and every step taken.
func (r *propertyRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d after %d steps:\n  %s\n"+format, append([]any{r.seed, len(r.log), strings.Join(r.log, "\n  ")}, args...)...)
}

// acquire has a client drawn at random take 1 to 96 tokens of the quota:
// the millitokens admitted, 0 for a 429.
func (r *propertyRun) acquire() int64 {
	c := r.rng.IntN(len(r.clients))
	amount := int64(1 + r.rng.IntN(96))
	_, err := r.clients[c].Acquire(context.Background(), "k", "gpt-4", limiter.Consume{r.quota.Name: amount})
	var rle *limiter.RateLimitExceeded
	switch {
	case err == nil:
		r.log = append(r.log, fmt.Sprintf("client %d takes %d", c, amount))
		return amount * bucket.MilliPerToken
	case errors.As(err, &rle):
		r.log = append(r.log, fmt.Sprintf("client %d refused %d", c, amount))
	default:
		r.fail("acquire: %v", err)
	}
	return 0
}

// topUp has the operator top the quota up by 1 to 200 tokens (ADR-149):
// the millitokens granted, exactly what was asked.
func (r *propertyRun) topUp() int64 {
	n := int64(1 + r.rng.IntN(200))
	res, err := r.ops.TopUp(context.Background(), ns, "k", "gpt-4", map[string]int64{r.quota.Name: n}, control.OperationOptions{})
	switch {
	case err != nil:
		r.fail("top-up: %v", err)
	case res.Granted[r.quota.Name] != n:
		r.fail("top-up of %d granted %d", n, res.Granted[r.quota.Name])
	}
	r.log = append(r.log, fmt.Sprintf("top-up %d over %d shards", n, res.ShardsWritten))
	return n * bucket.MilliPerToken
}

// reset has the operator reset the quota: false when there is no bucket
// to reset yet.
func (r *propertyRun) reset() bool {
	var ve *schema.ValidationError
	switch _, err := r.ops.Reset(context.Background(), ns, "k", "gpt-4", nil, control.OperationOptions{}); {
	case errors.As(err, &ve):
		r.log = append(r.log, "reset of no bucket refused")
		return false
	case err != nil:
		r.fail("reset: %v", err)
	}
	r.log = append(r.log, "reset")
	return true
}

func runQuotaProperty(t *testing.T, seed uint64, steps int) {
	resets := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	r := newPropertyRun(t, seed, limit.Quota("tpd", 1024, resets, ""))
	tbl, clk, fail := r.tbl, r.clk, r.fail
	edge := func(now time.Time) int64 {
		e, _ := resets.PrevEdge(now, time.UTC)
		return e.UnixMilli()
	}
	c := int64(1024 * bucket.MilliPerToken)
	led := quotaLedger{capacity: c, base: c, period: edge(clk.Now())}
	for step := 0; step < steps; step++ {
		switch p := r.rng.IntN(100); {
		case p < 60:
			led.admitted += r.acquire()
		case p < 66:
			led.topUps += r.topUp() // exactly N this period
		case p < 70:
			// Every shard back to its share, a fresh account of the
			// period's allowance.
			if r.reset() {
				led.admitted, led.topUps, led.base = 0, 0, led.capacity
			}
		case p < 76:
			r.double()
		case p < 82:
			// The operator changes the allowance, here in another process
			// (the clients' caches keep the old one): the shards in use are
			// brought in line before the call returns; the account is
			// rebased on what they then hold and can grant, which the new
			// allowance bounds.
			// Multiples of 16 tokens, as 1024 is: the shares of every
			// count up to 16 are then whole, and I8 exact.
			n := 16 * int64(16+r.rng.IntN(112))
			r.setAllowance(n)
			led.capacity, led.admitted, led.topUps = n*bucket.MilliPerToken, 0, 0
			held, grantable, tu := quotaHoldings(t, tbl, led, clk.Now(), resets, fail)
			if held+grantable > led.capacity+tu {
				fail("after the change to %d: held %d + grantable %d above the new allowance and its top-ups %d", n, held, grantable, led.capacity+tu)
			}
			led.base = held + grantable
		default:
			d := time.Duration(1+r.rng.IntN(240)) * time.Minute
			clk.Advance(d)
			if e := edge(clk.Now()); e != led.period {
				// A new period: nothing admitted or topped up in it yet,
				// the allowance in force whole.
				led = quotaLedger{capacity: led.capacity, base: led.capacity, period: e}
			}
			r.log = append(r.log, fmt.Sprintf("clock +%v to %s", d, clk.Now().Format("Jan 2 15:04")))
		}
		checkQuotaInvariants(t, tbl, led, clk.Now(), resets, fail)
	}
	t.Logf("steps by kind: %v; shard count at the end %d", stepKinds(r.log), pairShardCount(t, tbl))
}

// setAllowance has an operator of its own (another process: it clears no
// client's cache) set the quota's allowance to n tokens.
func (r *propertyRun) setAllowance(n int64) {
	r.t.Helper()
	ops := control.New(r.tbl.DB, r.tbl.Name, control.Options{Clock: r.clk.Now})
	q := r.quota
	q.Capacity = n
	p, err := ops.SetResourceLimits(context.Background(), ns, "gpt-4", []limit.Limit{q}, "ops")
	if err != nil {
		r.fail("allowance %d: %v", n, err)
	}
	r.log = append(r.log, fmt.Sprintf("allowance %d: %d shards brought in line", n, p.Stamped))
}

// double has a third writer double the pair's count on shard 0, as a
// client short of wcu does, up to 16 shards (none before the bucket).
func (r *propertyRun) double() {
	r.t.Helper()
	count := pairShardCount(r.t, r.tbl)
	if count == 0 || count >= 16 {
		return
	}
	_, err := r.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(r.tbl.Name), Key: schema.BucketKey(ns, "k", "gpt-4", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :n"),
		ConditionExpression:       aws.String("shard_count = :o"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": schema.Num(2 * count), ":o": schema.Num(count)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		r.fail("double: %v", err)
	}
	r.log = append(r.log, fmt.Sprintf("doubled to %d", 2*count))
}

// stepKinds counts a property run's log lines by their kind.
func stepKinds(log []string) map[string]int {
	kinds := map[string]int{}
	for _, l := range log {
		f := append(strings.Fields(l), "")
		if f[0] == "client" {
			f[0] = f[2]
		}
		kinds[f[0]]++
	}
	return kinds
}

// grantable is what the slots none of covers covers still grant at
// count: C // count each (ADR-145's I8).
func grantable(covers []bucket.GrantSibling, count, capacity int64) int64 {
	var uncovered int64
	for slot := int64(0); slot < count; slot++ {
		covered := false
		for _, c := range covers {
			covered = covered || bucket.GrantCovers(c.Shard, c.GrantShards, slot)
		}
		if !covered {
			uncovered++
		}
	}
	return bucket.FloorDiv(capacity, count) * uncovered
}

// checkQuotaInvariants reads every shard and checks I3/I4, I7 and I8
// against the ledger: I7 at the allowance in force, I8 as the account
// since its last rebasing (admitted + held + grantable = the base + the
// top-ups since).
func checkQuotaInvariants(t *testing.T, tbl *ddbtest.Table, led quotaLedger, now time.Time, resets schedule.Resets, fail func(string, ...any)) {
	t.Helper()
	held, g, _ := quotaHoldings(t, tbl, led, now, resets, fail)
	if got, want := led.admitted+held+g, led.base+led.topUps; got != want {
		fail("I8: admitted %d + held %d + grantable %d = %d, want the base %d + top-ups %d = %d", led.admitted, held, g, got, led.base, led.topUps, want)
	}
}

// quotaHoldings reads every shard, checks I3/I4 and I7, and returns what
// the current-period shards hold, what the slots they do not cover can
// still grant at the allowance in force, and their top-ups.
func quotaHoldings(t *testing.T, tbl *ddbtest.Table, led quotaLedger, now time.Time, resets schedule.Resets, fail func(string, ...any)) (held, grant, topUps int64) {
	t.Helper()
	byShard := pairShards(t, tbl)
	var shards []*bucketitem.Image
	var ids []int
	count := int64(1)
	if z := byShard[0]; z != nil {
		count = max(z.ShardCount, 1)
	}
	for sh := range schema.MaxShardCount {
		if img := byShard[sh]; img != nil {
			shards, ids = append(shards, img), append(ids, sh)
		}
	}
	if len(shards) == 0 {
		return 0, bucket.FloorDiv(led.capacity, count) * count, 0
	}
	var covers []bucket.GrantSibling
	var state []string
	for i, img := range shards {
		li := img.Limit("tpd")
		if li == nil {
			continue
		}
		state = append(state, fmt.Sprintf("shard %d: tk %d gc %d tu %d count %d rf %s", ids[i], li.Tokens, li.GrantShards, li.TopUp, img.ShardCount, time.UnixMilli(img.RF).UTC().Format("Jan 2 15:04")))
		gc := li.GrantShards
		if gc < 1 || gc&(gc-1) != 0 || gc > max(img.ShardCount, 1) {
			fail("I4: shard %d's grant gc %d is not a power of two at most its count %d\n%s", ids[i], gc, img.ShardCount, strings.Join(state, "\n"))
		}
		if !resets.CurrentPeriod(img.RF, now, time.UTC) {
			continue // its grant is the previous period's; the slot is grantable
		}
		if ceil := bucket.FloorDiv(led.capacity, gc) + li.TopUp; li.Tokens > ceil {
			fail("I7: shard %d holds %d above its ceiling %d", ids[i], li.Tokens, ceil)
		}
		held += li.Tokens
		topUps += li.TopUp
		covers = append(covers, bucket.GrantSibling{Shard: int64(ids[i]), GrantShards: gc})
	}
	return held, grantable(covers, count, led.capacity), topUps
}
