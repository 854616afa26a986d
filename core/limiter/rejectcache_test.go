package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// outcome is "ok", "local" (a 429 with no call), "429" (a 429 DynamoDB
// decided), or fails the test; calls is how many requests reached
// DynamoDB Local.
func (e *env) outcome(lim *limiter.Limiter, entity string) (string, int) {
	e.t.Helper()
	before := e.totalCalls()
	_, err := lim.Acquire(context.Background(), entity, "api", limiter.Consume{"rpm": 1})
	calls := e.totalCalls() - before
	var rle *limiter.RateLimitExceeded
	switch {
	case err == nil:
		return "ok", calls
	case errors.As(err, &rle) && rle.Local:
		if calls != 0 {
			e.t.Fatalf("a local rejection made %d calls", calls)
		}
		return "local", calls
	case errors.As(err, &rle):
		return "429", calls
	}
	e.t.Fatalf("acquire %s: %v", entity, err)
	return "", 0
}

func (e *env) totalCalls() int {
	n := 0
	for _, s := range e.proxy.Stats() {
		n += s.Requests
	}
	return n
}

// TestRejectionCacheOnDynamoDB: on DynamoDB Local, with an injected clock —
// a 429 the last state seen shows is decided locally until the TTL; a
// credit this process makes (a rollback) forgets the state, so the tokens
// it returned are used at once; a config write through the limiter's own
// store clears the cache; a limiter that fell back on on_unavailable never
// rejects locally until DynamoDB answers again.
func TestRejectionCacheOnDynamoDB(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 2))
	ctx := context.Background()
	steps := []struct{ what, want string }{}
	step := func(what, want string) {
		t.Helper()
		got, _ := e.outcome(e.lim, "u")
		if got != want {
			t.Fatalf("%s: %s, want %s", what, got, want)
		}
		steps = append(steps, struct{ what, want string }{what, want})
	}
	step("first acquire", "ok")
	lease, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatal(err)
	}
	step("the bucket is empty and the state says so", "local")
	e.clk.Advance(999 * time.Millisecond)
	step("999 ms later", "local")
	e.clk.Advance(time.Millisecond)
	step("at the TTL the state is stale: DynamoDB decides", "429")
	step("and the fresh state decides again", "local")

	// A rollback credits the bucket: the state is forgotten.
	if err := lease.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	step("after this process's rollback the token is used at once", "ok")
	step("empty again", "local")

	// A config write through the limiter's own store clears the cache:
	// DynamoDB decides (the bucket keeps its parameters until a slow pass
	// or the controls' parameter sync moves them, so it still says 429).
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	step("after a config write in this process", "429")
	e.clk.Advance(time.Minute)
	step("a minute on", "ok")

	// Degraded: DynamoDB refuses, on_unavailable=allow admits; the next
	// acquire must not be decided locally from a state it may not reflect.
	locals := 0
	for range 2 {
		if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
			var rle *limiter.RateLimitExceeded
			if !errors.As(err, &rle) {
				t.Fatal(err)
			}
			if rle.Local {
				locals++
			}
		}
	}
	step("empty again", "local")
	rule := e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.ProvisionedThroughputExceeded()})
	e.clk.Advance(time.Second) // the state is re-read: DynamoDB fails
	lease, err = e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}, limiter.WithOnUnavailable(config.OnUnavailableAllow))
	if err != nil || !lease.Degraded() {
		t.Fatalf("with DynamoDB failing: %v, %v; want a degraded admission", lease, err)
	}
	e.proxy.Remove(rule)
	if got, calls := e.outcome(e.lim, "u"); got != "429" || calls == 0 {
		t.Fatalf("the first acquire after a degraded one: %s with %d calls, want DynamoDB's 429", got, calls)
	}
	step("DynamoDB answered again", "local")
	for _, st := range steps {
		if st.want == "local" {
			locals++
		}
	}
	if s := e.lim.Stats(); s.LocalRejections != int64(locals) || s.ServerRejections != 3 {
		t.Fatalf("stats %+v after %v", s, steps)
	}
}

// TestRejectionCacheOff: a negative TTL turns the cache off; every 429 is
// DynamoDB's.
func TestRejectionCacheOff(t *testing.T) {
	e := newEnv(t, limiter.Options{RejectionCacheTTL: -1})
	e.setResourceLimits("api", limit.PerMinute("rpm", 1))
	if got, _ := e.outcome(e.lim, "u"); got != "ok" {
		t.Fatal(got)
	}
	for range 3 {
		if got, calls := e.outcome(e.lim, "u"); got != "429" || calls != 1 {
			t.Fatalf("%s with %d calls, want DynamoDB's 429 from one failed write", got, calls)
		}
	}
	if s := e.lim.Stats(); s.LocalRejections != 0 || s.ServerRejections != 3 || s.RejectionCacheEntries != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRejectionCacheAfterSettledLeases is the README's loop — acquire
// with an estimate, Adjust down to what was used, Commit — run until the
// key is exhausted, then retried: the Commit's credit set vu to its
// instant, and a cached state whose vu has passed still grounds a
// rejection (its lazy refill only over-estimates the bucket), so at least
// 90 % of the retries within the next second are decided locally.
func TestRejectionCacheAfterSettledLeases(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 60), limit.PerMinute("tpm", 10_000))
	ctx := context.Background()
	const estimate, used = 2000, 1500
	settled := 0
	for {
		lease, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1, "tpm": estimate})
		var rle *limiter.RateLimitExceeded
		if errors.As(err, &rle) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Adjust("tpm", used-estimate); err != nil {
			t.Fatal(err)
		}
		if err := lease.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		settled++
	}
	// 10,000 tpm at 1,500 a lease: 6 settled, the 7th estimate does not fit.
	if settled != 6 {
		t.Fatalf("%d leases settled before the first 429, want 6", settled)
	}
	const retries = 20
	locals, calls := 0, 0
	for range retries {
		e.clk.Advance(40 * time.Millisecond) // 20 retries in 800 ms: inside the cache's TTL
		before := e.totalCalls()
		_, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1, "tpm": estimate})
		calls += e.totalCalls() - before
		var rle *limiter.RateLimitExceeded
		if !errors.As(err, &rle) {
			t.Fatalf("a retry of the exhausted key: %v, want a 429", err)
		}
		if rle.Local {
			locals++
		}
	}
	if locals*10 < retries*9 {
		t.Fatalf("%d of %d retries decided locally (%d calls), want at least 90 %%", locals, retries, calls)
	}
	if s := e.lim.Stats(); s.LocalRejections != int64(locals) {
		t.Errorf("Stats().LocalRejections = %d, the test saw %d", s.LocalRejections, locals)
	}
}
