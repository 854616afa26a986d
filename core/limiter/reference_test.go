package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// refBucket is the reference token bucket the limiter is held to
// (docs/decisions.md P25): one limit on one shard, exact integer arithmetic
// in millitokens × period (so a refill of dt ms adds dt × rate exactly, no
// rounding), refilled continuously with the cap applied at every instant.
type refBucket struct {
	ceil, rate, period int64 // millitokens, millitokens per period, ms
	scaled             int64 // balance × period
	at                 int64 // the instant scaled is as of, epoch ms
}

func newRefBucket(ceil, rate, period, now int64) *refBucket {
	return &refBucket{ceil: ceil, rate: rate, period: period, scaled: ceil * period, at: now}
}

// advance refills to now: continuous, capped at every instant (a balance in
// debt climbs to the cap and stops there).
func (b *refBucket) advance(now int64) {
	if now > b.at {
		b.scaled = min(b.ceil*b.period, b.scaled+(now-b.at)*b.rate)
		b.at = now
	}
}

// covers reports whether the balance covers amount whole tokens; slack is
// how many millitokens short of it still counts as covered.
func (b *refBucket) covers(amount, slackMilli int64) bool {
	return b.scaled+slackMilli*b.period >= amount*1000*b.period
}

// debit takes amount whole tokens (negative gives back, capped).
func (b *refBucket) debit(amount int64) {
	b.scaled = min(b.ceil*b.period, b.scaled-amount*1000*b.period)
}

// refShard is one bucket shard: its limits' reference buckets.
type refShard map[string]*refBucket

// TestIdleBurstAdmitsAtMostCapacity is the over-credit scenario: rpm 100
// per minute; 16 acquires (stored balance 84); 65 s idle (the true balance
// is 100: the bucket was full for 5 s); then 300 acquires at that one
// instant. A token bucket of capacity 100 admits at most 100; the lazy
// refill without the vu stamp admitted 184.
func TestIdleBurstAdmitsAtMostCapacity(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("gpt-4", limit.PerMinute("rpm", 100))
	ctx := context.Background()
	for i := range 16 {
		if _, err := e.lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatalf("warm %d: %v", i, err)
		}
	}
	e.clk.Advance(65 * time.Second)
	admitted := 0
	for range 300 {
		_, err := e.lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"rpm": 1})
		var rle *limiter.RateLimitExceeded
		switch {
		case err == nil:
			admitted++
		case !errors.As(err, &rle):
			t.Fatal(err)
		}
	}
	if admitted != 100 {
		t.Fatalf("burst after idle admitted %d, want exactly 100 (capacity)", admitted)
	}
}

// TestMatchesReferenceBucket drives the limiter on DynamoDB Local under an
// injected clock — random acquire sizes, idle gaps, bursts at one instant,
// lease adjustments of both signs, two limits per item, two limiters on one
// table (separate caches), 1, 2 or 4 shards — and holds every admission to
// the reference bucket of the shard it landed on: the limiter never admits
// what the reference cannot cover. With one limiter and one shard it also
// admits everything the reference admits, but for the documented rounding
// (less than one millitoken lost per rf move, docs/decisions.md P4).
func TestMatchesReferenceBucket(t *testing.T) {
	for _, c := range []struct {
		shards, limiters int
		seed             uint64
	}{
		{1, 1, 1}, {1, 1, 2}, {1, 2, 3}, {2, 2, 4}, {4, 2, 5}, {4, 1, 6},
	} {
		t.Run(fmt.Sprintf("shards=%d limiters=%d seed=%d", c.shards, c.limiters, c.seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(c.seed, 99))
			e := newEnv(t, limiter.Options{Rand: func(n int) int { return rng.IntN(n) }})
			lims := []*limiter.Limiter{e.lim}
			for range c.limiters - 1 {
				other, err := limiter.New(e.tbl.DB, e.tbl.Name, ns, limiter.Options{
					Clock: e.clk.Now, Rand: func(n int) int { return rng.IntN(n) },
				})
				if err != nil {
					t.Fatal(err)
				}
				lims = append(lims, other)
			}
			rpm, tpm := limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 10_000)
			e.setResourceLimits("api", rpm, tpm)
			ctx := context.Background()
			// Shard 0 exists full; with S shards, it carries its share.
			if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 0}); err != nil {
				t.Fatal(err)
			}
			S := int64(c.shards)
			if S > 1 {
				e.setAttr("u", "SET shard_count = :s, b_rpm_tk = :r, b_tpm_tk = :t, vu = :v", map[string]types.AttributeValue{
					":s": nv(strconv.FormatInt(S, 10)), ":r": nv(strconv.FormatInt(100_000/S, 10)),
					":t": nv(strconv.FormatInt(10_000_000/S, 10)), ":v": nv("0"),
				})
			}
			now := e.clk.Now().UnixMilli()
			ref := make([]refShard, S)
			for s := range ref {
				ref[s] = refShard{
					"rpm": newRefBucket(100_000/S, 100_000/S, 60_000, now),
					"tpm": newRefBucket(10_000_000/S, 10_000_000/S, 60_000, now),
				}
			}
			// The documented rounding: each rf move may lose under one
			// millitoken per limit; count the moves as an upper bound.
			rfMoves := int64(0)
			admitted, short := 0, 0
			for step := range 400 {
				switch r := rng.IntN(50); {
				case r < 24: // a burst at this instant
				case r < 49:
					e.clk.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
				default: // idle past a full refill
					e.clk.Advance(time.Duration(60+rng.IntN(120)) * time.Second)
				}
				now := e.clk.Now().UnixMilli()
				for _, sh := range ref {
					for _, b := range sh {
						b.advance(now)
					}
				}
				want := limiter.Consume{"rpm": 1, "tpm": int64(1 + rng.IntN(1500))}
				lim := lims[rng.IntN(len(lims))]
				lease, err := lim.Acquire(ctx, "u", "api", want)
				var rle *limiter.RateLimitExceeded
				switch {
				case err == nil:
					sh := ref[lease.Shard()]
					for name, n := range want {
						if !sh[name].covers(n, 0) {
							t.Fatalf("step %d: admitted %v on shard %d, but the reference %s holds %d/%d millitokens",
								step, want, lease.Shard(), name, sh[name].scaled/sh[name].period, sh[name].ceil)
						}
					}
					for name, n := range want {
						sh[name].debit(n)
					}
					admitted++
					rfMoves++
					// Now and then the lease turns out bigger or smaller.
					if rng.IntN(5) == 0 {
						d := int64(rng.IntN(400)) - 200
						if err := lease.Adjust("tpm", d); err != nil {
							t.Fatal(err)
						}
						if err := lease.Commit(ctx); err != nil {
							t.Fatal(err)
						}
						sh["tpm"].debit(d)
						rfMoves++
					}
				case errors.As(err, &rle):
					short++
					if S == 1 && len(lims) == 1 {
						sh := ref[0]
						covered := true
						for name, n := range want {
							covered = covered && sh[name].covers(n, -rfMoves)
						}
						if covered {
							t.Fatalf("step %d: rejected %v that the reference covers beyond rounding: rpm %d tpm %d millitokens×period",
								step, want, sh["rpm"].scaled, sh["tpm"].scaled)
						}
					}
				default:
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if admitted < 50 || short < 20 {
				t.Fatalf("admitted %d, rejected %d: the walk must test both", admitted, short)
			}
		})
	}
}
