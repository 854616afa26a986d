// Package usageseed makes real usage snapshots at chosen instants, for tests
// and demos of what reads them: a limiter acquires at the instants of a manual
// clock, the table's stream is drained with core/streampoll, and the
// aggregator files every record under the instant it was made at
// (docs/design.md §6, §16).
//
// DynamoDB Local stamps a stream record's ApproximateCreationDateTime with its
// own wall clock, and the aggregator files a record under that stamp; Traffic
// sets it to the instant the limiter's clock said, as DynamoDB's stamp would
// be in production. The snapshots are therefore exactly those the stack's
// aggregator would write for the same traffic.
package usageseed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// Acquire is one acquire of the traffic: whole tokens by limit name.
type Acquire struct {
	Entity, Resource string
	Consume          limiter.Consume
}

// Options configure Traffic; the zero value is the defaults.
type Options struct {
	// Windows are the aggregator's snapshot windows (default hourly,
	// daily and monthly).
	Windows []aggregator.Window
	// Logger receives the limiter's, the poller's and the aggregator's
	// logs (default: dropped).
	Logger *slog.Logger
}

// Traffic acquires on one namespace of a table at instants of its own clock
// and has the aggregator turn each instant's stream records into snapshots.
// Its poller reads the stream from its start: use one Traffic per table, or
// records already filed would be filed again under a later instant.
type Traffic struct {
	clk    *clock.Manual
	lim    *limiter.Limiter
	agg    *aggregator.Aggregator
	poller *streampoll.Poller
	// pending is what the poller's handler collected during one drain;
	// the handler runs in the drain's goroutine.
	pending []events.DynamoDBEventRecord
}

// New returns the traffic of namespace ns (its id) in table, whose stream is
// streamARN, starting at instant start.
func New(db *dynamodb.Client, streams streampoll.StreamsAPI, table, streamARN, ns string, start time.Time, o Options) (*Traffic, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Windows) == 0 {
		o.Windows = []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}
	}
	t := &Traffic{clk: clock.NewManual(start)}
	var err error
	// One shard and no cache of configs between instants: the same
	// traffic always lands on the same items.
	t.lim, err = limiter.New(db, table, ns, limiter.Options{Clock: t.clk.Now, Rand: func(int) int { return 0 }, ConfigCacheTTL: -1, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("usageseed: %w", err)
	}
	t.agg, err = aggregator.New(db, aggregator.Config{TableName: table, Windows: o.Windows}, aggregator.Options{Clock: t.clk.Now, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("usageseed: %w", err)
	}
	t.poller, err = streampoll.New(streams, streamARN, streampoll.Options{
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			t.pending = append(t.pending, ev.Records...)
			return events.DynamoDBEventResponse{}, nil
		},
		Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("usageseed: %w", err)
	}
	return t, nil
}

// Now is the traffic's clock.
func (t *Traffic) Now() time.Time { return t.clk.Now() }

// At sets the clock to instant, makes the acquires (each must be admitted),
// then hands every stream record written since the last call to the
// aggregator, filed under instant.
func (t *Traffic) At(ctx context.Context, instant time.Time, acquires ...Acquire) error {
	t.clk.Set(instant)
	for _, a := range acquires {
		if _, err := t.lim.Acquire(ctx, a.Entity, a.Resource, a.Consume); err != nil {
			return fmt.Errorf("usageseed: acquire %v by %s on %s at %s: %w", a.Consume, a.Entity, a.Resource, instant.Format(time.RFC3339), err)
		}
	}
	t.pending = nil
	st, err := t.poller.DrainOnce(ctx)
	if err != nil {
		return fmt.Errorf("usageseed: drain the stream: %w", err)
	}
	if st.Dropped > 0 {
		return fmt.Errorf("usageseed: the poller dropped %d records", st.Dropped)
	}
	recs := t.pending
	t.pending = nil
	for i := range recs {
		recs[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: instant}
	}
	res, err := t.agg.Process(ctx, recs)
	switch {
	case err != nil:
		return fmt.Errorf("usageseed: aggregate at %s: %w", instant.Format(time.RFC3339), err)
	case res.RedeliverFrom != "":
		return errors.New("usageseed: the aggregator asked to redeliver from " + res.RedeliverFrom)
	}
	return nil
}
