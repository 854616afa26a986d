// Package customresource answers CloudFormation custom-resource requests
// (docs/design.md §12). It builds on aws-lambda-go's cfn types and adds what
// cfn.LambdaWrap lacks:
//
//   - a panic in the handler becomes FAILED with the panic as the reason;
//   - when less than Options.Margin (10 s) of the Lambda deadline remain, the
//     request is answered FAILED before the function times out, so a stack
//     never waits an hour for a response that will not come;
//   - a handler announces its physical id with SetPhysicalID before its
//     first write; a FAILED answer (error, panic, deadline) carries the id
//     the handler returned, else the announced one, else the incoming one,
//     else FailedPhysicalID, so a later Delete finds what was written;
//   - Fail answers FAILED a request no handler could take (one whose event
//     did not decode), under the same rules;
//   - the response body stays within 4,096 bytes (Data holds string
//     scalars; a long Reason keeps its longest start that fits with the
//     " …[truncated]" marker, however much JSON escaping adds);
//   - the response goes only to an https ResponseURL, or http to a loopback
//     host (127.0.0.0/8, ::1, localhost) for local runs; any other is
//     refused with a *URLError before any request;
//   - the PUT never follows a redirect (a 3xx is a failed send), is retried
//     on network errors and 5xx answers, and a send that still fails is
//     logged and returned;
//   - no error or log line shows the ResponseURL's query, which holds the
//     pre-signed URL's signature: URLs are shown as scheme://host/path and
//     answer bodies are redacted.
package customresource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Handler handles one request. It returns the physical resource id (""
// keeps the one it announced with SetPhysicalID, else the incoming one)
// and the response Data, string scalars only. On error the request is
// answered FAILED with the error as the reason; the physical id it returns
// then is used only when not "" (a handler returns one when it wrote
// something a later Delete must find).
type Handler func(ctx context.Context, ev cfn.Event) (physicalID string, data map[string]string, err error)

// idSlot is one request's announced physical id.
type idSlot struct {
	mu sync.Mutex
	id string
}

type idSlotKey struct{}

// SetPhysicalID announces the physical id the handler will answer. A
// handler calls it, with the ctx Run gave it, as soon as it knows the id
// and before its first write: if it then fails, panics or is cut by the
// deadline margin without returning an id, the FAILED response carries
// this one, so a later Delete or rollback finds what was written. Outside
// Run it does nothing.
func SetPhysicalID(ctx context.Context, id string) {
	if s, ok := ctx.Value(idSlotKey{}).(*idSlot); ok {
		s.mu.Lock()
		s.id = id
		s.mu.Unlock()
	}
}

func (s *idSlot) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Options tune Run. The zero value of every field is its default.
type Options struct {
	// Client sends the response (default: an http.Client with a 15 s
	// timeout per attempt). A copy of it is used, set never to follow a
	// redirect; the caller's client is not changed.
	Client *http.Client
	// Logger receives the request, the outcome and send failures (default
	// slog.Default()).
	Logger *slog.Logger
	// Margin is how long before the context's deadline the request is
	// answered FAILED if the handler has not returned (default 10 s).
	Margin time.Duration
	// Attempts bounds the PUTs of one response (default 4).
	Attempts int
	// Backoff is the wait before the second attempt, doubled after each
	// (default 250 ms).
	Backoff time.Duration
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 15 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Margin <= 0 {
		o.Margin = 10 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	return o
}

// FailedPhysicalID is the physical id of a resource whose Create failed
// before it had one; a Delete of it is a no-op.
const FailedPhysicalID = "failed"

// PanicError is a handler panic turned into an error.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrDeadline reports a handler that had not returned when the Lambda
// deadline, less the margin, came.
var ErrDeadline = errors.New("the handler did not finish before the Lambda deadline (less the safety margin); answered FAILED so the stack does not wait")

// Wrap returns a Lambda handler for lambda.Start: each request is handled
// by h and answered; the invocation fails only when the response could not
// be sent (Lambda then retries the invocation, and handlers are idempotent).
func Wrap(h Handler, o Options) func(context.Context, cfn.Event) error {
	return func(ctx context.Context, ev cfn.Event) error {
		_, err := Run(ctx, ev, h, o)
		return err
	}
}

// Run handles ev with h, sends the response to ev.ResponseURL and returns
// it. The error is the send's: the handler's own failure is in the
// response.
func Run(ctx context.Context, ev cfn.Event, h Handler, o Options) (cfn.Response, error) {
	o = o.withDefaults()
	log := requestLog(o.Logger, ev)
	log.Info("custom resource request")

	slot := &idSlot{}
	id, data, err := call(context.WithValue(ctx, idSlotKey{}, slot), ev, h, o)
	if id == "" {
		id = slot.get()
	}
	resp := response(ctx, ev, id, data, err)
	return resp, answer(ctx, ev, resp, err, log, o)
}

// Fail answers ev FAILED with cause as the reason, without a handler: for
// a request that cannot be handled at all, such as one whose event did not
// decode (ev then holds what could be read: ResponseURL, StackID,
// RequestID, LogicalResourceID, and PhysicalResourceID when there is one).
// The physical id is ev's, else FailedPhysicalID. The response is sent
// under the same rules as Run's, and the error is the send's.
func Fail(ctx context.Context, ev cfn.Event, cause error, o Options) (cfn.Response, error) {
	o = o.withDefaults()
	if cause == nil {
		cause = errors.New("customresource: the request could not be handled")
	}
	resp := response(ctx, ev, "", nil, cause)
	return resp, answer(ctx, ev, resp, cause, requestLog(o.Logger, ev), o)
}

func requestLog(l *slog.Logger, ev cfn.Event) *slog.Logger {
	return l.With("request_id", ev.RequestID, "request_type", string(ev.RequestType),
		"resource_type", ev.ResourceType, "logical_id", ev.LogicalResourceID)
}

// answer logs the outcome (err is the handler's) and sends resp; the error
// is the send's.
func answer(ctx context.Context, ev cfn.Event, resp cfn.Response, err error, log *slog.Logger, o Options) error {
	if err != nil {
		var pe *PanicError
		if errors.As(err, &pe) {
			log.Error("custom resource handler panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		}
		log.Error("custom resource FAILED", "reason", resp.Reason, "physical_id", resp.PhysicalResourceID)
	} else {
		log.Info("custom resource SUCCESS", "physical_id", resp.PhysicalResourceID)
	}
	if err := send(ctx, ev.ResponseURL, resp, o); err != nil {
		log.Error("custom resource response not sent", "error", err, "status", string(resp.Status))
		return err
	}
	return nil
}

// call runs h under a deadline Margin before ctx's, turning a panic into an
// error and a late handler into ErrDeadline.
func call(ctx context.Context, ev cfn.Event, h Handler, o Options) (string, map[string]string, error) {
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		hctx, cancel = context.WithDeadline(ctx, d.Add(-o.Margin))
	}
	defer cancel()
	type outcome struct {
		id   string
		data map[string]string
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- outcome{err: &PanicError{Value: v, Stack: debug.Stack()}}
			}
		}()
		id, data, err := h(hctx, ev)
		done <- outcome{id, data, err}
	}()
	// A handler that fails once its margin deadline has come failed
	// because of it: the answer is ErrDeadline, whichever of the two the
	// select saw first. A handler that succeeded in that instant keeps its
	// success.
	deadline := func(r outcome) (string, map[string]string, error) {
		switch {
		case r.err == nil:
			return r.id, r.data, nil
		case ctx.Err() != nil:
			return r.id, nil, ctx.Err()
		default:
			return r.id, nil, ErrDeadline
		}
	}
	select {
	case r := <-done:
		if r.err != nil && hctx.Err() != nil {
			return deadline(r)
		}
		return r.id, r.data, r.err
	case <-hctx.Done():
		select {
		case r := <-done:
			return deadline(r)
		default:
			return deadline(outcome{err: hctx.Err()})
		}
	}
}

// response builds the answer: SUCCESS with Data, or FAILED with the
// error as the reason; the physical id (the handler's, else the announced
// one) falls back to the incoming one, then to FailedPhysicalID (failure)
// or the log stream (success).
func response(ctx context.Context, ev cfn.Event, id string, data map[string]string, err error) cfn.Response {
	r := cfn.Response{
		Status: cfn.StatusSuccess, RequestID: ev.RequestID, LogicalResourceID: ev.LogicalResourceID,
		StackID: ev.StackID, PhysicalResourceID: id,
	}
	if r.PhysicalResourceID == "" {
		r.PhysicalResourceID = ev.PhysicalResourceID
	}
	if err != nil {
		r.Status = cfn.StatusFailed
		// The reason repeats input; what CloudFormation can take (MaxBody)
		// is also what the log line and the function's result carry.
		r.Reason = schema.Excerpt(err.Error(), MaxBody)
		if r.PhysicalResourceID == "" {
			r.PhysicalResourceID = FailedPhysicalID
		}
		return r
	}
	if r.PhysicalResourceID == "" {
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			r.PhysicalResourceID = lambdacontext.LogStreamName
		}
		if r.PhysicalResourceID == "" {
			r.PhysicalResourceID = ev.LogicalResourceID
		}
	}
	if len(data) > 0 {
		r.Data = make(map[string]any, len(data))
		for k, v := range data {
			r.Data[k] = v
		}
	}
	return r
}
