package limiter_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// callsKey carries an acquire's call counter in its context.
type callsKey struct{}

// callCountingDB counts, per acquire, the DynamoDB calls made under its
// context (the counter callsKey carries).
type callCountingDB struct{ limiter.DB }

func countCall(ctx context.Context) {
	if n, ok := ctx.Value(callsKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

func (d callCountingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	countCall(ctx)
	return d.DB.UpdateItem(ctx, in, o...)
}
func (d callCountingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	countCall(ctx)
	return d.DB.PutItem(ctx, in, o...)
}
func (d callCountingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	countCall(ctx)
	return d.DB.GetItem(ctx, in, o...)
}
func (d callCountingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	countCall(ctx)
	return d.DB.BatchGetItem(ctx, in, o...)
}
func (d callCountingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	countCall(ctx)
	return d.DB.Query(ctx, in, o...)
}
func (d callCountingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	countCall(ctx)
	return d.DB.TransactWriteItems(ctx, in, o...)
}

// hotKeyDuration is how long BenchmarkHotKey hammers the pair (a tenth of
// it under -short).
const hotKeyDuration = 3 * time.Second

// hotKeyWarm is how long BenchmarkHotKey runs its workload untimed first.
const hotKeyWarm = time.Second

// hotKeySample is one acquire of BenchmarkHotKey.
type hotKeySample struct {
	lat   time.Duration
	calls int64
}

// hotKeyRun runs BenchmarkHotKey's workload on entity for d and returns
// the samples per outcome.
func hotKeyRun(lims []*limiter.Limiter, entity string, d time.Duration) map[string][]hotKeySample {
	var mu sync.Mutex
	outcomes := map[string][]hotKeySample{}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := lims[g%len(lims)]
			for time.Now().Before(deadline) {
				var n atomic.Int64
				ctx := context.WithValue(context.Background(), callsKey{}, &n)
				t0 := time.Now()
				_, err := lim.Acquire(ctx, entity, "hot", limiter.Consume{"rpm": 1, "tpm": 10})
				s := hotKeySample{lat: time.Since(t0), calls: n.Load()}
				var rle *limiter.RateLimitExceeded
				outcome := "other"
				switch {
				case err == nil:
					outcome = "admitted"
				case errors.As(err, &rle):
					outcome = "429"
				}
				mu.Lock()
				outcomes[outcome] = append(outcomes[outcome], s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return outcomes
}

// BenchmarkHotKey is the contention workload (docs/decisions.md P26): 64
// goroutines over 4 limiters (separate caches, as 4 processes) acquiring
// {rpm: 1, tpm: 10} on one pair whose rpm limit is 10 a second, for
// hotKeyDuration. It reports, per outcome (admitted, 429, other), the
// count, the DynamoDB calls per acquire and the p50/p99 latency, so the
// cost of contention is visible. "other" must stay 0: contention is a
// verdict, never an outage. It runs on an emulator of its own (benchTable),
// after hotKeyWarm of the same workload on another pair, untimed.
func BenchmarkHotKey(b *testing.B) {
	tbl := benchTable(b)
	db := callCountingDB{DB: tbl.DB}
	var lims []*limiter.Limiter
	for range 4 {
		l, err := limiter.New(db, tbl.Name, benchNS, limiter.Options{})
		if err != nil {
			b.Fatal(err)
		}
		lims = append(lims, l)
	}
	benchSetLimits(b, lims[0], "hot", limit.Custom("rpm", 10, 10, time.Second), limit.Custom("tpm", 100_000, 100_000, time.Second))
	// Untimed, the same workload on another pair for hotKeyWarm: the
	// emulator, fresh, compiles its read, write and transaction paths.
	hotKeyRun(lims, "warm-key", benchDuration(hotKeyWarm))
	outcomes := hotKeyRun(lims, "hot-key", benchDuration(hotKeyDuration))
	for _, o := range []string{"admitted", "429", "other"} {
		ss := outcomes[o]
		b.ReportMetric(float64(len(ss)), o+"-count")
		if len(ss) == 0 {
			continue
		}
		var calls int64
		lat := make([]time.Duration, len(ss))
		for i, s := range ss {
			calls += s.calls
			lat[i] = s.lat
		}
		slices.Sort(lat)
		b.ReportMetric(float64(calls)/float64(len(ss)), o+"-calls/acquire")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), o+"-p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), o+"-p99-µs")
	}
}
