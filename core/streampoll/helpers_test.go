package streampoll_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
)

// recorder is a handler that keeps every batch it is given and answers with
// respond (success when nil). It is safe for a Poll goroutine.
type recorder struct {
	mu      sync.Mutex
	batches [][]events.DynamoDBEventRecord
	respond func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	after   func(total int) // called with the number of records seen so far
}

func (r *recorder) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r.mu.Lock()
	call := len(r.batches)
	r.batches = append(r.batches, ev.Records)
	total := 0
	for _, b := range r.batches {
		total += len(b)
	}
	r.mu.Unlock()
	if r.after != nil {
		r.after(total)
	}
	if r.respond != nil {
		return r.respond(call, ev)
	}
	return events.DynamoDBEventResponse{}, nil
}

// pks returns the PK of every record of every batch.
func (r *recorder) pks() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.batches))
	for i, b := range r.batches {
		for _, rec := range b {
			out[i] = append(out[i], rec.Change.Keys["PK"].String())
		}
	}
	return out
}

func (r *recorder) all() [][]events.DynamoDBEventRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]events.DynamoDBEventRecord(nil), r.batches...)
}

// fail reports the records whose PK is in pks as failed.
func fail(ev events.DynamoDBEvent, pks ...string) events.DynamoDBEventResponse {
	var resp events.DynamoDBEventResponse
	for _, rec := range ev.Records {
		for _, pk := range pks {
			if rec.Change.Keys["PK"].String() == pk {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
			}
		}
	}
	return resp
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newPoller(t *testing.T, client streampoll.StreamsAPI, arn string, opts streampoll.Options) *streampoll.Poller {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.Wait == nil {
		opts.Wait = func(context.Context, time.Duration) error {
			t.Error("unexpected idle wait")
			return context.Canceled
		}
	}
	p, err := streampoll.New(client, arn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func drain(t *testing.T, p *streampoll.Poller) streampoll.Stats {
	t.Helper()
	st, err := p.DrainOnce(context.Background())
	if err != nil {
		t.Fatalf("DrainOnce: %v", err)
	}
	return st
}

func joined(b [][]string) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = strings.Join(x, ",")
	}
	return strings.Join(parts, " | ")
}

// seqLess compares stream sequence numbers, which are decimal strings of
// varying length (DynamoDB Local pads them to 21 digits).
func seqLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
