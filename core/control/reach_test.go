package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// reach is one scenario of a limit change reaching a bucket in use
// (docs/design.md §8): a service (a limiter with its own caches, the config
// cache at its default minute) and an operator (controls of their own,
// another process: they clear none of the service's caches) on one table
// and one manual clock, in a namespace of their own.
type reach struct {
	t     *testing.T
	ctx   context.Context
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy // in front of the service
	clk   *clock.Manual
	ns    string
	svc   *limiter.Limiter
	ops   *control.Controls
}

func newReach(t *testing.T, tbl *ddbtest.Table, o limiter.Options) *reach {
	t.Helper()
	r := &reach{t: t, ctx: context.Background(), tbl: tbl, clk: clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))}
	r.proxy = faultproxy.Start(t, tbl.Endpoint)
	var err error
	if r.ns, _, err = config.NewStore(tbl.DB, tbl.Name).Writer(capability.ConfigWrite{}).RegisterNamespace(r.ctx, fmt.Sprintf("reach-%d", reachSeq.Add(1))); err != nil {
		t.Fatal(err)
	}
	o.Clock, o.Rand = r.clk.Now, func(int) int { return 0 }
	if r.svc, err = limiter.New(r.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), tbl.Name, r.ns, o); err != nil {
		t.Fatal(err)
	}
	r.ops = control.New(tbl.DB, tbl.Name, control.Options{Clock: r.clk.Now})
	return r
}

// take asks for one rpm n times at the clock's instant and returns how many
// were admitted; anything but an admission or a 429 fails the test.
func (r *reach) take(entity, resource string, n int) int {
	r.t.Helper()
	admitted := 0
	for range n {
		_, err := r.svc.Acquire(r.ctx, entity, resource, limiter.Consume{"rpm": 1})
		var rle *limiter.RateLimitExceeded
		switch {
		case err == nil:
			admitted++
		case !errors.As(err, &rle):
			r.t.Fatalf("acquire %s on %s: %v", entity, resource, err)
		}
	}
	return admitted
}

// level sets rpm to n a minute at one level for (entity, resource):
// "system", "resource", "entity_default" or "entity".
func (r *reach) level(level, entity, resource string, n int64) control.Progress {
	r.t.Helper()
	ls := []limit.Limit{limit.PerMinute("rpm", n)}
	var p control.Progress
	var err error
	switch level {
	case "system":
		p, err = r.ops.SetSystemLimits(r.ctx, r.ns, ls, config.SystemOptions{}, "ops")
	case "resource":
		p, err = r.ops.SetResourceLimits(r.ctx, r.ns, resource, ls, "ops")
	case "entity_default":
		p, err = r.ops.SetEntityLimits(r.ctx, r.ns, entity, schema.DefaultResource, ls, "ops")
	case "entity":
		p, err = r.ops.SetEntityLimits(r.ctx, r.ns, entity, resource, ls, "ops")
	default:
		r.t.Fatalf("level %q", level)
	}
	if err != nil {
		r.t.Fatalf("set %s rpm %d: %v", level, n, err)
	}
	return p
}

// below gives the levels under level limits of their own, generous ones,
// so that the level changed is the one that binds.
func (r *reach) below(level, resource string) {
	r.t.Helper()
	switch level {
	case "resource":
		r.level("system", "", "", 1000)
	case "entity_default", "entity":
		r.level("system", "", "", 1000)
		r.level("resource", "", resource, 1000)
	}
}

// TestLimitChangeReachesEveryLevelAndPath is the scenario of the issue
// that a limit change reaches the buckets in use: for each level (system,
// resource, an entity's default, an entity on the resource), on each path
// the service takes after the change (the fast path, a refill pass built
// from the image it holds, the read-then-write path), with the operator
// in another process and the service's config cache holding the old
// limits: rpm lowered 100 → 20 with 90 left admits exactly 20 (the
// balance clamped before the operator's call returns); raised back to 100
// a second later with the bucket spent, it grants nothing at once, and 6 s
// later admits the 10 tokens 6 s of the new rate refills — not the 2 of
// the old rate, nor the 11 of the new one counted from the last refill.
func TestLimitChangeReachesEveryLevelAndPath(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	for _, level := range []string{"system", "resource", "entity_default", "entity"} {
		for _, path := range []string{"fast", "refill", "slow"} {
			t.Run(level+"/"+path, func(t *testing.T) {
				r := newReach(t, tbl, limiter.Options{DisableSpeculativeWrites: path == "slow"})
				const e, res = "heavy", "gpt-4"
				r.below(level, res)
				r.level(level, e, res, 100)
				if path == "refill" {
					// A light user: the bucket back at its ceiling, vu passed,
					// the image of the last write held; one check of the
					// created bucket's limits on the way (§8).
					r.take(e, res, 1)
					r.clk.Advance(61 * time.Second)
					r.take(e, res, 1)
					r.clk.Advance(61 * time.Second)
				}
				if got := r.take(e, res, 10); got != 10 {
					t.Fatalf("10 of rpm 100: %d admitted", got)
				}
				r.clk.Advance(time.Second) // 90 + 1 s of 100 a minute: 91.667
				p := r.level(level, e, res, 20)
				if p.Stamped != 1 || p.Failed != 0 {
					t.Fatalf("lowering: %+v, want the bucket brought in line", p)
				}
				r.proxy.ResetStats()
				if got := r.take(e, res, 60); got != 20 {
					t.Errorf("after rpm 100 → 20 with 90 left: %d of 60 admitted, want 20", got)
				}
				checkPath(t, r.proxy, path)
				it := bucketOf(t, tbl, r.ns, e, res)
				if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 20_000 {
					t.Errorf("rpm cp %d on the bucket, want 20000", cp)
				}

				r.clk.Advance(time.Second) // 0 + 1 s of 20 a minute: 0.333
				if p := r.level(level, e, res, 100); p.Stamped != 1 {
					t.Fatalf("raising: %+v", p)
				}
				if got := r.take(e, res, 5); got != 0 {
					t.Errorf("right after rpm 20 → 100 on a spent bucket: %d admitted, want 0 (a raise grants nothing at once)", got)
				}
				r.clk.Advance(6 * time.Second) // 0.333 + 6 s of 100 a minute: 10.333
				if got := r.take(e, res, 30); got != 10 {
					t.Errorf("6 s after the raise: %d admitted, want the 10 of 6 s at 100 a minute", got)
				}
			})
		}
	}
}

// checkPath checks the first acquire's calls after a change: the fast path
// one UpdateItem; a refill pass from a held image two (its pins lost to the
// change's write, then the pass from the image that failure returned),
// with no read; the read-then-write path reads.
func checkPath(t *testing.T, p *faultproxy.Proxy, path string) {
	t.Helper()
	reads := p.StatsFor("BatchGetItem").Forwarded + p.StatsFor("GetItem").Forwarded
	switch path {
	case "fast", "refill":
		if reads != 0 {
			t.Errorf("%s: %d reads over the 60 acquires, want none", path, reads)
		}
	case "slow":
		if reads == 0 {
			t.Errorf("slow: no read")
		}
	}
}

// reachSeq names each scenario's namespace.
var reachSeq atomic.Int64

// bucketOf reads shard 0 of a pair, strongly consistent.
func bucketOf(t *testing.T, tbl *ddbtest.Table, ns, entity, resource string) map[string]types.AttributeValue {
	t.Helper()
	return shardItem(t, tbl, ns, entity, resource, 0)
}

// shardItem reads one shard of a pair, strongly consistent.
func shardItem(t *testing.T, tbl *ddbtest.Table, ns, entity, resource string, shard int) map[string]types.AttributeValue {
	t.Helper()
	out, err := tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tbl.Name), Key: schema.BucketKey(ns, entity, resource, shard).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestDeletedLevelIsAChange: deleting a level's limits is a change too:
// the buckets that resolved from it fall back to the next level with
// limits before the call returns — a raise here, which grants nothing at
// once — and an entity's bucket whose own limits are deleted loses a
// limit the resource does not give (its tc kept).
func TestDeletedLevelIsAChange(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	const e, res = "u", "gpt-4"
	r.level("resource", "", res, 100)
	if _, err := r.ops.SetEntityLimits(r.ctx, r.ns, e, res, []limit.Limit{limit.PerMinute("rpm", 20), limit.PerDay("rpd", 50)}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Acquire(r.ctx, e, res, limiter.Consume{"rpm": 20, "rpd": 3}); err != nil {
		t.Fatal(err)
	}
	p, err := r.ops.DeleteEntityLimits(r.ctx, r.ns, e, res, "ops")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("delete: %+v, %v", p, err)
	}
	it := bucketOf(t, tbl, r.ns, e, res)
	if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 100_000 {
		t.Errorf("rpm cp %d, want the resource's 100000", cp)
	}
	if _, ok := it[schema.BucketAttr("rpd", schema.LimitCapacity)]; ok {
		t.Error("rpd, which only the entity's own limits gave, is still on the bucket")
	}
	if tc, _ := num(it, schema.BucketAttr("rpd", schema.LimitConsumed)); tc != 3000 {
		t.Errorf("rpd tc %d, want 3000 kept", tc)
	}
	if _, ok := it[schema.AttrTTL]; !ok {
		t.Error("back on the resource's limits, the bucket does not expire when idle")
	}
	if got := r.take(e, res, 5); got != 0 {
		t.Errorf("%d admitted right after the fall-back to 100: a raise grants nothing at once", got)
	}
	_, err = r.svc.Acquire(r.ctx, e, res, limiter.Consume{"rpd": 1})
	var nc *limiter.LimitNotConfiguredError
	if !errors.As(err, &nc) || nc.Level != "resource" || fmt.Sprint(nc.Limits) != "[rpd]" || fmt.Sprint(nc.Configured) != "[rpm]" {
		t.Errorf("an acquire of rpd after its delete: %v, want a LimitNotConfiguredError from the resource level", err)
	}
}

// TestLastLevelDeleted: the system limits a bucket resolves from are
// deleted and no level is left. The bucket in use keeps its counters but
// carries no limits, so no path admits from the parameters it held: the
// service's next acquire, even with the old limits in its cache, is a
// validation error naming the pair, not an admission.
func TestLastLevelDeleted(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	const e, res = "u", "gpt-4"
	r.level("system", "", "", 100)
	if got := r.take(e, res, 3); got != 3 {
		t.Fatalf("%d of 3 admitted on rpm 100", got)
	}
	p, err := r.ops.DeleteSystemLimits(r.ctx, r.ns, "ops")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("delete: %+v, %v", p, err)
	}
	it := bucketOf(t, tbl, r.ns, e, res)
	if _, ok := it[schema.BucketAttr("rpm", schema.LimitCapacity)]; ok {
		t.Error("rpm is still on the bucket after the last level was deleted")
	}
	if tc, _ := num(it, schema.BucketAttr("rpm", schema.LimitConsumed)); tc != 3000 {
		t.Errorf("rpm tc %d, want 3000 kept", tc)
	}
	_, err = r.svc.Acquire(r.ctx, e, res, limiter.Consume{"rpm": 1})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "no limits configured") {
		t.Errorf("an acquire with no level left: %v, want a validation error", err)
	}
}
