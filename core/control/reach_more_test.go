package control_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// TestLimitChangeReachesEveryShardAndParent: a resource change reaches
// every shard of a sharded bucket (each clamped to its share of the new
// capacity) and the bucket of a cascade parent, before the call returns;
// the child's acquires then debit both under the new limits.
func TestLimitChangeReachesEveryShardAndParent(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	rot := rotate()
	spread, err := limiter.New(tbl.DB, tbl.Name, r.ns, limiter.Options{Clock: r.clk.Now, Rand: rot})
	if err != nil {
		t.Fatal(err)
	}
	const res = "gpt-4"
	r.level("resource", "", res, 400)
	// wide: 4 shards of rpm 400 (100 each).
	if _, err := spread.Acquire(r.ctx, "wide", res, limiter.Consume{"rpm": 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.DB.UpdateItem(r.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: schema.BucketKey(r.ns, "wide", res, 0).AttributeValues(),
		UpdateExpression: aws.String("SET shard_count = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(4)},
	}); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := spread.Acquire(r.ctx, "wide", res, limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	// child cascades to parent.
	if _, err := r.ops.CreateEntity(r.ctx, r.ns, "parent", config.EntityOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ops.CreateEntity(r.ctx, r.ns, "child", config.EntityOptions{ParentID: "parent", Cascade: true}, ""); err != nil {
		t.Fatal(err)
	}
	if got := r.take("child", res, 5); got != 5 {
		t.Fatalf("child: %d of 5", got)
	}
	p := r.level("resource", "", res, 40)
	if p.Buckets != 6 || p.Stamped != 6 || p.Failed != 0 {
		t.Fatalf("progress %+v, want 6 buckets (4 shards, the child's, the parent's) brought in line", p)
	}
	for shard := range 4 {
		it := shardItem(t, tbl, r.ns, "wide", res, shard)
		cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity))
		if tk := tk(it, "rpm"); cp != 40_000 || tk > 10_000 {
			t.Errorf("wide shard %d: cp %d tk %d, want cp 40000 and tk at most the share 10000", shard, cp, tk)
		}
	}
	for _, ent := range []string{"child", "parent"} {
		if tk := tk(bucketOf(t, tbl, r.ns, ent, res), "rpm"); tk != 40_000 {
			t.Errorf("%s: rpm tk %d, want 40000 (395 left, clamped to the new ceiling)", ent, tk)
		}
	}
	if got := r.take("child", res, 50); got != 40 {
		t.Errorf("child after rpm 400 → 40: %d admitted, want 40", got)
	}
	if tk := tk(bucketOf(t, tbl, r.ns, "parent", res), "rpm"); tk != 0 {
		t.Errorf("the parent's rpm tk %d after the child's 40, want 0", tk)
	}
}

// TestQuotaAllowanceChange: a calendar quota's allowance changed
// mid-period (docs/design.md §15): lowered, what is left is clamped to the
// new allowance at once; raised, nothing is granted until the next reset,
// which restores the new allowance whole. A session quota's allowance the
// same way inside its window.
func TestQuotaAllowanceChange(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	setQuota := func(n int64) control.Progress {
		t.Helper()
		p, err := r.ops.SetResourceLimits(r.ctx, r.ns, "q", []limit.Limit{limit.Quota("tpd", n, daily, "")}, "ops")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	takeQ := func(n int64) bool {
		t.Helper()
		_, err := r.svc.Acquire(r.ctx, "u", "q", limiter.Consume{"tpd": n})
		var rle *limiter.RateLimitExceeded
		if err != nil && !errors.As(err, &rle) {
			t.Fatal(err)
		}
		return err == nil
	}
	setQuota(1000)
	if !takeQ(300) { // 700 left
		t.Fatal("300 of 1000")
	}
	r.clk.Advance(time.Minute)
	if p := setQuota(500); p.Stamped != 1 {
		t.Fatalf("lowering: %+v", p)
	}
	if takeQ(501) || !takeQ(500) || takeQ(1) {
		t.Error("after 1000 → 500 with 700 left: want exactly 500 more")
	}
	if p := setQuota(2000); p.Stamped != 1 {
		t.Fatalf("raising: %+v", p)
	}
	if takeQ(1) {
		t.Error("after 500 → 2000, spent: a raise grants nothing until the reset")
	}
	r.clk.Set(time.Date(2026, 11, 30, 0, 0, 1, 0, time.UTC)) // past midnight
	if !takeQ(2000) || takeQ(1) {
		t.Error("after the reset: want the new allowance of 2000, whole")
	}

	// A session quota, inside its live window.
	setSession := func(n int64) {
		t.Helper()
		if _, err := r.ops.SetResourceLimits(r.ctx, r.ns, "s", []limit.Limit{limit.Session("tok", n, time.Hour)}, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	takeS := func(n int64) bool {
		t.Helper()
		_, err := r.svc.Acquire(r.ctx, "u", "s", limiter.Consume{"tok": n})
		var rle *limiter.RateLimitExceeded
		if err != nil && !errors.As(err, &rle) {
			t.Fatal(err)
		}
		return err == nil
	}
	setSession(1000)
	if !takeS(100) { // the window opens; 900 left
		t.Fatal("100 of 1000")
	}
	r.clk.Advance(time.Minute)
	setSession(300)
	if takeS(301) || !takeS(300) || takeS(1) {
		t.Error("session 1000 → 300 with 900 left: want exactly 300 more in the window")
	}
	r.clk.Advance(time.Hour) // the window ends: the next use opens one at the new allowance
	if !takeS(300) || takeS(1) {
		t.Error("the next window: want the new allowance of 300")
	}
}

// TestScheduleChangeAppliesFromTheChange: a parameter schedule added to a
// resource's limit applies to the buckets in use from the change on: at
// 12:00 a schedule halving rpm from 12:00 clamps a bucket at 100 to 50.
func TestScheduleChangeAppliesFromTheChange(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	r.level("resource", "", "sched", 100)
	if got := r.take("u", "sched", 1); got != 1 {
		t.Fatal("first acquire")
	}
	r.clk.Advance(2 * time.Second)
	halved := schedule.Schedule{{Cron: schedule.MustParseCron("* 12-13 * * *"), ScalePerMille: 500}}
	p, err := r.ops.SetResourceLimits(r.ctx, r.ns, "sched", []limit.Limit{limit.PerMinute("rpm", 100).WithSchedule(halved, "")}, "ops")
	if err != nil || p.Stamped != 1 {
		t.Fatalf("schedule: %+v, %v", p, err)
	}
	if got := r.take("u", "sched", 100); got != 50 {
		t.Errorf("after the halving schedule: %d admitted, want 50", got)
	}
	if s, _ := bucketOf(t, tbl, r.ns, "u", "sched")[schema.BucketAttr("rpm", schema.LimitSchedule)].(*types.AttributeValueMemberS); s == nil {
		t.Error("the schedule is not on the bucket")
	}
}

// TestSyncCounts: a sync's counts say what became of every bucket found:
// brought in line, already in line (an entity's own limits the resource
// change does not reach), vanished (deleted between the discovery and the
// read), failed (its write refused); a sync that stopped part way is a
// FanoutIncompleteError, and the same call again finishes it.
func TestSyncCounts(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	const res = "counted"
	r.level("resource", "", res, 100)
	if _, err := r.ops.SetEntityLimits(r.ctx, r.ns, "own", res, []limit.Limit{limit.PerMinute("rpm", 7)}, "ops"); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"a", "b", "gone", "own"} {
		r.take(e, res, 1)
	}
	proxy := faultproxy.Start(t, tbl.Endpoint)
	var once sync.Once
	ops := control.New(&deleteOnRead{DB: proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), once: &once, tbl: tbl, key: schema.BucketKey(r.ns, "gone", res, 0)},
		tbl.Name, control.Options{Clock: r.clk.Now})
	// b's write is refused once (a 500: the SDK does not retry here).
	fail := proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.InternalServerError(), Count: 1, Match: func(_ string, body []byte) bool {
		return bytes.Contains(body, []byte(schema.BucketKey(r.ns, "b", res, 0).PK))
	}})
	p, err := ops.SetResourceLimits(r.ctx, r.ns, res, []limit.Limit{limit.PerMinute("rpm", 50)}, "ops")
	var inc *control.FanoutIncompleteError
	if !errors.As(err, &inc) {
		t.Fatalf("a refused write: %v, want a FanoutIncompleteError", err)
	}
	want := control.Progress{Buckets: 4, Stamped: 1, Unchanged: 1, Vanished: 1, Failed: 1}
	if p != want || inc.Progress != want {
		t.Errorf("progress %+v (error %+v), want %+v", p, inc.Progress, want)
	}
	proxy.Remove(fail)
	p, err = ops.SyncLimits(r.ctx, r.ns, control.Scope{Resource: res})
	if err != nil || p != (control.Progress{Buckets: 3, Stamped: 1, Unchanged: 2}) {
		t.Errorf("the sync again: %+v, %v; want b brought in line, a and own already", p, err)
	}
	if cp, _ := num(bucketOf(t, tbl, r.ns, "b", res), schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 50_000 {
		t.Errorf("b's rpm cp %d, want 50000", cp)
	}
}

// deleteOnRead deletes one bucket the first time the controls read
// buckets in bulk: between a sync's discovery and its read.
type deleteOnRead struct {
	control.DB
	once *sync.Once
	tbl  *ddbtest.Table
	key  schema.Key
}

func (d *deleteOnRead) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			if pk, _ := k[schema.AttrPK].(*types.AttributeValueMemberS); pk != nil && pk.Value == d.key.PK {
				d.once.Do(func() {
					_, _ = d.tbl.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.tbl.Name), Key: d.key.AttributeValues()})
				})
			}
		}
	}
	return d.DB.BatchGetItem(ctx, in, o...)
}

// imageOf decodes a bucket item.
func imageOf(t *testing.T, it map[string]types.AttributeValue) *bucketitem.Image {
	t.Helper()
	img, err := bucketitem.Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	return &img
}
