package aggregator_test

// BenchmarkAggregator measures the stream handler for `make bench` on one
// generated stream, made once per test binary and reused by every run.
//
// handle replays the stream's batches through Process against DynamoDB Local:
//
//   - records/s: delivered records per second of Process time (ns/op is the
//     Process time of the whole replay; table creation is not timed);
//   - p50-ms/invocation, p99-ms/invocation: Process time per batch;
//   - writes/1k-records: the aggregator's DynamoDB writes (snapshot
//     UpdateItems plus maintenance writes, every attempt counted) per 1,000
//     delivered records, split into snapshot-writes/1k-records and
//     maint-writes/1k-records;
//   - upstream-writes/1k-records: what upstream's scheme spends on the same
//     records, one UpdateItem per (record, limit other than wcu whose tc
//     moved, window);
//   - ratio: upstream-writes / writes, beside goal-ratio (5, the issue's
//     goal; reported, never enforced);
//   - records/op, invocations/op: the stream's size;
//   - B/record, allocs/record: heap bytes and allocations per delivered
//     record inside Process (runtime.MemStats TotalAlloc and Mallocs read
//     around each Process call; every goroutine counts, so the SDK's HTTP
//     transport does too). B/op and allocs/op are the same for the whole
//     stream.
//
// unsent hands the same full batches to Process against a DB that accepts
// every write without sending it, and reports B/record and allocs/record:
// the handler's own share, without the SDK's request pipeline and HTTP.
//
// 5s-window hands the same records to Process cut as the mapping's 5 s
// batching window would cut them at this sample's own rate (about 1.4
// records per second of fake time, so about 7 records a batch), against a
// DB that accepts every write without sending it, and reports the same
// write counts: the ratio when few records share a snapshot item. Its ns/op
// is the handler's own CPU time for the whole stream, with no DynamoDB.
//
// The stream. 50 API keys, 5 of them hot (12× the traffic of each other
// key), send 10,000 acquires of rpm 1 and tpm 100–1,999 through a real
// limiter (limits rpm 100 and tpm 100,000 per minute; a hot key averages
// about 10 requests a minute, so nothing is rejected and refills are rare)
// over two hours of a fake clock from 12:20 UTC, so the hourly windows roll
// twice (under -short, for make test and make bench-smoke, a tenth of the acquires over
// the same span). Seeds are fixed and the traffic is sequential, so every
// count is the same on every run. The aggregator runs live while the stream is made,
// as the deployed Lambda would: every 500 acquires the stream is drained
// through streampoll with the mapping's filter and batches of up to 100
// records (docs/design.md §6), its maintenance writes land on the buckets (their
// MODIFY records are part of the stream, as on a real table), and each
// delivered batch is kept with the clock reading it was handled at. The live
// snapshot writes are counted but not sent: they touch only #USAGE items,
// which neither the limiter nor the filter sees.
//
// DynamoDB Local stamps records with the wall clock, so every record is
// restamped with the fake time of the write that made it (the benchmark
// logs each successful write to a #STATE item; per item the stream keeps
// write order), truncated to seconds as Lambda delivers it.
//
// Each replay hands the same batches, with the same clock readings, to a new
// aggregator on a fresh table, so the seq# marks of one run never turn a
// later run into no-ops. The snapshot writes and the maintenance plan depend
// only on the records and the clock, so a replay makes exactly the writes
// the live aggregator made; the benchmark fails if the counts differ. On the
// fresh table the bucket items are absent, so the maintenance writes (all
// conditional) fail their conditions there: they are counted, as DynamoDB
// bills them, but cost the emulator a little less than landed ones.
//
// DynamoDB Local keeps every stream record for the life of the process,
// deleted tables' too, and its writes slow down as they pile up (a bare
// UpdateItem's p50 went from 4 ms to 18 ms after this stream). So the
// stream is made on an emulator of its own, stopped once the stream is
// captured, and the replay tables have the stack's layout but no stream.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// The generated stream.
const (
	benchNS         = "bEnChAgGrEg"
	benchResource   = "gpt-4"
	benchKeys       = 50
	benchHotKeys    = 5
	benchHotWeight  = 12 // a hot key's share of the traffic relative to the others
	benchAcquires   = 10_000
	benchSpan       = 2 * time.Hour
	benchDrainEvery = 500 // acquires between two drains of the stream
	benchBatchSize  = 100 // the mapping's BatchSize (docs/design.md §6)
	benchGoalRatio  = 5   // the goal: upstream writes ≥ 5× ours
)

// benchStart is the fake clock's start: 12:20 UTC, so two hours cross 13:00
// and 14:00 and no window key collides with a daily key (P22).
var benchStart = time.Date(2026, 11, 30, 12, 20, 0, 0, time.UTC)

// benchWindows are the deployment's default snapshot windows (docs/design.md §6).
var benchWindows = []aggregator.Window{aggregator.Hourly, aggregator.Daily}

// benchBatch is one delivered batch and the clock reading it was handled at.
type benchBatch struct {
	ev  events.DynamoDBEvent
	now time.Time
}

// benchStream is the generated stream and what the live aggregator wrote
// while it was made.
type benchStream struct {
	batches  []benchBatch
	records  int
	upstream int // UpdateItems upstream's scheme makes for these records

	liveSnapshotWrites, liveMaintWrites int64
}

var benchStreamCache struct {
	once sync.Once
	s    *benchStream
	err  error
}

// generatedStream returns the stream, making it on first use.
func generatedStream(b *testing.B) *benchStream {
	b.Helper()
	benchStreamCache.once.Do(func() {
		benchStreamCache.s, benchStreamCache.err = generateStream(b)
	})
	if benchStreamCache.err != nil {
		b.Fatal(benchStreamCache.err)
	}
	return benchStreamCache.s
}

func BenchmarkAggregator(b *testing.B) {
	s := generatedStream(b)
	b.Run("handle", func(b *testing.B) {
		b.StopTimer()
		// Warm the emulator's JIT on a throwaway table first: Lambda talks to
		// DynamoDB, which has none.
		replay(b, s.batches[:min(10, len(s.batches))])
		b.ResetTimer() // the timer stays stopped; replay runs it inside Process only
		var lat []time.Duration
		var snapWrites, maintWrites int64
		var bytes, mallocs uint64
		for range b.N {
			r := replay(b, s.batches)
			if r.snapWrites != s.liveSnapshotWrites || r.maintWrites != s.liveMaintWrites {
				b.Fatalf("the replay wrote %d snapshot and %d maintenance writes, the live aggregator %d and %d",
					r.snapWrites, r.maintWrites, s.liveSnapshotWrites, s.liveMaintWrites)
			}
			lat = append(lat, r.lat...)
			bytes, mallocs = bytes+r.bytes, mallocs+r.mallocs
			snapWrites += r.snapWrites
			maintWrites += r.maintWrites
		}
		var took time.Duration
		for _, d := range lat {
			took += d
		}
		n := float64(b.N)
		perK := func(w float64) float64 { return w / n / float64(s.records) * 1000 }
		ours := perK(float64(snapWrites + maintWrites))
		upstream := float64(s.upstream) / float64(s.records) * 1000
		r := benchkit.Summarise(lat, took)
		b.ReportMetric(float64(s.records)*n/took.Seconds(), "records/s")
		b.ReportMetric(float64(r.P50.Microseconds())/1000, "p50-ms/invocation")
		b.ReportMetric(float64(r.P99.Microseconds())/1000, "p99-ms/invocation")
		b.ReportMetric(ours, "writes/1k-records")
		b.ReportMetric(perK(float64(snapWrites)), "snapshot-writes/1k-records")
		b.ReportMetric(perK(float64(maintWrites)), "maint-writes/1k-records")
		b.ReportMetric(upstream, "upstream-writes/1k-records")
		b.ReportMetric(upstream/ours, "ratio")
		b.ReportMetric(benchGoalRatio, "goal-ratio")
		b.ReportMetric(float64(s.records), "records/op")
		b.ReportMetric(float64(len(s.batches)), "invocations/op")
		b.ReportMetric(float64(bytes)/n/float64(s.records), "B/record")
		b.ReportMetric(float64(mallocs)/n/float64(s.records), "allocs/record")
	})
	b.Run("unsent", func(b *testing.B) {
		quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
		var bytes, mallocs uint64
		for range b.N {
			b.StopTimer()
			var nowMs atomic.Int64
			agg, snap, maint := unsentAggregator(b, &nowMs, quiet)
			for _, bt := range s.batches {
				nowMs.Store(bt.now.UnixMilli())
				var m allocMeter
				m.start()
				b.StartTimer()
				_, err := agg.Process(context.Background(), bt.ev.Records)
				b.StopTimer()
				m.stop()
				if err != nil {
					b.Fatal(err)
				}
				bytes, mallocs = bytes+m.bytes, mallocs+m.mallocs
			}
			if snap.writes() != s.liveSnapshotWrites || maint.writes() != s.liveMaintWrites {
				b.Fatalf("unsent: %d snapshot and %d maintenance writes, the live aggregator %d and %d",
					snap.writes(), maint.writes(), s.liveSnapshotWrites, s.liveMaintWrites)
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(s.records)*n/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(bytes)/n/float64(s.records), "B/record")
		b.ReportMetric(float64(mallocs)/n/float64(s.records), "allocs/record")
	})
	b.Run("5s-window", func(b *testing.B) {
		batches := windowBatches(s, 5*time.Second)
		quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
		var snapWrites, maintWrites int64
		for b.Loop() {
			var nowMs atomic.Int64
			agg, snap, maint := unsentAggregator(b, &nowMs, quiet)
			for _, bt := range batches {
				nowMs.Store(bt.now.UnixMilli())
				if _, err := agg.Process(context.Background(), bt.ev.Records); err != nil {
					b.Fatal(err)
				}
			}
			snapWrites, maintWrites = snap.writes(), maint.writes()
		}
		ours := float64(snapWrites+maintWrites) / float64(s.records) * 1000
		upstream := float64(s.upstream) / float64(s.records) * 1000
		b.ReportMetric(float64(s.records)/float64(len(batches)), "records/invocation")
		b.ReportMetric(ours, "writes/1k-records")
		b.ReportMetric(upstream, "upstream-writes/1k-records")
		b.ReportMetric(upstream/ours, "ratio")
		b.ReportMetric(benchGoalRatio, "goal-ratio")
	})
}

// replayResult is what one replay took and wrote.
type replayResult struct {
	lat                     []time.Duration // Process time per batch
	snapWrites, maintWrites int64
	bytes, mallocs          uint64 // allocated inside Process
}

// allocMeter measures the heap bytes and allocations between start and
// stop, of every goroutine.
type allocMeter struct {
	bytes, mallocs uint64
	before         runtime.MemStats
}

func (m *allocMeter) start() { runtime.ReadMemStats(&m.before) }

func (m *allocMeter) stop() {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	m.bytes += after.TotalAlloc - m.before.TotalAlloc
	m.mallocs += after.Mallocs - m.before.Mallocs
}

// replay hands batches, with their clock readings, to a new aggregator on a
// fresh table; the benchmark timer runs only inside Process (call it with the
// timer stopped). Any error or reported record fails the benchmark, and so
// does a read, since only writes are counted.
func replay(b *testing.B, batches []benchBatch) replayResult {
	b.Helper()
	ctx := context.Background()
	table, db := replayTable(b)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil)) // formatted like the Lambda's, then dropped
	var nowMs atomic.Int64
	clock := func() time.Time { return time.UnixMilli(nowMs.Load()).UTC() }
	snap := &writeCounter{db: benchkit.Metered(db, &benchkit.Meter{})}
	maint := &writeCounter{db: benchkit.Metered(db, &benchkit.Meter{})}
	agg, err := aggregator.New(snap, aggregator.Config{TableName: table, Windows: benchWindows}, aggregator.Options{
		Clock:      clock,
		Logger:     quiet,
		Metrics:    aggregator.WriterSink(io.Discard),
		Maintainer: maintenance.New(maint, table, maintenance.Options{Clock: clock, Logger: quiet}),
	})
	if err != nil {
		b.Fatal(err)
	}
	var out replayResult
	for _, bt := range batches {
		nowMs.Store(bt.now.UnixMilli())
		var m allocMeter
		m.start()
		b.StartTimer()
		t0 := time.Now()
		res, err := agg.Process(ctx, bt.ev.Records)
		d := time.Since(t0)
		b.StopTimer()
		m.stop()
		out.bytes, out.mallocs = out.bytes+m.bytes, out.mallocs+m.mallocs
		if err != nil {
			b.Fatalf("Process: %v", err)
		}
		if res.RedeliverFrom != "" {
			b.Fatalf("Process reported %v", res.RedeliverFrom)
		}
		out.lat = append(out.lat, d)
	}
	if r := snap.reads.Load() + maint.reads.Load(); r > 0 {
		b.Fatalf("the aggregator made %d reads; the benchmark counts only writes", r)
	}
	out.snapWrites, out.maintWrites = snap.writes(), maint.writes()
	return out
}

// windowBatches cuts the stream's records, in stream order, into the
// batches the mapping's batching window would make at the sample's own rate:
// a batch closes when it holds benchBatchSize records or when the next
// record is window or more after its first. Each batch is handled one
// second after its last record.
func windowBatches(s *benchStream, window time.Duration) []benchBatch {
	var out []benchBatch
	var cur []events.DynamoDBEventRecord
	var first time.Time
	flush := func() {
		if len(cur) > 0 {
			last := cur[len(cur)-1].Change.ApproximateCreationDateTime.Time
			out = append(out, benchBatch{ev: events.DynamoDBEvent{Records: cur}, now: last.Add(time.Second)})
			cur = nil
		}
	}
	for _, bt := range s.batches {
		for _, r := range bt.ev.Records {
			at := r.Change.ApproximateCreationDateTime.Time
			if len(cur) == benchBatchSize || (len(cur) > 0 && at.Sub(first) >= window) {
				flush()
			}
			if len(cur) == 0 {
				first = at
			}
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// generateStream drives the traffic on a fresh table with the aggregator
// consuming the stream live, and returns the delivered batches.
func generateStream(b *testing.B) (*benchStream, error) {
	ctx := context.Background()
	tbl, stop, err := dedicatedTable(ctx, ddbtest.TableName(b.Name()))
	if err != nil {
		return nil, err
	}
	defer stop()
	var clockMs atomic.Int64
	clockMs.Store(benchStart.UnixMilli())
	clock := func() time.Time { return time.UnixMilli(clockMs.Load()).UTC() }
	quiet := slog.New(slog.DiscardHandler)
	log := &stateWriteLog{now: clockMs.Load, pending: map[string][]int64{}}

	lim, err := limiter.New(loggingDB{DB: tbl.DB, log: log}, tbl.Name, benchNS, limiter.Options{
		Clock: clock, Rand: func(int) int { return 0 }, Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	if err := lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, benchNS, benchResource,
		[]limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 100_000)}); err != nil {
		return nil, err
	}

	// The live snapshot writes are counted but not sent: they touch only
	// #USAGE items, which neither the limiter nor the mapping's filter sees,
	// and sending them would make the stream no different, only slower.
	snap := &writeCounter{db: unsentDB{}}
	maint := &writeCounter{db: benchkit.Metered(loggingDB{DB: tbl.DB, log: log}, &benchkit.Meter{})}
	agg, err := aggregator.New(snap, aggregator.Config{TableName: tbl.Name, Windows: benchWindows}, aggregator.Options{
		Clock: clock, Logger: quiet,
		Maintainer: maintenance.New(maint, tbl.Name, maintenance.Options{Clock: clock, Logger: quiet}),
	})
	if err != nil {
		return nil, err
	}

	s := &benchStream{}
	var handleErr error
	stamps := map[string]int64{} // sequence number → fake ms, so a redelivery is stamped alike
	poller, err := streampoll.New(tbl.Streams, tbl.StreamARN, streampoll.Options{
		BatchSize: benchBatchSize,
		Filter:    mappingFilter,
		Logger:    quiet,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			recs := make([]events.DynamoDBEventRecord, len(ev.Records))
			for i, r := range ev.Records {
				recs[i] = r
				if r.EventName == string(events.DynamoDBOperationTypeRemove) {
					continue
				}
				ms, ok := stamps[r.Change.SequenceNumber]
				if !ok {
					var perr error
					if ms, perr = log.pop(r.Change.Keys["PK"].String()); perr != nil {
						handleErr = perr
						return events.DynamoDBEventResponse{}, perr
					}
					stamps[r.Change.SequenceNumber] = ms
				}
				recs[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Unix(ms/1000, 0).UTC()}
			}
			out := events.DynamoDBEvent{Records: recs}
			res, err := agg.Process(ctx, recs)
			if err == nil && res.RedeliverFrom != "" {
				err = fmt.Errorf("the live aggregator reported %v", res.RedeliverFrom)
			}
			if err != nil {
				handleErr = err
				return events.DynamoDBEventResponse{}, err
			}
			s.batches = append(s.batches, benchBatch{ev: out, now: clock()})
			return events.DynamoDBEventResponse{}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	drain := func() error {
		st, err := poller.DrainOnce(ctx)
		switch {
		case handleErr != nil:
			return handleErr
		case err != nil:
			return err
		case st.Dropped > 0 || st.Redeliveries > 0:
			return fmt.Errorf("the poller redelivered %d and dropped %d records", st.Redeliveries, st.Dropped)
		}
		return nil
	}

	// The traffic: a fixed seed, so every run makes the same stream.
	rng := rand.New(rand.NewPCG(20261130, 12))
	weights := make([]int, benchKeys)
	total := 0
	for i := range weights {
		weights[i] = 1
		if i < benchHotKeys {
			weights[i] = benchHotWeight
		}
		total += weights[i]
	}
	acquires := benchAcquires
	if testing.Short() {
		acquires = benchAcquires / 10 // -short (make test): the benchmark runs, its figures mean nothing
	}
	step := benchSpan / time.Duration(acquires)
	for i := range acquires {
		at := benchStart.Add(time.Duration(i)*step + time.Duration(rng.Int64N(int64(step))))
		clockMs.Store(at.UnixMilli())
		k, w := 0, rng.IntN(total)
		for w >= weights[k] {
			w -= weights[k]
			k++
		}
		key := fmt.Sprintf("api-key-%02d", k)
		if _, err := lim.Acquire(ctx, key, benchResource, limiter.Consume{"rpm": 1, "tpm": 100 + rng.Int64N(1900)}); err != nil {
			return nil, fmt.Errorf("acquire %d (%s): %w", i, key, err)
		}
		if (i+1)%benchDrainEvery == 0 || i == acquires-1 {
			if err := drain(); err != nil {
				return nil, err
			}
		}
	}
	// The last drain's maintenance writes are records too; deliver them.
	if err := drain(); err != nil {
		return nil, err
	}
	if left := log.left(); left > 0 {
		return nil, fmt.Errorf("%d writes to #STATE items never reached the stream", left)
	}

	for _, bt := range s.batches {
		s.records += len(bt.ev.Records)
		for _, r := range bt.ev.Records {
			s.upstream += upstreamWrites(r, len(benchWindows))
		}
	}
	s.liveSnapshotWrites, s.liveMaintWrites = snap.writes(), maint.writes()
	return s, nil
}

// mappingFilter is the event source mapping's filter (docs/design.md §6): bucket
// INSERTs and MODIFYs, and REMOVEs of audit events.
func mappingFilter(r events.DynamoDBEventRecord) bool {
	switch r.EventName {
	case string(events.DynamoDBOperationTypeInsert), string(events.DynamoDBOperationTypeModify):
		sk, ok := r.Change.NewImage["SK"]
		return ok && sk.DataType() == events.DataTypeString && sk.String() == schema.SKState
	case string(events.DynamoDBOperationTypeRemove):
		sk, ok := r.Change.OldImage["SK"]
		return ok && sk.DataType() == events.DataTypeString && strings.HasPrefix(sk.String(), "#AUDIT#")
	}
	return false
}

// upstreamWrites is what upstream's aggregator spends on one record: one
// UpdateItem per window for every limit other than wcu whose b_{n}_tc in
// NewImage differs from OldImage (absent: 0). INSERTs are counted too,
// though upstream's filter drops them: they are the 50 first acquires here.
func upstreamWrites(r events.DynamoDBEventRecord, windows int) int {
	if r.EventName == string(events.DynamoDBOperationTypeRemove) {
		return 0
	}
	if _, ok := r.Change.NewImage["entity_id"]; !ok {
		return 0
	}
	n := 0
	for name, v := range r.Change.NewImage {
		limitName, ok := strings.CutPrefix(name, "b_")
		if !ok {
			continue
		}
		if limitName, ok = strings.CutSuffix(limitName, "_tc"); !ok || limitName == "wcu" || v.DataType() != events.DataTypeNumber {
			continue
		}
		old := "0"
		if o, ok := r.Change.OldImage[name]; ok && o.DataType() == events.DataTypeNumber {
			old = o.Number()
		}
		if delta(v.Number(), old) != 0 {
			n += windows
		}
	}
	return n
}

func delta(newN, oldN string) int64 {
	a, errA := strconv.ParseInt(newN, 10, 64)
	o, errO := strconv.ParseInt(oldN, 10, 64)
	if errA != nil || errO != nil {
		panic(fmt.Sprintf("tc %q / %q", newN, oldN))
	}
	return a - o
}

// writeCounter counts the aggregator's or the maintainer's calls on the way
// to a metering decorator: writes (UpdateItem, PutItem, TransactWriteItems)
// and reads (GetItem), each attempt once, whatever its outcome, as DynamoDB
// bills a write whose condition fails.
type writeCounter struct {
	db          maintenance.DB // a *benchkit.MeteredDB, or unsentDB
	reads       atomic.Int64
	updates     atomic.Int64
	puts, trans atomic.Int64
}

func (c *writeCounter) writes() int64 {
	return c.updates.Load() + c.puts.Load() + c.trans.Load()
}

func (c *writeCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.db.UpdateItem(ctx, in, o...)
}

func (c *writeCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	return c.db.PutItem(ctx, in, o...)
}

func (c *writeCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.trans.Add(1)
	return c.db.TransactWriteItems(ctx, in, o...)
}

func (c *writeCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads.Add(1)
	return c.db.GetItem(ctx, in, o...)
}

// unsentDB answers every call with success and sends nothing.
// unsentAggregator is an aggregator and maintainer on DBs that count
// writes without sending them, on a clock that reads *nowMs.
func unsentAggregator(b *testing.B, nowMs *atomic.Int64, log *slog.Logger) (*aggregator.Aggregator, *writeCounter, *writeCounter) {
	b.Helper()
	clock := func() time.Time { return time.UnixMilli(nowMs.Load()).UTC() }
	snap, maint := &writeCounter{db: unsentDB{}}, &writeCounter{db: unsentDB{}}
	agg, err := aggregator.New(snap, aggregator.Config{TableName: "unsent", Windows: benchWindows}, aggregator.Options{
		Clock: clock, Logger: log, Metrics: aggregator.WriterSink(io.Discard),
		Maintainer: maintenance.New(maint, "unsent", maintenance.Options{Clock: clock, Logger: log}),
	})
	if err != nil {
		b.Fatal(err)
	}
	return agg, snap, maint
}

type unsentDB struct{}

func (unsentDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (unsentDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

func (unsentDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (unsentDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// stateWriteLog keeps, per bucket item, the fake times of the successful
// writes to it that the stream has not delivered yet: the stream keeps the
// writes of one item in order, so the next record of an item is its oldest
// pending write.
type stateWriteLog struct {
	mu      sync.Mutex
	now     func() int64
	pending map[string][]int64 // PK → fake ms
}

func (l *stateWriteLog) note(key map[string]types.AttributeValue) {
	pk, okP := key["PK"].(*types.AttributeValueMemberS)
	sk, okS := key["SK"].(*types.AttributeValueMemberS)
	if !okP || !okS || sk.Value != schema.SKState {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[pk.Value] = append(l.pending[pk.Value], l.now())
}

func (l *stateWriteLog) pop(pk string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.pending[pk]
	if len(q) == 0 {
		return 0, fmt.Errorf("a stream record of %s that no logged write made", pk)
	}
	l.pending[pk] = q[1:]
	return q[0], nil
}

func (l *stateWriteLog) left() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.pending {
		n += len(q)
	}
	return n
}

// loggingDB notes every successful write to a #STATE item in log.
type loggingDB struct {
	limiter.DB
	log *stateWriteLog
}

func (d loggingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.DB.UpdateItem(ctx, in, o...)
	if err == nil {
		d.log.note(in.Key)
	}
	return out, err
}

func (d loggingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.DB.PutItem(ctx, in, o...)
	if err == nil {
		d.log.note(in.Item)
	}
	return out, err
}

func (d loggingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DB.TransactWriteItems(ctx, in, o...)
	if err == nil {
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				d.log.note(it.Put.Item)
			case it.Update != nil:
				d.log.note(it.Update.Key)
			}
		}
	}
	return out, err
}

func (d loggingDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := d.DB.BatchWriteItem(ctx, in, o...)
	if err == nil {
		for _, reqs := range in.RequestItems {
			for _, r := range reqs {
				if r.PutRequest != nil {
					d.log.note(r.PutRequest.Item)
				}
			}
		}
		if len(out.UnprocessedItems) > 0 {
			return out, fmt.Errorf("benchmark: BatchWriteItem left items unprocessed")
		}
	}
	return out, err
}

// dedicatedTable creates a table on an emulator of its own, stopped by
// stop, so that the stream made there cannot slow down the measured
// replays (see the top of the file).
func dedicatedTable(ctx context.Context, name string) (_ *ddbtest.Table, stop func(), err error) {
	dir, err := ddblocal.InstallDefault(ctx)
	if err != nil {
		return nil, nil, err
	}
	srv, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: dir})
	if err != nil {
		return nil, nil, err
	}
	stop = func() { _ = srv.Stop() }
	t := &ddbtest.Table{
		Name:     name,
		Endpoint: srv.Endpoint,
		Def:      schema.Definition(),
		DB:       ddblocal.DynamoDB(srv.Endpoint),
		Streams:  ddblocal.Streams(srv.Endpoint),
	}
	desc, err := t.Def.CreateTable(ctx, t.DB, name, time.Minute)
	if err != nil {
		stop()
		return nil, nil, err
	}
	t.StreamARN = aws.ToString(desc.LatestStreamArn)
	return t, stop, nil
}

// replayTable creates a fresh table for one replay on the test binary's
// emulator, deleted when the benchmark ends. It has the stack's layout but
// no stream: nothing reads it, and stream records would slow down every
// later replay (see the top of the file).
func replayTable(b *testing.B) (name string, db *dynamodb.Client) {
	b.Helper()
	ctx := context.Background()
	ep := ddbtest.Endpoint(b)
	name, db = ddbtest.TableName(b.Name()), ddblocal.DynamoDB(ep)
	in := schema.Definition().CreateTableInput(name)
	in.StreamSpecification = nil
	if _, err := db.CreateTable(ctx, in); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = 50*time.Millisecond, time.Second })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		b.Fatal(err)
	}
	return name, db
}
