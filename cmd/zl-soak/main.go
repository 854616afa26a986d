// Command zl-soak is what `make soak` runs: the end-to-end conservation
// harness of internal/soak on DynamoDB Local (started here unless
// AWS_ENDPOINT_URL_DYNAMODB names one). It prints the summary table and
// exits 1 when a check fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/soak"
)

func main() {
	cfg := soak.Config{Faults: soak.DefaultFaults()}
	flag.DurationVar(&cfg.Duration, "duration", 2*time.Minute, "how long the load runs")
	seed := flag.Uint64("seed", 0, "the run's seed (0: from the clock)")
	flag.Float64Var(&cfg.Over, "over", 10, "offered load as a multiple of what the limits admit (2 to 20)")
	flag.IntVar(&cfg.Goroutines, "goroutines", 64, "acquiring goroutines")
	flag.IntVar(&cfg.Limiters, "limiters", 4, "limiters (processes) sharing the table")
	flag.IntVar(&cfg.Restarts, "restarts", 3, "hard aggregator restarts (negative: none)")
	flag.Float64Var(&cfg.Faults.Throttle, "throttle", cfg.Faults.Throttle, "throttle rate per request")
	flag.Float64Var(&cfg.Faults.ServerError, "5xx", cfg.Faults.ServerError, "500 rate per request")
	flag.Float64Var(&cfg.Faults.Conflict, "conflict", cfg.Faults.Conflict, "TransactionConflict rate per transaction")
	flag.Float64Var(&cfg.Faults.Timeout, "timeout", cfg.Faults.Timeout, "rate of requests delayed past the client's deadline")
	flag.Float64Var(&cfg.Faults.LostResponse, "lost", cfg.Faults.LostResponse, "rate of writes applied whose response is lost")
	flag.Parse()
	cfg.Seed = *seed
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "zl-soak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg soak.Config) error {
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if endpoint == "" {
		srv, err := ddblocal.StartDefault(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }()
		endpoint = srv.Endpoint
	}
	r, err := soak.Run(ctx, endpoint, cfg, os.Stderr)
	if err != nil {
		return err
	}
	r.WriteTable(os.Stdout)
	if !r.OK() {
		return fmt.Errorf("a check failed (replay with -seed %d)", r.Seed)
	}
	return nil
}
