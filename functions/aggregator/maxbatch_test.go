package main

// BenchmarkMaxBatch states the Lambda's memory at the largest batch an event
// source mapping can deliver (BatchSize 10,000): main's handler (wire and
// Invoke, as main wires them and lambda.Start calls it per
// invocation: the payload's bytes in, their decode, the batch, the
// response's JSON out), on one 10,000-record event against DynamoDB Local.
//
// The event: 10,000 MODIFY records of 500 buckets (entities `key-000` to
// `key-499`, resource gpt-4, limits rpm and tpm and the reserved wcu, as the
// client writes them), each consuming rpm 1 and tpm 100–1,999 tokens, one
// record every 0.36 s of stream time from 12:20 UTC, so the hourly window
// rolls once. It is about 20 MB of JSON; real stream batches are smaller
// (Lambda caps an invocation's payload at 6 MB), so this is a bound.
//
// While the invocation runs, a sampler reads runtime/metrics every
// millisecond; the benchmark reports, per invocation:
//
//   - peak-heap-inuse-MB: the highest heap in use (objects plus the unused
//     part of their spans: MemStats.HeapInuse) seen, including the payload
//     bytes the runtime holds and the test binary's own baseline;
//   - peak-heap-objects-MB: the highest bytes of heap objects seen
//     (MemStats.HeapAlloc);
//   - baseline-heap-inuse-MB: the heap in use just before the invocation,
//     after a GC, with the payload already read (the runtime's buffer);
//   - alloc-MB: bytes allocated during the invocation (MemStats.TotalAlloc);
//   - B/record, allocs/record: the same per record;
//   - calls/op, floor-B/record, floor-allocs/record: the floor, the
//     invocation's DynamoDB calls sent again bare through the client the
//     handler has (condwrite's, which sends the snapshot writes itself),
//     and what they allocate per record (callFloors);
//   - own-B/record, own-allocs/record: the invocation's allocations beyond
//     the floor, the handler's own share; B-ratio: allocated ÷ floor;
//   - sdk-floor-B/record, sdk-floor-allocs/record: the same calls sent bare
//     through the SDK client alone, what the writes cost before condwrite
//     (docs/decisions.md P43, P57);
//   - direct-share: the fraction of the invocation's UpdateItems that
//     condwrite sent and saw succeed (the rest went through the SDK).
//
// The peaks depend on when the GC runs (GOGC=100 unless set); the
// allocation figures do not. The table is fresh for every invocation, so
// every snapshot is written.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

const (
	maxBatchRecordsFull = 10_000
	maxBatchBuckets     = 500
	maxBatchNS          = "mAxBaTcHnS"
)

// maxBatchSize is the batch BenchmarkMaxBatch hands the handler: the
// largest a stream event source mapping sends (maxBatchRecordsFull), or a
// tenth of it under -short (make test and make bench-smoke run every
// benchmark once: it must work, its figures mean nothing).
func maxBatchSize() int {
	if testing.Short() {
		return maxBatchRecordsFull / 10
	}
	return maxBatchRecordsFull
}

func BenchmarkMaxBatch(b *testing.B) {
	payload := maxBatchEvent(b)
	var peakInuse, peakObjects, baseline, allocated, mallocs uint64
	var sent, succeeded int64
	for range b.N {
		b.StopTimer()
		h, w := wiredHandler(b, ddbtest.NewTable(b))
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := startHeapSampler()
		b.StartTimer()
		out, err := h.Invoke(context.Background(), payload)
		b.StopTimer()
		inuse, objects := s.stop()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if err != nil {
			b.Fatalf("Invoke: %v", err)
		}
		var resp events.DynamoDBEventResponse
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("response %s (%v)", out, err)
		}
		c := w.direct.Stats()
		sent, succeeded = sent+c.Sent+c.Passed, succeeded+c.Succeeded
		peakInuse, peakObjects = max(peakInuse, inuse), max(peakObjects, objects)
		baseline = max(baseline, before.HeapInuse)
		allocated += after.TotalAlloc - before.TotalAlloc
		mallocs += after.Mallocs - before.Mallocs
	}
	n := float64(b.N)
	records := float64(maxBatchSize())
	floor, sdk := callFloors(b, payload)
	own := float64(allocated)/n/records - floor.bytes/records
	b.ReportMetric(float64(floor.calls), "calls/op")
	b.ReportMetric(sdk.bytes/records, "sdk-floor-B/record")
	b.ReportMetric(sdk.allocs/records, "sdk-floor-allocs/record")
	b.ReportMetric(float64(succeeded)/float64(sent), "direct-share")
	b.ReportMetric(floor.bytes/records, "floor-B/record")
	b.ReportMetric(floor.allocs/records, "floor-allocs/record")
	b.ReportMetric(own, "own-B/record")
	b.ReportMetric(float64(mallocs)/n/records-floor.allocs/records, "own-allocs/record")
	b.ReportMetric(float64(allocated)/n/floor.bytes, "B-ratio")
	const mb = 1 << 20
	b.ReportMetric(float64(peakInuse)/mb, "peak-heap-inuse-MB")
	b.ReportMetric(float64(peakObjects)/mb, "peak-heap-objects-MB")
	b.ReportMetric(float64(baseline)/mb, "baseline-heap-inuse-MB")
	b.ReportMetric(float64(allocated)/n/mb, "alloc-MB")
	b.ReportMetric(float64(allocated)/n/records, "B/record")
	b.ReportMetric(float64(mallocs)/n/records, "allocs/record")
	b.ReportMetric(float64(len(payload))/mb, "event-MB")
	b.ReportMetric(records, "records/op")
}

// callFloor is what the DynamoDB calls of one invocation cost when sent
// bare, one after the other, through the same SDK client: calls, and the
// bytes and allocations they took.
type callFloor struct {
	calls         int
	bytes, allocs float64
}

// callFloors measures the invocation's floors: the handler (as handler.New
// makes it, on the SDK client wire makes) handles payload once on a fresh
// table with its calls recorded; the same calls, aimed at a fresh table,
// are then sent again bare and measured, through the client the handler
// has in the Lambda (a condwrite.DB: floor) and, to another fresh table,
// through the SDK client alone (sdk). What the invocation allocates beyond
// floor is the aggregator's own cost.
func callFloors(b *testing.B, payload []byte) (floor, sdk callFloor) {
	b.Helper()
	ctx := context.Background()
	recTable := ddbtest.NewTable(b)
	_, w := wiredHandler(b, recTable)
	rec := &callRecorder{DB: w.db}
	h, err := handler.New(rec, handler.Settings{Config: aggregator.Config{TableName: recTable.Name}}, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Invoke(ctx, payload); err != nil {
		b.Fatalf("Invoke: %v", err)
	}
	direct := condwrite.New(ctx, w.db)
	return rec.replay(b, direct, ddbtest.NewTable(b).Name), rec.replay(b, w.db, ddbtest.NewTable(b).Name)
}

// replay sends the recorded calls again, bare, through db to table, and
// measures what they allocate.
func (r *callRecorder) replay(b *testing.B, db handler.DB, table string) callFloor {
	b.Helper()
	ctx := context.Background()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, call := range r.calls {
		if err := call(ctx, db, table); err != nil {
			b.Fatalf("bare call: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	return callFloor{
		calls:  len(r.calls),
		bytes:  float64(after.TotalAlloc - before.TotalAlloc),
		allocs: float64(after.Mallocs - before.Mallocs),
	}
}

// callRecorder records the calls the aggregator makes, to send them again
// to another table.
type callRecorder struct {
	handler.DB
	mu    sync.Mutex
	calls []func(ctx context.Context, db handler.DB, table string) error
}

func (r *callRecorder) add(call func(ctx context.Context, db handler.DB, table string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *callRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.add(func(ctx context.Context, db handler.DB, table string) error {
		again := *in
		again.TableName = &table
		_, err := db.UpdateItem(ctx, &again)
		return err
	})
	return r.DB.UpdateItem(ctx, in, opts...)
}

func (r *callRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.add(func(ctx context.Context, db handler.DB, table string) error {
		again := *in
		again.TableName = &table
		_, err := db.PutItem(ctx, &again)
		return err
	})
	return r.DB.PutItem(ctx, in, opts...)
}

func (r *callRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.add(func(ctx context.Context, db handler.DB, table string) error {
		again := *in
		again.TableName = &table
		_, err := db.GetItem(ctx, &again)
		return err
	})
	return r.DB.GetItem(ctx, in, opts...)
}

func (r *callRecorder) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("callRecorder: the benchmark's batch makes no transaction")
}

// wiredHandler wires the handler of tbl as main does: a lambda.Handler,
// which lambda.Start invokes as it is, and what wire built with it (the SDK
// client, and the condwrite.DB over it the handler uses). The EMF
// sink wire points at os.Stdout is pointed at the null device for the
// benchmark's output.
func wiredHandler(b *testing.B, tbl *ddbtest.Table) (lambda.Handler, wired) {
	b.Helper()
	for k, v := range map[string]string{
		"TABLE_NAME": tbl.Name, "AWS_ENDPOINT_URL_DYNAMODB": tbl.Endpoint, "AWS_REGION": ddblocal.Region,
		"AWS_ACCESS_KEY_ID": ddblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY": ddblocal.SecretAccessKey,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		b.Setenv(k, v)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = null.Close() })
	stdout := os.Stdout
	os.Stdout = null
	h, w, err := wire(context.Background(), quietLogger(), true)
	os.Stdout = stdout
	if err != nil {
		b.Fatal(err)
	}
	return h, w
}

// heapSampler records the peak heap while it runs.
type heapSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	// peaks, written by the sampling goroutine, read after stop.
	inuse, objects uint64
}

// The runtime/metrics behind MemStats.HeapInuse (objects plus unused) and
// MemStats.HeapAlloc (objects).
const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricHeapUnused  = "/memory/classes/heap/unused:bytes"
)

func startHeapSampler() *heapSampler {
	s := &heapSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		samples := []metrics.Sample{{Name: metricHeapObjects}, {Name: metricHeapUnused}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			objects, unused := samples[0].Value.Uint64(), samples[1].Value.Uint64()
			s.objects = max(s.objects, objects)
			s.inuse = max(s.inuse, objects+unused)
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling (after one last reading) and returns the peaks.
func (s *heapSampler) stop() (inuse, objects uint64) {
	close(s.done)
	s.wg.Wait()
	return s.inuse, s.objects
}

// maxBatchEvent builds the 10,000-record event's JSON (see the top of the
// file). Seeds are fixed: every run builds the same bytes.
func maxBatchEvent(b *testing.B) []byte {
	b.Helper()
	rng := rand.New(rand.NewPCG(2026, 12))
	start := time.Date(2026, 11, 30, 12, 20, 0, 0, time.UTC)
	type state struct{ rpmTc, tpmTc, wcuTc int64 }
	buckets := make([]state, maxBatchBuckets)
	image := func(entity string, st state, rfMs int64) map[string]types.AttributeValue {
		it := schema.BucketItemKeys(maxBatchNS, entity, "gpt-4", 0).Item()
		n := schema.Num
		it[schema.AttrEntityID], it[schema.AttrResource] = schema.Str(entity), schema.Str("gpt-4")
		it[schema.AttrRF], it[schema.AttrShardCount] = n(rfMs), n(1)
		it[schema.AttrCascade], it[schema.AttrPGen] = &types.AttributeValueMemberBOOL{}, n(0)
		for _, l := range []struct {
			name           string
			cp, ra, rp, tc int64
		}{
			{"rpm", 100_000, 100_000, 60_000, st.rpmTc},
			{"tpm", 100_000_000, 100_000_000, 60_000, st.tpmTc},
			{schema.WCULimit, 1_000_000, 1_000_000, 1_000, st.wcuTc},
		} {
			it["b_"+l.name+"_cp"], it["b_"+l.name+"_ra"], it["b_"+l.name+"_rp"] = n(l.cp), n(l.ra), n(l.rp)
			it["b_"+l.name+"_tk"], it["b_"+l.name+"_tc"] = n(l.cp-l.tc%l.cp), n(l.tc)
		}
		return it
	}
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, maxBatchSize())}
	for i := range ev.Records {
		k := rng.IntN(maxBatchBuckets)
		entity := fmt.Sprintf("key-%03d", k)
		at := start.Add(time.Duration(i) * 360 * time.Millisecond)
		old := buckets[k]
		nw := state{rpmTc: old.rpmTc + 1000, tpmTc: old.tpmTc + (100+rng.Int64N(1900))*1000, wcuTc: old.wcuTc + 1000}
		buckets[k] = nw
		oldImg, err := streamimage.ImageFromDynamoDB(image(entity, old, at.UnixMilli()-1000))
		if err != nil {
			b.Fatal(err)
		}
		newImg, err := streamimage.ImageFromDynamoDB(image(entity, nw, at.UnixMilli()))
		if err != nil {
			b.Fatal(err)
		}
		keys := schema.BucketKey(maxBatchNS, entity, "gpt-4", 0)
		seq := strconv.Itoa(100_000_000_000_000_000 + i)
		ev.Records[i] = events.DynamoDBEventRecord{
			AWSRegion: ddblocal.Region, EventID: seq, EventName: "MODIFY",
			EventSource: streamimage.EventSource, EventVersion: "1.1",
			EventSourceArn: "arn:aws:dynamodb:" + ddblocal.Region + ":000000000000:table/maxbatch/stream/2026-11-30T00:00:00.000",
			Change: events.DynamoDBStreamRecord{
				ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
				Keys: map[string]events.DynamoDBAttributeValue{
					schema.AttrPK: events.NewStringAttribute(keys.PK), schema.AttrSK: events.NewStringAttribute(keys.SK),
				},
				NewImage: newImg, OldImage: oldImg,
				SequenceNumber: seq, SizeBytes: 600, StreamViewType: "NEW_AND_OLD_IMAGES",
			},
		}
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return payload
}
