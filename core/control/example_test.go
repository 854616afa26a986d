package control_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// An operator registers a namespace, sets a resource's limits, turns the
// resource off for everyone but one entity, and reads back the audit
// trail. Each write returns once the buckets already in use carry it.
func Example() {
	ops, lim, ns, drop := exampleOperator("control.Example")
	defer drop()
	ctx := context.Background()
	const who = "ops@example.com"

	must(ops.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 60)}, who))
	for _, key := range []string{"key-1", "key-2"} {
		fmt.Println(key, outcome(lim, key, "gpt-4"))
	}

	// Disable the resource: both buckets in use are stamped before the
	// call returns, so no acquire is admitted from a stale state.
	p := must(ops.SetAccess(ctx, ns, "", "gpt-4", config.AccessDisabled, who))
	fmt.Println("disabled gpt-4; buckets stamped:", p.Stamped)
	// A carve-out: key-1's own setting says "not disabled", and the first
	// explicit setting on the way entity → resource wins.
	p = must(ops.SetAccess(ctx, ns, "key-1", "gpt-4", config.AccessEnforce, who))
	fmt.Println("carved key-1 out; buckets stamped:", p.Stamped)
	for _, key := range []string{"key-1", "key-2"} {
		fmt.Println(key, outcome(lim, key, "gpt-4"))
	}

	// The audit trail of the resource, then of the entity.
	for _, trail := range []string{control.ResourceTrail("gpt-4"), "key-1"} {
		for _, ev := range must(ops.AuditEvents(ctx, ns, trail)) {
			fmt.Printf("audit %s: %s by %s, %v\n", trail, ev.Action, ev.Principal, ev.Details)
		}
	}
	// Output:
	// key-1 admitted
	// key-2 admitted
	// disabled gpt-4; buckets stamped: 2
	// carved key-1 out; buckets stamped: 1
	// key-1 admitted
	// key-2 403: gpt-4 is disabled
	// audit $RESOURCE:gpt-4: limits_set by ops@example.com, map[level:resource limits:rpm: 60/60s]
	// audit $RESOURCE:gpt-4: access_set by ops@example.com, map[scope:resource value:disabled]
	// audit key-1: access_set by ops@example.com, map[scope:entity value:enforce]
}

// A top-up adds tokens to one entity's bucket, say after a purchase; the
// purchase's id makes the call idempotent, so a retried request grants
// nothing twice. A reset restores the full bucket.
func ExampleControls_TopUp() {
	ops, lim, ns, drop := exampleOperator("control.ExampleControls_TopUp")
	defer drop()
	ctx := context.Background()

	must(ops.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 10)}, "ops@example.com"))
	// The clock stands still: nothing refills, and key-1 uses up its 10.
	for range 10 {
		outcome(lim, "key-1", "gpt-4")
	}
	fmt.Println("11th request:", outcome(lim, "key-1", "gpt-4"))

	buy := control.OperationOptions{OperationID: "purchase-42", Principal: "billing@example.com"}
	op := must(ops.TopUp(ctx, ns, "key-1", "gpt-4", map[string]int64{"rpm": 3}, buy))
	fmt.Println("top-up:", op.OperationID, "granted", op.Granted["rpm"], "replayed", op.Replayed)
	// The same purchase again (a retried request): nothing is written,
	// and the first call's result comes back.
	op = must(ops.TopUp(ctx, ns, "key-1", "gpt-4", map[string]int64{"rpm": 3}, buy))
	fmt.Println("top-up:", op.OperationID, "granted", op.Granted["rpm"], "replayed", op.Replayed)
	// The limiter remembered the 429 (its rejection cache); the top-up
	// cleared that, as the limiter is in Options.Caches, so the next
	// requests are decided by the bucket again: 3 more get through.
	for range 4 {
		fmt.Println("request:", outcome(lim, "key-1", "gpt-4"))
	}

	// Reset every limit of the bucket (nil) back to its capacity.
	op = must(ops.Reset(ctx, ns, "key-1", "gpt-4", nil, control.OperationOptions{OperationID: "ticket-7", Principal: "support@example.com"}))
	fmt.Println("reset:", op.OperationID, "granted", op.Granted["rpm"])
	lease := must(lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"rpm": 1}))
	left, _ := lease.Remaining("rpm")
	fmt.Println("after one more request, rpm left:", left)
	// Output:
	// 11th request: 429
	// top-up: purchase-42 granted 3 replayed false
	// top-up: purchase-42 granted 3 replayed true
	// request: admitted
	// request: admitted
	// request: admitted
	// request: 429
	// reset: ticket-7 granted 10
	// after one more request, rpm left: 9
}

// exampleOperator is what an operator tool holds: the controls of a fresh
// DynamoDB Local table, a limiter on its namespace "prod" opened by name,
// and the namespace's id. The clock stands still, so the output is the
// same on every run. The limiter is passed in Options.Caches, so that
// every operator write clears what it remembers from before the write.
func exampleOperator(name string) (*control.Controls, *limiter.Limiter, string, func()) {
	tbl, drop := ddbtest.ExampleTable(name)
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	// Registering the namespace is itself an operator write; a limiter
	// opens only a namespace that exists.
	ns := must(control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now}).RegisterNamespace(ctx, "prod", "ops@example.com"))
	lim := must(limiter.Open(ctx, tbl.DB, tbl.Name, "prod", limiter.Options{Clock: clk.Now}))
	ops := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	return ops, lim, ns, drop
}

// must returns v, or panics with err: an example has no testing.T to
// fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// outcome names what one acquire of a request got: admitted, 403 or 429.
func outcome(lim *limiter.Limiter, entity, resource string) string {
	_, err := lim.Acquire(context.Background(), entity, resource, limiter.Consume{"rpm": 1})
	var disabled *limiter.ResourceDisabled
	var limited *limiter.RateLimitExceeded
	switch {
	case err == nil:
		return "admitted"
	case errors.As(err, &disabled):
		return "403: " + disabled.Resource + " is disabled"
	case errors.As(err, &limited):
		return "429"
	}
	panic(err)
}
