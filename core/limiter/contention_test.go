package limiter_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// hotKeyOutcome is what a hot-key run saw.
type hotKeyOutcome struct {
	admitted, rejected atomic.Int64
	mu                 sync.Mutex
	others             []error
	badRetry           []time.Duration
}

// hotKey runs goroutines acquiring consume on (entity, resource) through
// lims, round robin, for d of real time, and returns what they saw.
func hotKey(lims []*limiter.Limiter, goroutines int, d time.Duration, entity, resource string, consume limiter.Consume) (*hotKeyOutcome, time.Duration) {
	out := &hotKeyOutcome{}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := lims[g%len(lims)]
			for time.Now().Before(deadline) {
				_, err := lim.Acquire(context.Background(), entity, resource, consume)
				var rle *limiter.RateLimitExceeded
				switch {
				case err == nil:
					out.admitted.Add(1)
				case errors.As(err, &rle):
					out.rejected.Add(1)
					if ra, never := rle.RetryAfter(); never || ra <= 0 || ra > time.Hour {
						out.mu.Lock()
						out.badRetry = append(out.badRetry, ra)
						out.mu.Unlock()
					}
				default:
					out.mu.Lock()
					out.others = append(out.others, err)
					out.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return out, time.Since(start)
}

// TestHotKeyGetsAVerdict (docs/decisions.md P26): 64 goroutines over 4
// limiters (as 4 processes would be: separate caches) hammer one pair whose
// rpm limit is 10 a second, for a few seconds of real time, alone, with a
// cascade parent, and over 4 shards. Every call ends in an admission or a
// 429 with a positive, finite retry-after — never "unavailable" — and the
// admissions stay within capacity + refill over the elapsed time.
func TestHotKeyGetsAVerdict(t *testing.T) {
	rpm := limit.Custom("rpm", 10, 10, time.Second)
	tpm := limit.Custom("tpm", 100_000, 100_000, time.Second)
	for _, c := range []struct {
		name    string
		shards  int
		cascade bool
	}{
		{"one shard", 1, false},
		{"cascade parent", 1, true},
		{"4 shards", 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, limiter.Options{Clock: time.Now, Rand: nil})
			ctx := context.Background()
			st := e.lim.Store()
			entity := "hot"
			if c.cascade {
				if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "org", config.EntityOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}); err != nil {
					t.Fatal(err)
				}
				if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "org", "api", []limit.Limit{rpm, tpm}); err != nil {
					t.Fatal(err)
				}
				if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "key", "api", []limit.Limit{limit.Custom("rpm", 1000, 1000, time.Second), tpm}); err != nil {
					t.Fatal(err)
				}
				entity = "key"
			} else {
				e.setResourceLimits("api", rpm, tpm)
			}
			lims := []*limiter.Limiter{e.lim}
			for range 3 {
				l, err := limiter.New(e.proxy.DynamoDB(), e.tbl.Name, ns, limiter.Options{})
				if err != nil {
					t.Fatal(err)
				}
				lims = append(lims, l)
			}
			if c.shards > 1 {
				if _, err := e.lim.Acquire(ctx, entity, "api", limiter.Consume{"rpm": 0}); err != nil {
					t.Fatal(err)
				}
				e.setAttr(entity, "SET shard_count = :s, b_rpm_tk = :r, vu = :v", map[string]types.AttributeValue{
					":s": nv(strconv.Itoa(c.shards)), ":r": nv(strconv.Itoa(10_000 / c.shards)), ":v": nv("0"),
				})
			}
			out, elapsed := hotKey(lims, 64, 3*time.Second, entity, "api", limiter.Consume{"rpm": 1, "tpm": 10})
			bound := 10 + 10*elapsed.Seconds()
			t.Logf("goroutines=64 limiters=4 elapsed=%.1fs admitted=%d rejected=%d other=%d bound=%.1f",
				elapsed.Seconds(), out.admitted.Load(), out.rejected.Load(), len(out.others), bound)
			if len(out.others) > 0 {
				t.Fatalf("%d calls ended in something else than a verdict; the first: %v", len(out.others), out.others[0])
			}
			if len(out.badRetry) > 0 {
				t.Fatalf("%d rejections with a retry-after that is not positive and finite, e.g. %v", len(out.badRetry), out.badRetry[0])
			}
			if a := float64(out.admitted.Load()); a > math.Floor(bound) {
				t.Fatalf("admitted %.0f, more than capacity + refill over %.1fs = %.1f", a, elapsed.Seconds(), bound)
			}
			if out.admitted.Load() == 0 || out.rejected.Load() == 0 {
				t.Fatalf("admitted %d, rejected %d: the run must see both", out.admitted.Load(), out.rejected.Load())
			}
		})
	}
}

// TestTransactionConflictIsAVerdict: every TransactWriteItems of a
// cascaded slow path is cancelled with TransactionConflict (injected: DynamoDB
// Local never conflicts). After the back-offs the request is rejected with a
// retry-after, as contention, not reported unavailable.
func TestTransactionConflictIsAVerdict(t *testing.T) {
	e := cascadeEnv(t, 10, 100)
	e.proxy.Add(faultproxy.Rule{Operation: "TransactWriteItems", Fault: faultproxy.TransactionConflict()})
	_, err := e.lim.Acquire(context.Background(), "key", "api", limiter.Consume{"rpm": 1})
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("err = %v, want a RateLimitExceeded", err)
	}
	if ra, never := rle.RetryAfter(); never || ra <= 0 {
		t.Fatalf("retry-after %v (never %v), want positive and finite", ra, never)
	}
	if n := e.proxy.StatsFor("TransactWriteItems").Injected; n != 4 {
		t.Fatalf("%d conflicts, want the first and one after each of the 3 back-offs", n)
	}
}
