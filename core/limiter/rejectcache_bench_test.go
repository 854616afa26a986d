package limiter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
)

// failedWrites counts the conditional writes DynamoDB refused: each is
// billed at least one write unit though it reports none.
type failedWrites struct {
	limiter.DB
	n atomic.Int64
}

func (d *failedWrites) note(err error) {
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	if errors.As(err, &ccf) || errors.As(err, &tce) {
		d.n.Add(1)
	}
}

func (d *failedWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.DB.UpdateItem(ctx, in, o...)
	d.note(err)
	return out, err
}

func (d *failedWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.DB.PutItem(ctx, in, o...)
	d.note(err)
	return out, err
}

func (d *failedWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DB.TransactWriteItems(ctx, in, o...)
	d.note(err)
	return out, err
}

// rcBenchDuration is how long each BenchmarkRejectionCache case offers load
// (a tenth of it under -short).
const rcBenchDuration = 3 * time.Second

// rcWarm is how long BenchmarkRejectionCache offers load untimed first.
const rcWarm = time.Second

// rcOffer has 64 goroutines offer perSecond acquires of {rps: 1} in all to
// entity for d, paced with jitter, and returns the admissions, the
// rejections, the other outcomes and the seconds it took.
func rcOffer(lim *limiter.Limiter, entity string, perSecond int, d time.Duration) (admitted, rejected, other int64, el float64) {
	var adm, rej, oth atomic.Int64
	const goroutines = 64
	interval := time.Duration(float64(time.Second) * goroutines / float64(perSecond))
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := start.Add(time.Duration(rand.Int64N(int64(interval))))
			for {
				time.Sleep(time.Until(next))
				if time.Now().After(deadline) {
					return
				}
				_, err := lim.Acquire(context.Background(), entity, "rc", limiter.Consume{"rps": 1})
				var rle *limiter.RateLimitExceeded
				switch {
				case err == nil:
					adm.Add(1)
				case errors.As(err, &rle):
					rej.Add(1)
				default:
					oth.Add(1)
				}
				next = next.Add(interval)
			}
		}()
	}
	wg.Wait()
	return adm.Load(), rej.Load(), oth.Load(), time.Since(start).Seconds()
}

// BenchmarkRejectionCache is the rejection cache's workload (docs/design.md
// §10): 64 goroutines of one process offer 2× and 20× the limit (50 a
// second) to one hot entity for rcBenchDuration, paced with jitter, with
// the cache off and on. Per case it reports the offered and admitted rates
// (admissions never above what the limit allows), the DynamoDB calls and
// the write units billed (a refused conditional write is billed one) per
// acquire and per second, and the local and server rejections. Run it with
// -benchtime=1x: each case times itself. It runs on an emulator of its own
// (benchTable), after rcWarm of 20× the limit to another entity, untimed.
func BenchmarkRejectionCache(b *testing.B) {
	tbl := benchTable(b)
	const rate = 50 // per second
	setup, err := limiter.New(tbl.DB, tbl.Name, benchNS, limiter.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchSetLimits(b, setup, "rc", limit.Custom("rps", rate, rate, time.Second))
	// Untimed, 20× the limit to another entity for rcWarm, cache off: the
	// emulator, fresh, compiles its read and write paths.
	warm, err := limiter.New(tbl.DB, tbl.Name, benchNS, limiter.Options{RejectionCacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	rcOffer(warm, "warm", 20*rate, benchDuration(rcWarm))
	for _, over := range []int{2, 20} {
		for _, cache := range []struct {
			name string
			ttl  time.Duration
		}{{"cache-off", -1}, {"cache-on", 0}} {
			b.Run(strconv.Itoa(over)+"x"+"/"+cache.name, func(b *testing.B) {
				var m benchkit.Meter
				fw := &failedWrites{DB: benchkit.Metered(tbl.DB, &m)}
				lim, err := limiter.New(fw, tbl.Name, benchNS, limiter.Options{RejectionCacheTTL: cache.ttl})
				if err != nil {
					b.Fatal(err)
				}
				entity := "hot-" + strconv.Itoa(over) + "x" + "-" + cache.name
				// Create the bucket first: the run measures the steady state.
				if _, err := lim.Acquire(context.Background(), entity, "rc", limiter.Consume{"rps": 0}); err != nil {
					b.Fatal(err)
				}
				m.Reset()
				fw.n.Store(0)
				admitted, rejected, other, el := rcOffer(lim, entity, over*rate, benchDuration(rcBenchDuration))
				tot := m.Totals()
				acquires := float64(admitted + rejected + other)
				wcu := tot.WriteUnits + float64(fw.n.Load())
				s := lim.Stats()
				b.ReportMetric(acquires/el, "offered/s")
				b.ReportMetric(float64(admitted)/el, "admitted/s")
				b.ReportMetric(float64(s.LocalRejections), "local-429s")
				b.ReportMetric(float64(s.ServerRejections), "server-429s")
				b.ReportMetric(float64(tot.Calls)/acquires, "calls/acquire")
				b.ReportMetric(wcu/acquires, "WCU/acquire")
				b.ReportMetric(wcu/el, "WCU/s")
				b.ReportMetric(float64(other), "errors")
				// The limit admits its capacity plus its rate over the run.
				if bound := float64(rate) + rate*el; float64(admitted) > bound {
					b.Errorf("%d admitted in %.2fs, above the limit's %v", admitted, el, bound)
				}
				if other != 0 {
					b.Errorf("%d acquires failed", other)
				}
			})
		}
	}
}
