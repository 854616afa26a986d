// Package soak is the end-to-end conservation harness (`make soak`): several
// limiters (as separate processes) drive a mix of entities and resources on
// one DynamoDB Local through a fault proxy, the aggregator follows the real
// stream and is stopped hard and restarted, a rogue writer puts poison
// records in the stream, and at the end the harness checks that what the
// clients were told matches the buckets' counters, that the counters match
// the usage snapshots exactly, that no bucket admitted more than its
// limit allows, and that the calendar quotas conserved their allowance
// across a reset edge, top-ups, an operator's reset and doublings.
// docs/design.md §11 describes the checks.
package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// Faults are the probabilities, per matching request, of each injected
// fault kind.
type Faults struct {
	// Throttle answers ProvisionedThroughputExceeded without forwarding.
	Throttle float64
	// ServerError answers 500 without forwarding.
	ServerError float64
	// Conflict cancels a TransactWriteItems with TransactionConflict.
	Conflict float64
	// Timeout delays a request past the client's deadline.
	Timeout float64
	// LostResponse forwards a write, lets it apply, and answers 500.
	LostResponse float64
}

// DefaultFaults is every kind on at a rate the load still gets through.
func DefaultFaults() Faults {
	return Faults{Throttle: 0.02, ServerError: 0.005, Conflict: 0.05, Timeout: 0.002, LostResponse: 0.005}
}

// Config sizes a run. Zero values take the defaults.
type Config struct {
	// Duration of the load (default 2 minutes).
	Duration time.Duration
	// Seed drives every random choice of the harness and the proxy.
	Seed uint64
	// Goroutines acquiring (default 64) over Limiters limiters (default 4).
	Goroutines, Limiters int
	// Over is the offered load as a multiple of what the limits admit
	// (default 10); the emulator's throughput may cap it (the report says
	// what was offered).
	Over float64
	// Faults are injected on the limiters' calls (the zero value: none).
	Faults Faults
	// Restarts is how many times the aggregator is stopped hard and started
	// again from the stream's trim horizon (default 3; negative: none).
	Restarts int
	// Poison is how many malformed bucket items a rogue writer puts (default
	// 3; negative: none).
	Poison int
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = 2 * time.Minute
	}
	if c.Goroutines <= 0 {
		c.Goroutines = 64
	}
	if c.Limiters <= 0 {
		c.Limiters = 4
	}
	if c.Over <= 0 {
		c.Over = 10
	}
	if c.Restarts == 0 {
		c.Restarts = 3
	}
	if c.Poison == 0 {
		c.Poison = 3
	}
}

// Run creates a table on the DynamoDB Local at endpoint, runs the load and
// the aggregator, drains the stream and checks; progress goes to log. The
// report's OK says whether every check held. The run's clock is shifted so
// that a monthly reset edge (resetEdge) falls half way through
// cfg.Duration after Run begins.
func Run(ctx context.Context, endpoint string, cfg Config, log io.Writer) (*Report, error) {
	cfg.defaults()
	// The run's clock: the real one moved so that the monthly reset edge
	// falls half way through the configured duration. Every component
	// reads it; real time paces the load and bounds the calls.
	begin := time.Now()
	r := &Report{Seed: cfg.Seed, Config: cfg, Faults: map[string]int{}, Errors: map[string]int{}, QuotaShards: map[string]int64{}}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x50a4)), report: r, log: &lockedWriter{w: log},
		begin: begin, offset: resetEdge.Sub(begin.Add(cfg.Duration / 2)), quotaC: quotaAllowance(cfg.Duration)}
	db := ddblocal.DynamoDB(endpoint)
	table := fmt.Sprintf("soak-%d-%d", cfg.Seed, time.Now().UnixNano())
	desc, err := schema.Definition().CreateTable(ctx, db, table, time.Minute)
	if err != nil {
		return nil, err
	}
	store := config.NewStore(db, table, config.WithClock(w.now))
	if err := store.StampVersion(ctx, "soak"); err != nil {
		return nil, err
	}
	ns, err := control.New(db, table, control.Options{Clock: w.now}).RegisterNamespace(ctx, "soak", "soak")
	if err != nil {
		return nil, err
	}
	proxy, err := faultproxy.New(endpoint, faultproxy.WithSeed(cfg.Seed))
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	w.db, w.table, w.ns, w.proxy = db, table, ns, proxy
	if err := w.setup(ctx); err != nil {
		return nil, fmt.Errorf("soak: setup: %w", err)
	}
	w.injectFaults()
	follower, err := newFollower(w, ddblocal.Streams(endpoint), aws.ToString(desc.LatestStreamArn))
	if err != nil {
		return nil, err
	}
	if err := follower.start(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "soak: seed %d, table %s, %d goroutines over %d limiters for %s; quota %d tokens a month; the run's clock reads %s, the reset edge %s\n",
		cfg.Seed, table, cfg.Goroutines, cfg.Limiters, cfg.Duration, w.quotaC, w.now().Format(time.RFC3339), resetEdge.Format(time.RFC3339))
	if err := w.load(ctx, follower); err != nil {
		follower.stop()
		return nil, fmt.Errorf("soak: load: %w", err)
	}
	proxy.Reset() // the faults end with the load
	follower.stop()
	if err := follower.drain(ctx); err != nil {
		return nil, fmt.Errorf("soak: drain: %w", err)
	}
	if err := w.check(ctx); err != nil {
		return nil, fmt.Errorf("soak: check: %w", err)
	}
	return r, nil
}

// lockedWriter serialises the writes of the run's goroutines (the load,
// the quota events, the aggregator's follower) to the caller's log, which
// need not be safe for concurrent use (a test's bytes.Buffer is not).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
