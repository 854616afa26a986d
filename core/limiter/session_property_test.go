package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// The quota conservation invariants of ADR-145 per session window
// (docs/design.md §15), over random interleavings of acquires by two
// clients whose views of the shard count differ, doublings by a third
// writer (shards created mid-window join shard 0's window), windows
// ending and re-opening on the injected clock, operators' top-ups
// (opening a window where none is live) and resets (ending it), and
// changes of the allowance by an operator in another process, checked
// after every step against a ledger of what entered the window: every
// shard whose window is live holds the one window the ledger follows
// (the fan-out keeps the pair on one window), I3/I4 (gc a power of two,
// at most the shard's count), I7 (a shard in the window holds at most
// C // gc + tu, C in force) and I8 (admitted in the window + held by the
// shards that reflect it + still grantable = C + the window's top-ups;
// after a change of C in the window, what the shards then held and could
// grant, never above the new C and their top-ups, stands for C).
//
// Seeds 1–3 run every time, and one more drawn afresh, logged so that a
// failure replays with SESSION_PROPERTY_SEED=<seed>.
func TestSessionConservationProperty(t *testing.T) {
	propertySeeds(t, "SESSION_PROPERTY_SEED", func(t *testing.T, seed uint64) { runSessionProperty(t, seed, 120) })
}

// sessionLedger is the reference model of one window, its account
// rebased, as a calendar quota's is (quotaLedger), where the allowance
// changes inside it.
type sessionLedger struct {
	capacity int64 // C in force, millitokens
	base     int64 // the window's allowance at its opening or the last change
	window   int64 // the window's start, epoch ms; 0: none open
	admitted int64 // millitokens admitted in the window since the base
	topUps   int64 // millitokens topped up in the window since the base
}

const sessionLength = 5 * time.Hour

func runSessionProperty(t *testing.T, seed uint64, steps int) {
	r := newPropertyRun(t, seed, limit.Session("tokens", 1024, sessionLength))
	tbl, clk := r.tbl, r.clk
	led := sessionLedger{capacity: 1024 * bucket.MilliPerToken}
	// opened follows the window after a step that may open one: a new
	// live window starts a new account, with what the step put in it.
	opened := func(admitted, topUp int64) {
		w := liveWindow(t, tbl, clk.Now().UnixMilli())
		if w != 0 && w != led.window {
			led = sessionLedger{capacity: led.capacity, base: led.capacity, window: w}
			r.log = append(r.log, fmt.Sprintf("window opens at %s", time.UnixMilli(w).UTC().Format("Jan 2 15:04")))
		}
		led.admitted += admitted
		led.topUps += topUp
	}
	for step := 0; step < steps; step++ {
		switch p := r.rng.IntN(100); {
		case p < 60:
			if got := r.acquire(); got > 0 {
				opened(got, 0)
			}
		case p < 66:
			opened(0, r.topUp()) // exactly N in the window, opened now where none is live
		case p < 70:
			// The window ends now; the next use opens a new one in full.
			if r.reset() {
				led = sessionLedger{capacity: led.capacity, base: led.capacity}
			}
		case p < 76:
			r.double()
		case p < 82:
			// The operator changes the allowance (another process): the
			// shards in the live window are clamped to it; the account is
			// rebased on what they then hold and can grant.
			n := 16 * int64(16+r.rng.IntN(112))
			r.setAllowance(n)
			led.capacity = n * bucket.MilliPerToken
			if led.window != 0 {
				held, g, tu := sessionHoldings(t, tbl, led, clk.Now().UnixMilli(), r.fail)
				if held+g > led.capacity+tu {
					r.fail("after the change to %d: held %d + grantable %d above the new allowance and its top-ups %d", n, held, g, led.capacity+tu)
				}
				led.base, led.admitted, led.topUps = held+g, 0, 0
			}
		default:
			d := time.Duration(1+r.rng.IntN(150)) * time.Minute
			clk.Advance(d)
			if led.window != 0 && clk.Now().UnixMilli() >= led.window+sessionLength.Milliseconds() {
				led = sessionLedger{capacity: led.capacity, base: led.capacity} // the window ended
			}
			r.log = append(r.log, fmt.Sprintf("clock +%v to %s", d, clk.Now().Format("Jan 2 15:04")))
		}
		checkSessionInvariants(t, tbl, led, clk.Now().UnixMilli(), r.fail)
	}
	t.Logf("steps by kind: %v; shard count at the end %d", stepKinds(r.log), pairShardCount(t, tbl))
}

// pairShards reads every shard of the pair k on gpt-4, strongly consistent.
func pairShards(t *testing.T, tbl *ddbtest.Table) map[int]*bucketitem.Image {
	t.Helper()
	keys := make([]map[string]types.AttributeValue, 0, schema.MaxShardCount)
	for sh := range schema.MaxShardCount {
		keys = append(keys, schema.BucketKey(ns, "k", "gpt-4", sh).AttributeValues())
	}
	byShard := map[int]*bucketitem.Image{}
	for len(keys) > 0 {
		out, err := tbl.DB.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			tbl.Name: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Responses[tbl.Name] {
			img, err := bucketitem.Decode(it)
			if err != nil {
				t.Fatal(err)
			}
			pk, _ := it[schema.AttrPK].(*types.AttributeValueMemberS)
			id, err := schema.ParseBucketPK(pk.Value)
			if err != nil {
				t.Fatal(err)
			}
			byShard[id.Shard] = &img
		}
		keys = out.UnprocessedKeys[tbl.Name].Keys
	}
	return byShard
}

// pairShardCount is shard 0's count, 0 before the bucket exists.
func pairShardCount(t *testing.T, tbl *ddbtest.Table) int64 {
	if z := pairShards(t, tbl)[0]; z != nil {
		return max(z.ShardCount, 1)
	}
	return 0
}

// liveWindow is the start of the latest live window any shard holds,
// applied or not; 0 for none.
func liveWindow(t *testing.T, tbl *ddbtest.Table, now int64) int64 {
	var w int64
	for _, img := range pairShards(t, tbl) {
		if li := img.Limit("tokens"); li != nil && li.WindowLive(now) {
			w = max(w, li.WindowStart)
		}
	}
	return w
}

// checkSessionInvariants reads every shard and checks the window's
// invariants against the ledger.
func checkSessionInvariants(t *testing.T, tbl *ddbtest.Table, led sessionLedger, now int64, fail func(string, ...any)) {
	t.Helper()
	held, g, _ := sessionHoldings(t, tbl, led, now, fail)
	if led.window == 0 {
		return // no live window: nothing in force to account for
	}
	if got, want := led.admitted+held+g, led.base+led.topUps; got != want {
		fail("I8: admitted %d + held %d + grantable %d = %d, want the base %d + top-ups %d = %d", led.admitted, held, g, got, led.base, led.topUps, want)
	}
}

// sessionHoldings reads every shard, checks that the live window is the
// ledger's, I3/I4 and I7, and returns what the shards in the window hold,
// what the slots they do not cover can still grant at the allowance in
// force, and their top-ups.
func sessionHoldings(t *testing.T, tbl *ddbtest.Table, led sessionLedger, now int64, fail func(string, ...any)) (held, grant, topUps int64) {
	t.Helper()
	byShard := pairShards(t, tbl)
	count := int64(1)
	if z := byShard[0]; z != nil {
		count = max(z.ShardCount, 1)
	}
	var covers []bucket.GrantSibling
	var state []string
	for sh := range schema.MaxShardCount {
		img := byShard[sh]
		if img == nil {
			continue
		}
		li := img.Limit("tokens")
		if li == nil {
			continue
		}
		w := li.Window()
		state = append(state, fmt.Sprintf("shard %d: tk %d tc %d gc %d tu %d count %d ws %d wa %d wtc %d rf %d vu %d (%s)",
			sh, li.Tokens, li.Consumed, li.GrantShards, li.TopUp, img.ShardCount, w.Start, w.Applied, w.Snapshot, img.RF, img.VU, w.Phase(img.RF, now)))
		gc := li.GrantShards
		if gc < 1 || gc&(gc-1) != 0 || gc > max(img.ShardCount, 1) {
			fail("I4: shard %d's grant gc %d is not a power of two at most its count %d\n%s", sh, gc, img.ShardCount, strings.Join(state, "\n"))
		}
		if !li.WindowLive(now) {
			continue
		}
		if li.WindowStart != led.window {
			fail("shard %d holds a live window at %d, the ledger follows %d\n%s", sh, li.WindowStart, led.window, strings.Join(state, "\n"))
		}
		if w.Phase(img.RF, now) != bucket.WindowCurrent {
			continue // pending: its balance is an earlier window's; its slot is grantable
		}
		if ceil := bucket.FloorDiv(led.capacity, gc) + li.TopUp; li.Tokens > ceil {
			fail("I7: shard %d holds %d above its ceiling %d\n%s", sh, li.Tokens, ceil, strings.Join(state, "\n"))
		}
		held += li.Tokens
		topUps += li.TopUp
		covers = append(covers, bucket.GrantSibling{Shard: int64(sh), GrantShards: gc})
	}
	return held, grantable(covers, count, led.capacity), topUps
}

// Concurrent openers (docs/design.md §15): 4 limiters (as 4 processes)
// with 32 goroutines hammer a pair of 4 shards — 2 of them holding a
// window that ended, 2 not created yet — at one clock reading, in
// requests of 7 tokens, until every request is refused. Whatever the
// races between openers, fan-outs, joins and ADR-145 moves, every shard
// ends in the one window opened at that instant, nothing is admitted
// beyond the allowance, and what was admitted plus what the shards hold
// is exactly C: no allowance minted, none lost.
func TestSessionConcurrentOpeners(t *testing.T) {
	t.Run("ended", func(t *testing.T) { runConcurrentSession(t, false) })
	t.Run("live", func(t *testing.T) { runConcurrentSession(t, true) })
}

// runConcurrentSession is TestSessionConcurrentOpeners from a window that
// ended, or (live) from one opened an hour ago when the pair had 2 shards,
// each holding its full grant at gc 2: the 2 new shards must then be
// funded by moves off the 2 old ones (ADR-145), never by a fresh grant.
func runConcurrentSession(t *testing.T, live bool) {
	tbl := ddbtest.NewTable(t)
	clk := clock.NewManual(time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC))
	ctx := context.Background()
	quota := limit.Session("tokens", 1000, sessionLength)
	var lims []*limiter.Limiter
	for i := range 4 {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		var mu sync.Mutex
		lim, err := limiter.New(tbl.DB, tbl.Name, ns, limiter.Options{Clock: clk.Now, RejectionCacheTTL: -1,
			Rand: func(n int) int { mu.Lock(); defer mu.Unlock(); return r.IntN(n) }})
		if err != nil {
			t.Fatal(err)
		}
		lims = append(lims, lim)
	}
	if err := lims[0].Store().Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{quota}); err != nil {
		t.Fatal(err)
	}
	now := clk.Now().UnixMilli()
	start, tk := now-sessionLength.Milliseconds()-60_000, int64(3_000) // ended
	if live {
		start, tk = now-3_600_000, 500_000
	}
	for shard := range 2 {
		n := bucketitem.New{ID: schema.BucketID{Namespace: ns, Entity: "k", Resource: "gpt-4", Shard: shard}, RF: start + 1, ShardCount: 4,
			VU: start + sessionLength.Milliseconds(),
			Limits: []bucketitem.NewLimit{{Name: "tokens", Tokens: tk, Consumed: 500_000, Params: quota.Params(), GrantShards: 2,
				ResetAfter: quota.ResetAfterSeconds(), WindowStart: start, WindowAnchor: start}}}
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: n.Item()}); err != nil {
			t.Fatal(err)
		}
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for refused := 0; refused < 20; {
				_, err := lims[g%len(lims)].Acquire(ctx, "k", "gpt-4", limiter.Consume{"tokens": 7})
				var rle *limiter.RateLimitExceeded
				switch {
				case err == nil:
					admitted.Add(7 * bucket.MilliPerToken)
				case errors.As(err, &rle):
					refused++
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var held, consumed int64
	var covers []bucket.GrantSibling
	shards := pairShards(t, tbl)
	for sh, img := range shards {
		li := img.Limit("tokens")
		consumed += li.Consumed
		w := li.Window()
		switch phase := w.Phase(img.RF, now); {
		case w.Start != start && live, w.Start != now && !live:
			t.Errorf("shard %d: window at %d (%s), want the one the pair is in", sh, w.Start, phase)
		case phase == bucket.WindowCurrent:
			held += li.Tokens
			covers = append(covers, bucket.GrantSibling{Shard: int64(sh), GrantShards: li.GrantShards})
		}
		// Pending: fanned out, not rolled in; its balance is the ended
		// window's and its slot still grantable in this one.
	}
	got := admitted.Load()
	if got > quota.Params().Capacity {
		t.Fatalf("admitted %d millitokens, above the allowance %d", got, quota.Params().Capacity)
	}
	g := grantable(covers, 4, quota.Params().Capacity)
	t.Logf("%d shards; admitted %d, held %d, grantable %d (C = %d)", len(shards), got, held, g, quota.Params().Capacity)
	if got+held+g != quota.Params().Capacity {
		t.Errorf("admitted %d + held %d + grantable %d = %d, want C = %d", got, held, g, got+held+g, quota.Params().Capacity)
	}
	if consumed != got+2*500_000 {
		t.Errorf("tc sums to %d, want the 1,000,000 before plus the %d admitted", consumed, got)
	}
}
