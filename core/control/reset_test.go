package control_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// resetEnv: rpm 10 and tpm 1000 a minute for entity a on resource r, a
// bucket drained by acquires, and a disabled-free, stamped item.
func resetEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000)}, ""); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := e.lim.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 2, "tpm": 300}); err != nil && !limiter.IsRateLimitError(err) {
			t.Fatal(err)
		}
	}
	return e
}

// TestResetRestoresTheShare (ADR-149): a reset brings every named limit of
// every shard back to its share, forgiving debt, in place: tc, shard_count
// and the other attributes are kept, vu = 0 forces a materialising pass;
// the operation record and the audit event commit with it.
func TestResetRestoresTheShare(t *testing.T) {
	e := resetEnv(t)
	before := e.bucket("a", "r", 0)
	if tk(before, "tpm") >= 1_000_000 || tk(before, "rpm") >= 10_000 {
		t.Fatalf("the bucket is not drained: %v", before)
	}
	op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{OperationID: "reset-1", Principal: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	after := e.bucket("a", "r", 0)
	if tk(after, "rpm") != 10_000 || tk(after, "tpm") != 1_000_000 {
		t.Fatalf("after the reset: rpm %d tpm %d, want the full share", tk(after, "rpm"), tk(after, "tpm"))
	}
	if consumed(after, "rpm") != consumed(before, "rpm") || consumed(after, "tpm") != consumed(before, "tpm") {
		t.Fatal("the reset changed tc: a reset is not negative consumption")
	}
	if vu, _ := num(after, schema.AttrVU); vu != 0 {
		t.Fatalf("vu %d, want 0", vu)
	}
	wantRPM, wantTPM := 10-tk(before, "rpm")/1000, 1000-tk(before, "tpm")/1000
	if op.ShardsWritten != 1 || op.ShardCount != 1 || op.Granted["rpm"] != wantRPM || op.Granted["tpm"] != wantTPM || op.Replayed {
		t.Fatalf("result %+v, want rpm %d and tpm %d granted", op, wantRPM, wantTPM)
	}
	evs, err := e.ctl.AuditEvents(e.ctx, e.ns, "a")
	if err != nil || len(evs) != 1 || evs[0].Action != "bucket_reset" || evs[0].Details["operation_id"] != "reset-1" || evs[0].Principal != "ops" {
		t.Fatalf("audit %+v, %v", evs, err)
	}
	// The next acquires see the full share.
	for range 5 {
		if _, err := e.lim.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 2}); err != nil {
			t.Fatalf("after the reset: %v", err)
		}
	}
	// A replay with the same id applies once.
	again, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{OperationID: "reset-1"})
	if err != nil || !again.Replayed || again.Granted["rpm"] != wantRPM {
		t.Fatalf("replay %+v, %v", again, err)
	}
	if tk(e.bucket("a", "r", 0), "rpm") != 0 {
		t.Fatal("the replay reset the bucket again")
	}
	// The same id for another operation is refused.
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpm": 1}, control.OperationOptions{OperationID: "reset-1"}); !schema.IsValidationError(err) {
		t.Fatalf("reused id: %v, want a validation error", err)
	}
}

// TestTopUpIsCappedAtTheCeiling: a dripping limit's top-up adds up to N,
// never above its ceiling; Granted says what was added.
func TestTopUpIsCappedAtTheCeiling(t *testing.T) {
	e := resetEnv(t)
	tpm0 := tk(e.bucket("a", "r", 0), "tpm")
	op, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpm": 100}, control.OperationOptions{})
	if err != nil || op.Granted["tpm"] != 100 || op.OperationID == "" {
		t.Fatalf("top-up %+v, %v", op, err)
	}
	if got := tk(e.bucket("a", "r", 0), "tpm"); got != tpm0+100_000 {
		t.Fatalf("tpm %d, want %d", got, tpm0+100_000)
	}
	op, err = e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"tpm": 5000}, control.OperationOptions{})
	if err != nil || op.Granted["tpm"] != 1000-(tpm0+100_000)/1000 {
		t.Fatalf("a top-up over the ceiling: %+v, %v", op, err)
	}
	if got := tk(e.bucket("a", "r", 0), "tpm"); got != 1_000_000 {
		t.Fatalf("tpm %d, want the ceiling", got)
	}
}

// TestResetKeepsStampsAndOwner: disabled, the parent and shard_count are
// never touched; a bypass stamp is renewed from the fresh read.
func TestResetKeepsStampsAndOwner(t *testing.T) {
	e := resetEnv(t)
	e.set("a", "r", config.AccessBypass)
	it := e.bucket("a", "r", 0)
	if _, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", []string{"rpm"}, control.OperationOptions{}); err != nil {
		t.Fatal(err)
	}
	after := e.bucket("a", "r", 0)
	for _, a := range []string{schema.AttrShardCount, schema.AttrCascade, schema.AttrPGen, schema.AttrBypass} {
		if (it[a] == nil) != (after[a] == nil) {
			t.Errorf("%s: %v → %v", a, it[a], after[a])
		}
	}
	if tk(after, "tpm") != tk(it, "tpm") {
		t.Error("a reset of rpm changed tpm")
	}
}

// TestResetRetriesPastAConcurrentWriter: a slow pass moves rf between the
// operation's read and its transaction; the transaction is cancelled and
// re-planned, and nothing is lost: the acquire's consumption stays in tc.
func TestResetRetriesPastAConcurrentWriter(t *testing.T) {
	e := resetEnv(t)
	var fired atomic.Int32
	e.proxy.Add(faultproxy.Rule{Operation: "TransactWriteItems", Count: 1,
		Match: func(_ string, body []byte) bool { return strings.Contains(string(body), "#OP#") },
		Fault: faultproxy.Delay(time.Millisecond),
		OnFire: func(string) {
			fired.Add(1)
			// Another process's slow pass lands first: rf moves.
			if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, "a", "r", 0).AttributeValues(),
				UpdateExpression:          aws.String("SET rf = rf + :one ADD b_rpm_tc :c"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": schema.Num(1), ":c": schema.Num(1000)},
			}); err != nil {
				t.Error(err)
			}
		}})
	tc0 := consumed(e.bucket("a", "r", 0), "rpm")
	op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{})
	if err != nil || fired.Load() != 1 {
		t.Fatalf("reset %+v, %v (fired %d)", op, err, fired.Load())
	}
	after := e.bucket("a", "r", 0)
	if consumed(after, "rpm") != tc0+1000 || tk(after, "rpm") != 10_000 {
		t.Fatalf("after the retry: tc %d (want %d), tk %d", consumed(after, "rpm"), tc0+1000, tk(after, "rpm"))
	}
}

// TestResetConflictIsTyped: a transaction that conflicts every time ends,
// after the bounded retries, in a *BucketOperationConflictError carrying
// the operation id; nothing was written.
func TestResetConflictIsTyped(t *testing.T) {
	e := resetEnv(t)
	e.proxy.Add(faultproxy.Rule{Operation: "TransactWriteItems", Fault: faultproxy.TransactionConflict()})
	rpm0 := tk(e.bucket("a", "r", 0), "rpm")
	_, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{OperationID: "op-7"})
	var conflict *control.BucketOperationConflictError
	if !errors.As(err, &conflict) || conflict.OperationID != "op-7" {
		t.Fatalf("err %v, want a BucketOperationConflictError for op-7", err)
	}
	if n := e.proxy.StatsFor("TransactWriteItems").Injected; n != 4 {
		t.Fatalf("%d transactions, want the first and 3 retries", n)
	}
	if tk(e.bucket("a", "r", 0), "rpm") != rpm0 {
		t.Fatal("a conflicted reset wrote")
	}
}

// TestOperationBadInput: refused with a typed validation error before any
// write.
func TestOperationBadInput(t *testing.T) {
	e := resetEnv(t)
	e.proxy.ResetStats()
	long := strings.Repeat("x", 257)
	for name, err := range map[string]error{
		"missing bucket": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "nobody", "r", nil, control.OperationOptions{})
			return err
		}(),
		"unknown limit": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpd": 1}, control.OperationOptions{})
			return err
		}(),
		"wcu": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", []string{"wcu"}, control.OperationOptions{})
			return err
		}(),
		"zero amount": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpm": 0}, control.OperationOptions{})
			return err
		}(),
		"no limit": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{})
			return err
		}(),
		"oversized id": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{OperationID: long})
			return err
		}(),
		"id with a hash": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{OperationID: "a#b"})
			return err
		}(),
		"reserved default scope": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "a", schema.DefaultResource, nil, control.OperationOptions{})
			return err
		}(),
	} {
		if !schema.IsValidationError(err) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	if n := e.proxy.StatsFor("TransactWriteItems").Forwarded; n != 0 {
		t.Fatalf("%d transactions sent on bad input", n)
	}
}

// TestResetEveryShard: a reset takes effect on every shard in one
// transaction, each restored to its share C // S, and a lagging shard's
// count is raised to the planned one (never lowered).
func TestResetEveryShard(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 40)}, ""); err != nil {
		t.Fatal(err)
	}
	lim4, err := limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: rotate()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim4.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, "a", "r", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :s, b_rpm_tk = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(4), ":t": schema.Num(9_000)},
	}); err != nil {
		t.Fatal(err)
	}
	for range 12 { // every shard created and drained a little
		if _, err := lim4.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 2}); err != nil && !limiter.IsRateLimitError(err) {
			t.Fatal(err)
		}
	}
	// Shard 3 lags: an older writer left it at 2.
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(e.ns, "a", "r", 3).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(2)},
	}); err != nil {
		t.Fatal(err)
	}
	op, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", nil, control.OperationOptions{})
	if err != nil || op.ShardsWritten != 4 || op.ShardCount != 4 {
		t.Fatalf("reset %+v, %v", op, err)
	}
	for shard := range 4 {
		it := e.bucket("a", "r", shard)
		if got := tk(it, "rpm"); got != 10_000 {
			t.Errorf("shard %d: rpm tk %d, want the share 10000", shard, got)
		}
		if sc, _ := num(it, schema.AttrShardCount); sc != 4 {
			t.Errorf("shard %d: shard_count %d, want 4", shard, sc)
		}
	}
}

// TestOperatorWritesClearTheRejectionCache: a limiter listed in
// Options.Caches forgets the states it would reject from when the controls
// write, so a top-up is usable at once; a limiter not listed keeps
// refusing locally until its TTL (docs/design.md §10).
func TestOperatorWritesClearTheRejectionCache(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 1)}, ""); err != nil {
		t.Fatal(err)
	}
	// A second limiter in the same process, not listed, its cache on.
	other, err := limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	local := func(lim *limiter.Limiter) bool {
		t.Helper()
		_, err := lim.Acquire(e.ctx, "a", "r", limiter.Consume{"rpm": 1})
		var rle *limiter.RateLimitExceeded
		if !errors.As(err, &rle) {
			t.Fatalf("want a 429, got %v", err)
		}
		return rle.Local
	}
	if got := e.acquire("a", "r"); got != "ok" {
		t.Fatal(got)
	}
	local(other) // learns the empty bucket from DynamoDB
	if !local(e.lim) || !local(other) {
		t.Fatal("both limiters should now refuse locally")
	}
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "a", "r", map[string]int64{"rpm": 1}, control.OperationOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.acquire("a", "r"); got != "ok" {
		t.Fatalf("the listed limiter after the top-up: %s, want the topped-up token", got)
	}
	if !local(other) {
		t.Fatal("the unlisted limiter cannot know of the top-up: it refuses from its state until the TTL")
	}
}
