package faultproxy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestErrorFaultsReachSDKAsAWSErrors shows each error fault reaching an SDK
// client, retries off, as the error DynamoDB itself would cause: the modeled
// type, code, message, HTTP status, request id, and the retryer's verdict
// (retryable; throttle or not). It runs once with the x-amzn-ErrorType header
// and once without, so the JSON body alone is proven to decode the same.
func TestErrorFaultsReachSDKAsAWSErrors(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	cases := []struct {
		fault    Fault
		status   int
		code     string
		throttle bool
		typed    func(error) bool
	}{
		{ProvisionedThroughputExceeded(), 400, "ProvisionedThroughputExceededException", true,
			func(err error) bool { var e *types.ProvisionedThroughputExceededException; return errors.As(err, &e) }},
		{Throttling(), 400, "ThrottlingException", true,
			func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
		{RequestLimitExceeded(), 400, "RequestLimitExceeded", true,
			func(err error) bool { var e *types.RequestLimitExceeded; return errors.As(err, &e) }},
		{InternalServerError(), 500, "InternalServerError", false,
			func(err error) bool { var e *types.InternalServerError; return errors.As(err, &e) }},
		{ServiceUnavailable(), 503, "ServiceUnavailable", false,
			func(err error) bool { var e *smithy.GenericAPIError; return errors.As(err, &e) }},
		{AccessDenied(), 400, "AccessDeniedException", false,
			func(err error) bool { var e *smithy.GenericAPIError; return errors.As(err, &e) }},
	}
	variants := []struct {
		name string
		opts []func(*dynamodb.Options)
	}{
		{"with-header", []func(*dynamodb.Options){noRetry}},
		{"body-only", []func(*dynamodb.Options){noRetry, withoutErrorTypeHeader}},
		{"checksums-on", []func(*dynamodb.Options){noRetry, checksums}},
	}
	for _, v := range variants {
		for _, c := range cases {
			t.Run(v.name+"/"+c.fault.String(), func(t *testing.T) {
				p := Start(t, tbl.Endpoint)
				p.Add(Rule{Operation: "PutItem", Fault: c.fault})
				pk := "fault-" + v.name + "-" + c.code
				err := put(testCtx(t), p.DynamoDB(v.opts...), tbl.Name, pk)
				if err == nil {
					t.Fatal("PutItem succeeded through an injected fault")
				}
				if !c.typed(err) {
					t.Errorf("error %T (%v) is not the expected type", err, err)
				}
				var api smithy.APIError
				if !errors.As(err, &api) {
					t.Fatalf("error %v is no smithy.APIError", err)
				}
				if api.ErrorCode() != c.code {
					t.Errorf("ErrorCode = %q, want %q", api.ErrorCode(), c.code)
				}
				if want := wireErrorOf(c.fault.kind).message; api.ErrorMessage() != want {
					t.Errorf("ErrorMessage = %q, want %q", api.ErrorMessage(), want)
				}
				var re *awshttp.ResponseError
				if !errors.As(err, &re) {
					t.Fatalf("error %v carries no HTTP response", err)
				}
				if re.HTTPStatusCode() != c.status {
					t.Errorf("status = %d, want %d", re.HTTPStatusCode(), c.status)
				}
				if id := re.ServiceRequestID(); len(id) != 52 || !strings.HasPrefix(id, RequestIDPrefix) {
					t.Errorf("request id = %q, want 52 characters starting %s", id, RequestIDPrefix)
				}
				if got := retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary; got != c.throttle {
					t.Errorf("SDK classifies as throttle = %v, want %v", got, c.throttle)
				}
				// IAM's refusal is final; DynamoDB's own errors are retried.
				if retryable := c.code != "AccessDeniedException"; retry.NewStandard().IsErrorRetryable(err) != retryable {
					t.Errorf("the standard retryer retries this error: %v, want %v", !retryable, retryable)
				}
				if got, want := p.StatsFor("PutItem"), (OpStats{Requests: 1, Injected: 1}); got != want {
					t.Errorf("stats = %+v, want %+v", got, want)
				}
				if _, ok := exists(t, tbl, pk); ok {
					t.Error("a faulted PutItem reached the table")
				}
			})
		}
	}
}

// TestTransactionConflictCancellationReasons sends real TransactWriteItems
// calls and shows the SDK returns *types.TransactionCanceledException with
// one reason per item, TransactionConflict at the chosen indexes and None
// elsewhere, exactly as DynamoDB Local itself reports a cancellation; that
// the SDK does not retry it; and that nothing was written.
func TestTransactionConflictCancellationReasons(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	puts := func(prefix string, n int) *dynamodb.TransactWriteItemsInput {
		in := &dynamodb.TransactWriteItemsInput{}
		for i := range n {
			in.TransactItems = append(in.TransactItems, types.TransactWriteItem{
				Put: &types.Put{TableName: aws.String(tbl.Name), Item: item(prefix+"-"+string(rune('a'+i)), i)},
			})
		}
		return in
	}
	cases := []struct {
		name  string
		fault Fault
		items int
		want  []string
	}{
		{"second-of-two", TransactionConflict(1), 2, []string{"None", "TransactionConflict"}},
		{"first-of-two", TransactionConflict(0), 2, []string{"TransactionConflict", "None"}},
		{"all-of-two", TransactionConflict(), 2, []string{"TransactionConflict", "TransactionConflict"}},
		{"ends-of-three", TransactionConflict(0, 2), 3, []string{"TransactionConflict", "None", "TransactionConflict"}},
		{"out-of-range", TransactionConflict(5), 2, []string{"None", "None"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Start(t, tbl.Endpoint)
			p.Add(Rule{Operation: "TransactWriteItems", Fault: c.fault})
			// Default retries: a cancelled transaction must not be retried.
			_, err := p.DynamoDB().TransactWriteItems(testCtx(t), puts(c.name, c.items))
			var tce *types.TransactionCanceledException
			if !errors.As(err, &tce) {
				t.Fatalf("error = %T %v, want *types.TransactionCanceledException", err, err)
			}
			var codes []string
			for i, r := range tce.CancellationReasons {
				codes = append(codes, aws.ToString(r.Code))
				wantMsg := ""
				if c.want[i] == "TransactionConflict" {
					wantMsg = "Transaction is ongoing for the item"
				}
				if aws.ToString(r.Message) != wantMsg {
					t.Errorf("reason %d message = %q, want %q", i, aws.ToString(r.Message), wantMsg)
				}
			}
			if strings.Join(codes, ",") != strings.Join(c.want, ",") {
				t.Errorf("cancellation codes = %v, want %v", codes, c.want)
			}
			wantMsg := "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(c.want, ", ") + "]"
			if tce.ErrorMessage() != wantMsg {
				t.Errorf("message = %q, want %q", tce.ErrorMessage(), wantMsg)
			}
			if retry.NewStandard().IsErrorRetryable(err) {
				t.Error("the standard retryer would retry a cancelled transaction")
			}
			if got, want := p.StatsFor("TransactWriteItems"), (OpStats{Requests: 1, Injected: 1}); got != want {
				t.Errorf("stats = %+v, want %+v (retried or forwarded)", got, want)
			}
			for i := range c.items {
				if _, ok := exists(t, tbl, c.name+"-"+string(rune('a'+i))); ok {
					t.Errorf("item %d of a cancelled transaction was written", i)
				}
			}
		})
	}

	t.Run("same-shape-as-emulator", func(t *testing.T) {
		// A cancellation DynamoDB Local makes for real decodes the same way.
		p := Start(t, tbl.Endpoint)
		ctx := testCtx(t)
		if err := put(ctx, tbl.DB, tbl.Name, "real-b"); err != nil {
			t.Fatal(err)
		}
		in := puts("real", 2)
		in.TransactItems[1].Put.ConditionExpression = aws.String("attribute_not_exists(PK)")
		_, err := p.DynamoDB(noRetry).TransactWriteItems(ctx, in)
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 ||
			aws.ToString(tce.CancellationReasons[0].Code) != "None" ||
			aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" {
			t.Fatalf("emulator cancellation = %v, want [None, ConditionalCheckFailed]", err)
		}
	})
}

// TestHangTimesOutTheClient shows a hung request ends with the client's own
// context deadline, is not retried, and never reaches the table.
func TestHangTimesOutTheClient(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	p := Start(t, tbl.Endpoint)
	p.Add(Rule{Operation: "PutItem", Fault: Hang()})
	const timeout = 300 * time.Millisecond
	// The clock starts before the deadline is set: the call cannot end
	// before the deadline, which is at least timeout after start.
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := put(ctx, p.DynamoDB(), tbl.Name, "hung") // default retries
	elapsed := time.Since(start)
	if !isDeadline(err) {
		t.Fatalf("error = %v, want context.DeadlineExceeded", err)
	}
	if elapsed < timeout || elapsed > 10*time.Second {
		t.Errorf("call took %s, want the client timeout %s", elapsed, timeout)
	}
	if retry.NewStandard().IsErrorRetryable(err) {
		t.Error("the retryer would retry past the caller's deadline")
	}
	if got, want := p.StatsFor("PutItem"), (OpStats{Requests: 1, Injected: 1}); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if _, ok := exists(t, tbl, "hung"); ok {
		t.Error("a hung PutItem reached the table")
	}
}

// TestCloseReleasesHungRequests shows Close drops hung requests at once (the
// clients get a connection error, not their distant deadline), returns, and
// that the proxy then refuses connections.
func TestCloseReleasesHungRequests(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	p := Start(t, tbl.Endpoint)
	const n = 3
	fired := make(chan string, n)
	p.Add(Rule{Operation: "PutItem", Fault: Hang(), OnFire: func(op string) { fired <- op }})
	db := p.DynamoDB(noRetry)
	ctx := testCtx(t) // a minute: far beyond what the test may take
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- put(ctx, db, tbl.Name, "closed-"+string(rune('a'+i))) }()
	}
	for range n {
		await(t, fired, "a request to hang")
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	await(t, closed, "Close to return")
	for range n {
		err := await(t, errs, "a hung request to end")
		if err == nil || isDeadline(err) || errors.Is(err, context.Canceled) {
			t.Errorf("released request error = %v, want a dropped connection", err)
		}
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("release took %s", elapsed)
	}
	if err := put(ctx, db, tbl.Name, "after-close"); err == nil {
		t.Error("a closed proxy still forwards")
	}
	p.Close() // idempotent
}

// TestDelay shows latency injection: the request is forwarded after the
// delay; a client that gives up first is never forwarded; AfterForward(Delay)
// holds back the real answer of a write that already landed.
func TestDelay(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	if err := put(testCtx(t), tbl.DB, tbl.Name, "delayed"); err != nil {
		t.Fatal(err)
	}
	get := &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key("delayed")}

	t.Run("forwards-after-delay", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		const d = 150 * time.Millisecond
		p.Add(Rule{Operation: "GetItem", Fault: Delay(d)})
		start := time.Now()
		out, err := p.DynamoDB(noRetry).GetItem(testCtx(t), get)
		if err != nil || out.Item == nil {
			t.Fatalf("delayed GetItem = %v, %v", out, err)
		}
		if elapsed := time.Since(start); elapsed < d {
			t.Errorf("answer after %s, want at least %s", elapsed, d)
		}
		if got, want := p.StatsFor("GetItem"), (OpStats{Requests: 1, Forwarded: 1, Injected: 1, Succeeded: 1}); got != want {
			t.Errorf("stats = %+v, want %+v", got, want)
		}
	})

	t.Run("client-gives-up-first", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		p.Add(Rule{Operation: "GetItem", Fault: Delay(time.Hour)})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.DynamoDB(noRetry).GetItem(ctx, get); !isDeadline(err) {
			t.Fatalf("error = %v, want context.DeadlineExceeded", err)
		}
		if got := p.StatsFor("GetItem").Forwarded; got != 0 {
			t.Errorf("forwarded = %d, want 0", got)
		}
	})

	t.Run("after-forward", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		const d = 150 * time.Millisecond
		p.Add(Rule{Operation: "PutItem", Fault: AfterForward(Delay(d))})
		start := time.Now()
		if err := put(testCtx(t), p.DynamoDB(noRetry, checksums), tbl.Name, "late-ack"); err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed < d {
			t.Errorf("answer after %s, want at least %s", elapsed, d)
		}
		if _, ok := exists(t, tbl, "late-ack"); !ok {
			t.Error("the write is missing")
		}
	})
}

// TestAfterForwardLosesTheAcknowledgement shows AfterForward faults: the write
// lands in the table although the client is told it failed (or never hears);
// with retries the SDK then applies a non-idempotent update twice — the
// hazard later tests must prove the limiter survives.
func TestAfterForwardLosesTheAcknowledgement(t *testing.T) {
	tbl := ddbtest.NewTable(t)

	t.Run("error", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		p.Add(Rule{Operation: "PutItem", Fault: AfterForward(InternalServerError())})
		err := put(testCtx(t), p.DynamoDB(noRetry), tbl.Name, "lost-ack")
		var ise *types.InternalServerError
		if !errors.As(err, &ise) {
			t.Fatalf("error = %v, want *types.InternalServerError", err)
		}
		if _, ok := exists(t, tbl, "lost-ack"); !ok {
			t.Error("the write did not land")
		}
		if got, want := p.StatsFor("PutItem"), (OpStats{Requests: 1, Forwarded: 1, Injected: 1, Succeeded: 1}); got != want {
			t.Errorf("stats = %+v, want %+v", got, want)
		}
	})

	t.Run("retried-update-applies-twice", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		p.Add(Rule{Operation: "UpdateItem", Fault: AfterForward(InternalServerError()), Count: 1})
		_, err := p.DynamoDB().UpdateItem(testCtx(t), &dynamodb.UpdateItemInput{
			TableName:                 aws.String(tbl.Name),
			Key:                       key("counter"),
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		})
		if err != nil {
			t.Fatalf("retried UpdateItem: %v", err)
		}
		it, _ := exists(t, tbl, "counter")
		if got := numberAttr(t, it, "n"); got != "2" {
			t.Errorf("counter = %s, want 2 (one lost acknowledgement, one retry)", got)
		}
		if got, want := p.StatsFor("UpdateItem"), (OpStats{Requests: 2, Forwarded: 2, Injected: 1, Succeeded: 2}); got != want {
			t.Errorf("stats = %+v, want %+v", got, want)
		}
	})

	t.Run("hang", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		fired := make(chan string, 1)
		p.Add(Rule{Operation: "PutItem", Fault: AfterForward(Hang()), OnFire: func(op string) { fired <- op }})
		ctx, cancel := context.WithCancel(testCtx(t))
		errs := make(chan error, 1)
		go func() { errs <- put(ctx, p.DynamoDB(noRetry), tbl.Name, "hung-after-write") }()
		await(t, fired, "the write to land")
		if _, ok := exists(t, tbl, "hung-after-write"); !ok {
			t.Error("the write did not land before the hang")
		}
		cancel()
		if err := await(t, errs, "the client to give up"); !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	})
}
