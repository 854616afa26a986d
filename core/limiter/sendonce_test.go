package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// TestLostResponseAppliesOnce pins what a response lost after DynamoDB
// applied the write does (docs/decisions.md P30), with a client whose SDK
// retries are on (the default): the SDK alone re-sends a bare ADD and
// counts it twice; the limiter sends its writes once, so the acquire fails
// as an infrastructure error (on_unavailable decides) and the tokens are
// counted once. A throttle, which proves nothing was applied, is retried by
// the limiter and the acquire admitted.
func TestLostResponseAppliesOnce(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 100))
	retrying := e.proxy.DynamoDB() // the SDK's default retries
	lim, err := limiter.New(retrying, e.tbl.Name, ns, limiter.Options{Clock: e.clk.Now,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acquire := func() error {
		_, err := lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
		return err
	}
	if err := acquire(); err != nil { // creates the bucket
		t.Fatal(err)
	}
	tc := func() int64 {
		n, err := strconv.ParseInt(e.n(e.bucket("u", "api", 0), schema.BucketAttr("rpm", schema.LimitConsumed)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	lost := func() faultproxy.RuleID {
		return e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Count: 1,
			Fault: faultproxy.AfterForward(faultproxy.InternalServerError())})
	}

	// The premise: the SDK re-sends a bare ADD whose response was lost.
	before := tc()
	lost()
	if _, err := retrying.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "u", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("ADD #tc :one"),
		ExpressionAttributeNames:  map[string]string{"#tc": schema.BucketAttr("rpm", schema.LimitConsumed)},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": schema.Num(1000)},
	}); err != nil {
		t.Fatalf("the SDK's retry should have hidden the lost response: %v", err)
	}
	if got := tc() - before; got != 2000 {
		t.Fatalf("a bare ADD with a lost response added %d, want 2000 (applied twice)", got)
	}

	// The limiter: one application, and the caller told it failed.
	before = tc()
	e.proxy.ResetStats()
	lost()
	err = acquire()
	var un *limiter.RateLimiterUnavailable
	if !errors.As(err, &un) {
		t.Fatalf("acquire with a lost response: %v, want RateLimiterUnavailable", err)
	}
	if got := tc() - before; got != 1000 {
		t.Fatalf("the lost write added %d to tc, want 1000 (applied once)", got)
	}
	if n := e.proxy.StatsFor("UpdateItem").Requests; n != 1 {
		t.Fatalf("%d UpdateItem requests, want 1 (never re-sent)", n)
	}

	// A throttle applied nothing: the limiter re-sends and admits.
	before = tc()
	e.proxy.ResetStats()
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Count: 2, Fault: faultproxy.ProvisionedThroughputExceeded()})
	if err := acquire(); err != nil {
		t.Fatalf("acquire after two throttles: %v", err)
	}
	if got, n := tc()-before, e.proxy.StatsFor("UpdateItem").Requests; got != 1000 || n != 3 {
		t.Fatalf("after two throttles: tc +%d over %d requests, want +1000 over 3", got, n)
	}
}

// TestContextEndsDuringAFailure: when the caller's context ends while a
// call is failing, Acquire returns the context's error, wrapping the
// failure — never the limiter's internal error type, and not
// RateLimiterUnavailable (on_unavailable is not consulted once the caller
// has given up). The instant cannot be caused for real, so a DB wrapper
// fails the fast path's write with a 500 and ends the context as it does.
func TestContextEndsDuringAFailure(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.setResourceLimits("api", limit.PerMinute("rpm", 100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := &failAndCancel{DB: e.tbl.DB, cancel: cancel}
	lim, err := limiter.New(db, e.tbl.Name, ns, limiter.Options{Clock: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	var un *limiter.RateLimiterUnavailable
	var api smithy.APIError
	if !errors.Is(err, context.Canceled) || errors.As(err, &un) || !errors.As(err, &api) {
		t.Fatalf("acquire: %v (%T), want context.Canceled wrapping the 500", err, err)
	}
}

// failAndCancel fails every UpdateItem with a 500 and ends the caller's
// context at the same instant.
type failAndCancel struct {
	limiter.DB
	cancel context.CancelFunc
}

func (d *failAndCancel) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.cancel()
	return nil, &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected"}
}
