package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// TestSlowPathUnderContention: with speculative writes off every acquire
// is a read and an rf-locked write; 16 goroutines racing on one bucket lose
// the lock to each other, fall back to the Retry shape, and still admit
// exactly the capacity.
func TestSlowPathUnderContention(t *testing.T) {
	e := newEnv(t, limiter.Options{DisableSpeculativeWrites: true})
	const capacity = 24
	e.setResourceLimits("api", limit.PerDay("rpd", capacity))
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "hot", "api", limiter.Consume{"rpd": 0}); err != nil {
		t.Fatal(err) // create the shard first: creation races are another test
	}
	if got := e.hammer("hot", "api", 16, 3, limiter.Consume{"rpd": 1}); got != capacity {
		t.Fatalf("admitted %d, want %d", got, capacity)
	}
	if _, tc := e.tkOf("hot", "rpd"); tc != "24000" {
		t.Fatalf("tc %s, want 24000", tc)
	}
}

func (e *env) tkOf(entity, name string) (tk, tc string) {
	e.t.Helper()
	it := e.bucket(entity, "api", 0)
	return e.n(it, "b_"+name+"_tk"), e.n(it, "b_"+name+"_tc")
}

// TestFailureRowsTakeTheSlowPath drives the docs/design.md §5 rows that must end on the
// slow path (never a 429 of their own) through Acquire on real items.
func TestFailureRowsTakeTheSlowPath(t *testing.T) {
	type row struct {
		name  string
		setup func(e *env)
		check func(e *env, item map[string]types.AttributeValue)
	}
	rows := []row{
		{"SCHEDULE_BOUNDARY: vu passed", func(e *env) {
			e.setAttr("u", "SET vu = :z", map[string]types.AttributeValue{":z": nv("0")})
		}, func(e *env, it map[string]types.AttributeValue) {
			// The slow pass stamps the instant rpm refills to its ceiling
			// (docs/decisions.md P25): after now.
			if vu, _ := strconv.ParseInt(e.n(it, "vu"), 10, 64); vu <= e.clk.Now().UnixMilli() {
				e.t.Errorf("the slow pass must stamp vu past now, got %s", e.n(it, "vu"))
			}
		}},
		{"EXPIRED: ttl passed", func(e *env) {
			e.setAttr("u", "SET #t = :z", map[string]types.AttributeValue{":z": nv("1")})
		}, func(e *env, it map[string]types.AttributeValue) {
			if e.n(it, "ttl") == "1" {
				e.t.Error("the slow pass must re-stamp the ttl")
			}
		}},
		{"STAMP_EXPIRED: short limit with an expired soft stamp", func(e *env) {
			e.setAttr("u", "SET b_rpm_soft = :d, b_rpm_tk = :z", map[string]types.AttributeValue{":d": nv("1"), ":z": nv("0")})
		}, nil},
		{"SEED: declared limit missing", func(e *env) {
			e.setAttr("u", "REMOVE b_rpm_tk, b_rpm_cp", nil)
		}, func(e *env, it map[string]types.AttributeValue) {
			if e.n(it, "b_rpm_cp") != "10000" {
				e.t.Error("the slow pass must seed the missing limit")
			}
		}},
		{"BYPASS_CLEARED: the process believes bypass, the stamp has expired", func(e *env) {
			// A live stamp teaches the process the pair is bypassed (the
			// enforce write is refunded), then the stamp expires.
			live := strconv.FormatInt(e.clk.Now().UnixMilli()+1000, 10)
			e.setAttr("u", "SET bypass = :d", map[string]types.AttributeValue{":d": nv(live)})
			lease, err := e.lim.Acquire(context.Background(), "u", "api", limiter.Consume{"rpm": 1})
			if err != nil || !lease.Bypassed() {
				e.t.Fatalf("discovery: lease %v err %v", lease, err)
			}
		}, func(e *env, it map[string]types.AttributeValue) {
			if _, ok := it["bypass"]; ok {
				e.t.Error("a slow pass under enforce must remove a stale bypass stamp")
			}
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t, limiter.Options{})
			e.setResourceLimits("api", limit.PerMinute("rpm", 10))
			ctx := context.Background()
			if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
				t.Fatal(err)
			}
			if r.name[:7] == "EXPIRED" {
				e.setAttrNames("u", "SET #t = :z", map[string]string{"#t": "ttl"}, map[string]types.AttributeValue{":z": nv("1")})
			} else {
				r.setup(e)
			}
			e.clk.Advance(6 * time.Second) // one token drips back
			e.proxy.ResetStats()
			_, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
			var rle *limiter.RateLimitExceeded
			if err != nil && !errors.As(err, &rle) {
				t.Fatal(err)
			}
			if e.calls("BatchGetItem") == 0 {
				t.Fatal("the row did not take the slow path")
			}
			if r.check != nil {
				r.check(e, e.bucket("u", "api", 0))
			}
		})
	}
}
