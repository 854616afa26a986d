package limiter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// emulatorWarmCalls is how many bare conditional UpdateItems benchTable
// sends to a fresh emulator before anything is timed: enough for the JVM's
// compiler to have compiled the write path.
const emulatorWarmCalls = 600

// benchTable is the table of a benchmark that loads the emulator. It lives
// on a DynamoDB Local of its own (ddbtest.NewOwnTable), so its figures do
// not depend on what ran before it in the binary: DynamoDB Local keeps every
// stream record for the life of the process and its writes slow down as they
// pile up (in one `make bench`, BenchmarkHotKey's 429s took 9.56 calls at a
// p50 of 1.31 s late in the run, 1.14 calls at 49 ms alone). The table has
// no stream (a harness table has none unless asked): no benchmark of the
// limiter reads one, and none of its own writes then slows down its later
// ones. The fresh
// emulator is warmed with emulatorWarmCalls bare writes from 8 goroutines,
// untimed.
func benchTable(b *testing.B) *ddbtest.Table {
	b.Helper()
	tbl := ddbtest.NewOwnTable(b)
	ctx := context.Background()
	floor, err := benchkit.FloorUpdateItem(ctx, tbl.DB, tbl.Name, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := concurrently(ctx, 8, emulatorWarmCalls, floor); err != nil {
		b.Fatalf("warming the emulator: %v", err)
	}
	return tbl
}

// concurrently runs op for i in [0, n) on g goroutines, each taking the
// next i, and returns the first error.
func concurrently(ctx context.Context, g, n int, op benchkit.Op) error {
	_, err := timeConcurrently(ctx, g, n, op)
	return err
}

// timeConcurrently is concurrently, returning the wall time it took.
func timeConcurrently(ctx context.Context, g, n int, op benchkit.Op) (time.Duration, error) {
	var next atomic.Int64
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range min(g, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(ctx, i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n)) // stop the others early
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// runFor runs op on g goroutines, each taking the next i, until d has
// passed; it returns how many ops completed, the wall time until the last
// one did, and the first error.
func runFor(ctx context.Context, g int, d time.Duration, op benchkit.Op) (int, time.Duration, error) {
	var next, done atomic.Int64
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
		stop  atomic.Bool
	)
	start := time.Now()
	deadline := start.Add(d)
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(deadline) {
				if err := op(ctx, int(next.Add(1)-1)); err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), time.Since(start), first
}

// benchDuration is d, or a tenth of it under -short (make test and make bench-smoke run
// every benchmark once, quickly).
func benchDuration(d time.Duration) time.Duration {
	if testing.Short() {
		return d / 10
	}
	return d
}
