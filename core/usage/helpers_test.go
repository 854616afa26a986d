package usage_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// world is a table with real traffic: the operator API that registers the
// namespace and sets the limits, a limiter acquiring at instants of a
// manual clock, and the aggregator fed from the table's own stream. It
// serves the tests and the examples (fail panics where there is no
// testing.TB).
type world struct {
	ctx    context.Context
	tbl    *ddbtest.Table
	clk    *clock.Manual
	ns     string
	ctl    *control.Controls
	lim    *limiter.Limiter
	agg    *aggregator.Aggregator
	poller *streampoll.Poller
	fail   func(format string, args ...any)

	mu      sync.Mutex
	pending []events.DynamoDBEventRecord
}

// quiet is a logger that drops everything.
var quiet = slog.New(slog.DiscardHandler)

// newWorld registers a namespace on tbl and sets the resource's limits.
// The aggregator writes hourly, daily and monthly snapshots.
func newWorld(tbl *ddbtest.Table, fail func(string, ...any), start time.Time, resource string, limits ...limit.Limit) *world {
	w := &world{ctx: context.Background(), tbl: tbl, clk: clock.NewManual(start), fail: fail}
	w.ctl = control.New(tbl.DB, tbl.Name, control.Options{Clock: w.clk.Now, Logger: quiet})
	var err error
	if w.ns, err = w.ctl.RegisterNamespace(w.ctx, "usage", "ops@example.com"); err != nil {
		fail("register: %v", err)
	}
	if len(limits) > 0 {
		if _, err := w.ctl.SetResourceLimits(w.ctx, w.ns, resource, limits, "ops@example.com"); err != nil {
			fail("limits: %v", err)
		}
	}
	w.lim, err = limiter.New(tbl.DB, tbl.Name, w.ns, limiter.Options{Clock: w.clk.Now, Rand: func(int) int { return 0 }, Logger: quiet})
	if err != nil {
		fail("limiter: %v", err)
	}
	w.agg, err = aggregator.New(tbl.DB, aggregator.Config{
		TableName: tbl.Name, Windows: []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly},
	}, aggregator.Options{Clock: w.clk.Now, Logger: quiet})
	if err != nil {
		fail("aggregator: %v", err)
	}
	w.poller, err = streampoll.New(tbl.Streams, tbl.StreamARN, streampoll.Options{
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.pending = append(w.pending, ev.Records...)
			return events.DynamoDBEventResponse{}, nil
		},
		Logger: quiet,
	})
	if err != nil {
		fail("poller: %v", err)
	}
	return w
}

// testWorld is newWorld on a fresh table of t, with the stream its
// aggregator reads.
func testWorld(t *testing.T, start time.Time, resource string, limits []limit.Limit, opts ...schema.TableOption) *world {
	t.Helper()
	return newWorld(ddbtest.NewTable(t, append([]schema.TableOption{ddbtest.WithStream()}, opts...)...), t.Fatalf, start, resource, limits...)
}

// acquire is one acquire of a world's traffic.
type acquire struct {
	entity, resource string
	consume          limiter.Consume
}

// at sets the clock to instant, makes the acquires (each must be
// admitted), then hands every new stream record to the aggregator filed
// under instant. DynamoDB Local stamps a record's ApproximateCreationDateTime
// with its own wall clock, which the aggregator would file it under
// (docs/design.md §6); the test sets it to the instant the limiter's clock
// said, as DynamoDB's stamp would be in production.
func (w *world) at(instant time.Time, acquires ...acquire) {
	w.clk.Set(instant)
	for _, a := range acquires {
		if _, err := w.lim.Acquire(w.ctx, a.entity, a.resource, a.consume); err != nil {
			w.fail("acquire %s on %s at %s: %v", a.entity, a.resource, instant.Format(time.RFC3339), err)
		}
	}
	st, err := w.poller.DrainOnce(w.ctx)
	if err != nil {
		w.fail("drain: %v", err)
	}
	if st.Dropped > 0 {
		w.fail("the poller dropped %d records", st.Dropped)
	}
	w.mu.Lock()
	recs := w.pending
	w.pending = nil
	w.mu.Unlock()
	for i := range recs {
		recs[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: instant}
	}
	res, err := w.agg.Process(w.ctx, recs)
	if err != nil || res.RedeliverFrom != "" {
		w.fail("aggregate at %s: %v, redeliver from %q", instant.Format(time.RFC3339), err, res.RedeliverFrom)
	}
}

// reader is a reader of the world's namespace.
func (w *world) reader(o usage.Options) *usage.Reader {
	if o.Clock == nil {
		o.Clock = w.clk.Now
	}
	if o.Logger == nil {
		o.Logger = quiet
	}
	r, err := usage.New(w.tbl.DB, w.tbl.Name, w.ns, o)
	if err != nil {
		w.fail("reader: %v", err)
	}
	return r
}

// utc is a UTC instant.
func utc(y int, m time.Month, d, h, mi int) time.Time {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC)
}
