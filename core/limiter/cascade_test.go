package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
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
)

// cascadeEnv: org (parent) with its own limits on "api", key (child,
// cascading) with its own larger ones.
func cascadeEnv(t *testing.T, parentCap, childCap int64, rand ...func(int) int) *env {
	t.Helper()
	o := limiter.Options{}
	if len(rand) > 0 {
		o.Rand = rand[0]
	}
	return cascadeEnvWith(t, parentCap, childCap, o)
}

// cascadeEnvWith is cascadeEnv with the limiter's options.
func cascadeEnvWith(t *testing.T, parentCap, childCap int64, o limiter.Options) *env {
	t.Helper()
	e := newEnv(t, o)
	ctx := context.Background()
	st := e.lim.Store()
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "org", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "org", "api", []limit.Limit{limit.PerMinute("rpm", parentCap)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "key", "api", []limit.Limit{limit.PerMinute("rpm", childCap)}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) tk(entity string) (tk, tc string) {
	e.t.Helper()
	it := e.bucket(entity, "api", 0)
	if it == nil {
		return "", ""
	}
	return e.n(it, "b_rpm_tk"), e.n(it, "b_rpm_tc")
}

func (e *env) setAttr(entity, expr string, values map[string]types.AttributeValue) {
	e.t.Helper()
	_, err := e.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, entity, "api", 0).AttributeValues(),
		UpdateExpression: aws.String(expr), ExpressionAttributeValues: values,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setAttrNames(entity, expr string, names map[string]string, values map[string]types.AttributeValue) {
	e.t.Helper()
	_, err := e.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, entity, "api", 0).AttributeValues(),
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// roundRobin draws shards in turn, with one counter per shard count, so
// every shard of every entity is drawn equally often whatever the
// interleaving of goroutines.
func roundRobin() func(int) int {
	var mu sync.Mutex
	next := map[int]int{}
	return func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		i := next[n] % n
		next[n]++
		return i
	}
}

func nv(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// TestCascadeColdThenWarm: the first acquire creates both buckets in one
// transaction; once the cache knows the pair cascades, an acquire is two
// concurrent UpdateItems and nothing else (docs/design.md §5).
func TestCascadeColdThenWarm(t *testing.T) {
	e := cascadeEnv(t, 10, 100)
	ctx := context.Background()
	e.proxy.ResetStats()
	lease, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Parent() != "org" || e.calls("TransactWriteItems") != 1 {
		t.Fatalf("parent %q, transactions %d; want org and 1", lease.Parent(), e.calls("TransactWriteItems"))
	}
	if tk, tc := e.tk("key"); tk != "99000" || tc != "1000" {
		t.Fatalf("child tk %s tc %s", tk, tc)
	}
	if tk, tc := e.tk("org"); tk != "9000" || tc != "1000" {
		t.Fatalf("parent tk %s tc %s", tk, tc)
	}
	if it := e.bucket("key", "api", 0); it["parent_id"].(*types.AttributeValueMemberS).Value != "org" ||
		!it["cascade"].(*types.AttributeValueMemberBOOL).Value {
		t.Fatalf("child owner stamp: %v %v", it["parent_id"], it["cascade"])
	}
	e.proxy.ResetStats()
	lease, err = e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 2})
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, s := range e.proxy.Stats() {
		total += s.Forwarded
	}
	if e.calls("UpdateItem") != 2 || total != 2 {
		t.Fatalf("warm cascade made %d UpdateItem, %d calls; want 2 and 2", e.calls("UpdateItem"), total)
	}
	if r, _ := lease.Remaining("rpm"); r != 7 {
		t.Fatalf("remaining %d, want the parent's 7", r)
	}
	if tk, _ := e.tk("org"); tk != "7000" {
		t.Fatalf("parent tk %s, want 7000", tk)
	}
	// Rollback returns both admissions.
	if err := lease.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if tk, tc := e.tk("org"); tk != "9000" || tc != "1000" {
		t.Fatalf("parent after rollback: tk %s tc %s", tk, tc)
	}
	if tk, tc := e.tk("key"); tk != "99000" || tc != "1000" {
		t.Fatalf("child after rollback: tk %s tc %s", tk, tc)
	}
}

// TestCascadeParentShortRefundsChild: child succeeds, parent fails and refill
// would not help: the child's tk and tc end where they started and
// the 429 carries both entities' statuses.
func TestCascadeParentShortRefundsChild(t *testing.T) {
	e := cascadeEnvWith(t, 2, 100, limiter.Options{RejectionCacheTTL: -1}) // the server's outcome
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	childTk, childTc := e.tk("key")
	_, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1})
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("err = %v, want RateLimitExceeded", err)
	}
	if v := rle.Violations(); len(v) != 1 || v[0].EntityID != "org" {
		t.Fatalf("violations %+v, want the parent's", v)
	}
	if len(rle.Statuses) != 2 {
		t.Fatalf("statuses %+v, want child and parent", rle.Statuses)
	}
	if tk, tc := e.tk("key"); tk != childTk || tc != childTc {
		t.Fatalf("child moved: tk %s→%s tc %s→%s", childTk, tk, childTc, tc)
	}
}

// TestCascadeChildShortRefundsParent: warm, the child fails and the parent
// succeeds: the parent is refunded.
func TestCascadeChildShortRefundsParent(t *testing.T) {
	e := cascadeEnv(t, 100, 2)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	parentTk, parentTc := e.tk("org")
	_, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1})
	var rle *limiter.RateLimitExceeded
	if !errors.As(err, &rle) {
		t.Fatalf("err = %v, want RateLimitExceeded", err)
	}
	if tk, tc := e.tk("org"); tk != parentTk || tc != parentTc {
		t.Fatalf("parent moved: tk %s→%s tc %s→%s", parentTk, tk, parentTc, tc)
	}
}

// TestCascadeParentRefillSatisfies: the parent's stored balance is short
// but refill covers it: the parent-only slow path admits, the child's debit
// stands.
func TestCascadeParentRefillSatisfies(t *testing.T) {
	e := cascadeEnv(t, 5, 100)
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 5}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(12 * time.Second) // one parent token drips back
	lease, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatalf("err = %v, want admission through the parent-only slow path", err)
	}
	if lease.Parent() != "org" {
		t.Fatal("lease lacks the parent")
	}
	if tk, tc := e.tk("org"); tk != "0" || tc != "6000" {
		t.Fatalf("parent tk %s tc %s, want 0 and 6000", tk, tc)
	}
	if _, tc := e.tk("key"); tc != "6000" {
		t.Fatalf("child tc %s, want 6000", tc)
	}
}

// TestCascadeParentMissingRunsFullSlowPath: the child's bucket exists, the
// parent's does not: refund the child, then the full slow path writes both.
func TestCascadeParentMissingRunsFullSlowPath(t *testing.T) {
	e := cascadeEnv(t, 10, 100)
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tbl.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "org", "api", 0).AttributeValues(),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if tk, tc := e.tk("org"); tk != "9000" || tc != "1000" {
		t.Fatalf("recreated parent tk %s tc %s, want 9000 and 1000", tk, tc)
	}
	if tk, tc := e.tk("key"); tk != "98000" || tc != "2000" {
		t.Fatalf("child tk %s tc %s, want 98000 and 2000 (refund then slow path)", tk, tc)
	}
}

// TestCascadeParentDisabled: a disabled parent is the parent's 403, after
// the child is refunded.
func TestCascadeParentDisabled(t *testing.T) {
	e := cascadeEnv(t, 10, 100)
	ctx := context.Background()
	if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	e.setAttr("org", "SET disabled = :t", map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}})
	childTk, childTc := e.tk("key")
	_, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 1})
	var dis *limiter.ResourceDisabled
	if !errors.As(err, &dis) || dis.EntityID != "org" {
		t.Fatalf("err = %v, want ResourceDisabled for org", err)
	}
	if tk, tc := e.tk("key"); tk != childTk || tc != childTc {
		t.Fatalf("child moved: tk %s→%s tc %s→%s", childTk, tk, childTc, tc)
	}
}

// TestCascadeNoOverAdmission: 32 goroutines on a cascading child with the
// clock held still admit exactly the parent's capacity — with the parent on
// 1 and on 4 shards — and every refund is exact: the child's tc equals the
// admissions.
func TestCascadeNoOverAdmission(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(strconv.Itoa(shards)+" parent shards", func(t *testing.T) {
			const parentCap = 40
			e := cascadeEnv(t, parentCap, 1000, roundRobin())
			ctx := context.Background()
			if shards > 1 {
				if _, err := e.lim.Acquire(ctx, "key", "api", limiter.Consume{"rpm": 0}); err != nil {
					t.Fatal(err)
				}
				// Raise the parent to 4 shards; shard 0 keeps its share.
				e.setAttr("org", "SET shard_count = :s, b_rpm_tk = :t", map[string]types.AttributeValue{
					":s": nv(strconv.Itoa(shards)), ":t": nv(strconv.Itoa(parentCap / shards * 1000))})
				if _, err := e.lim.Acquire(ctx, "org", "api", limiter.Consume{"rpm": 0}); err != nil {
					t.Fatal(err) // teaches the process the parent's shard count
				}
			}
			if got := e.hammer("key", "api", 32, 4, limiter.Consume{"rpm": 1}); got != parentCap {
				t.Fatalf("admitted %d, want %d", got, parentCap)
			}
			if _, tc := e.tk("key"); tc != "40000" {
				t.Fatalf("child tc %s, want 40000: refunds must be exact", tc)
			}
		})
	}
}
