package soak

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// follower is the aggregator on the table's stream, as the Lambda's event
// source mapping runs it: batches, partial batch failures, three retries,
// bisection, failures to an on-failure handler. Its checkpoints live in
// memory, so a restart starts again from the trim horizon and every record
// is delivered again.
type follower struct {
	w       *world
	streams streampoll.StreamsAPI
	arn     string
	h       *handler.Handler

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	records int // delivered, over every poller
	batches int
	dropped []string // records given to the on-failure handler
}

func newFollower(w *world, streams streampoll.StreamsAPI, arn string) (*follower, error) {
	h, err := handler.New(w.db, handler.Settings{Config: aggregator.Config{TableName: w.table}, Clock: w.now}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return &follower{w: w, streams: streams, arn: arn, h: h}, nil
}

func (f *follower) poller() (*streampoll.Poller, error) {
	return streampoll.New(f.streams, f.arn, streampoll.Options{
		Logger: slog.New(slog.DiscardHandler), MaxRetries: 3, BisectOnError: true, PollInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			resp, err := f.h.Handle(ctx, ev)
			f.w.noteWindows(ev)
			f.mu.Lock()
			f.records += len(ev.Records)
			f.batches++
			f.mu.Unlock()
			return resp, err
		},
		OnFailure: func(_ context.Context, fl streampoll.Failure) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.dropped = append(f.dropped, fmt.Sprintf("%+v", fl))
		},
	})
}

// start runs a poller until stop or restart.
func (f *follower) start(ctx context.Context) error {
	p, err := f.poller()
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	f.mu.Lock()
	f.cancel, f.done = cancel, done
	f.mu.Unlock()
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			if err := p.Poll(pctx); err != nil && pctx.Err() == nil {
				fmt.Fprintf(f.w.log, "soak: aggregator poll: %v\n", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return nil
}

// stop kills the poller mid-batch if it is in one.
func (f *follower) stop() {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// restart stops the poller hard and starts a new one.
func (f *follower) restart(ctx context.Context) error {
	f.stop()
	f.w.count(func(r *Report) { r.Restarts++ })
	return f.start(ctx)
}

// drain delivers everything in the stream with a fresh poller (so from the
// trim horizon once more) and stops when it is read.
func (f *follower) drain(ctx context.Context) error {
	p, err := f.poller()
	if err != nil {
		return err
	}
	if _, err := p.DrainOnce(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.w.report
	r.StreamRecords, r.StreamBatches, r.Dropped = f.records, f.batches, len(f.dropped)
	return nil
}
