package aggregator_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

const ns = "aGgReGaToR0"

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sink keeps every EMF document.
type sink struct {
	mu   sync.Mutex
	docs [][]byte
}

func (s *sink) Emit(doc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs = append(s.docs, bytes.Clone(doc))
}

func (s *sink) all() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.docs...)
}

// env is one test's table, fault proxy, limiters and aggregator. The
// limiters write straight to DynamoDB Local; the aggregator goes through the
// proxy with SDK retries off, so every UpdateItem the proxy counts is a
// snapshot write and every injected fault reaches the handler.
type env struct {
	t     *testing.T
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	clk   *clock.Manual
	fast  *limiter.Limiter // speculative: slow-path create, then fast path
	slow  *limiter.Limiter // speculative writes off: every acquire is a slow pass
	agg   *aggregator.Aggregator
	logs  *syncBuffer
	sink  *sink

	poller  *streampoll.Poller
	mu      sync.Mutex
	handler streampoll.Handler
	batches [][]events.DynamoDBEventRecord
}

// start is the fake clock's start: a Sunday noon, well inside one hour.
var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, cfg aggregator.Config, o aggregator.Options) *env {
	t.Helper()
	return newEnvOver(t, cfg, o, false)
}

// newEnvOver is newEnv; with direct, the aggregator's client is the
// Lambda's: a condwrite.DB over the SDK client, which sends the snapshot
// writes itself and any write whose answer is not a 200 again through the
// SDK client (so a fault must fire twice to reach the handler).
func newEnvOver(t *testing.T, cfg aggregator.Config, o aggregator.Options, direct bool) *env {
	t.Helper()
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	p := faultproxy.Start(t, tbl.Endpoint)
	e := &env{t: t, tbl: tbl, proxy: p, clk: clock.NewManual(start), logs: &syncBuffer{}, sink: &sink{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	e.fast, err = limiter.New(tbl.DB, tbl.Name, ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.slow, err = limiter.New(tbl.DB, tbl.Name, ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, Logger: quiet, DisableSpeculativeWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TableName = tbl.Name
	if o.Clock == nil {
		o.Clock = e.clk.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if o.Metrics == nil {
		o.Metrics = e.sink
	}
	var aggDB aggregator.DB = p.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if direct {
		db := condwrite.New(context.Background(), p.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }))
		if ok, why := db.Direct(); !ok {
			t.Fatalf("condwrite sends nothing itself: %s", why)
		}
		aggDB = db
	}
	if e.agg, err = aggregator.New(aggDB, cfg, o); err != nil {
		t.Fatal(err)
	}
	e.handler = lambdaHandler(e.agg)
	e.poller, err = streampoll.New(tbl.Streams, tbl.StreamARN, streampoll.Options{
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			e.mu.Lock()
			e.batches = append(e.batches, ev.Records)
			h := e.handler
			e.mu.Unlock()
			return h(ctx, ev)
		},
		BatchSize:  7,
		MaxRetries: 5,
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// allWindows configures hourly, daily and monthly snapshots.
var allWindows = aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}}

// drain delivers every new stream record through the poller and returns the
// records delivered for the first time, in stream order.
func (e *env) drain() []events.DynamoDBEventRecord {
	e.t.Helper()
	e.mu.Lock()
	before := len(e.batches)
	e.mu.Unlock()
	st, err := e.poller.DrainOnce(context.Background())
	if err != nil {
		e.t.Fatalf("DrainOnce: %v", err)
	}
	if st.Dropped > 0 {
		e.t.Fatalf("the poller dropped %d records", st.Dropped)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []events.DynamoDBEventRecord
	seen := map[string]bool{}
	for _, b := range e.batches[before:] {
		for _, r := range b {
			if !seen[r.Change.SequenceNumber] {
				seen[r.Change.SequenceNumber] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// capture delivers every new stream record to nobody (success) and returns
// them: stream records to hand to Process by hand.
func (e *env) capture() []events.DynamoDBEventRecord {
	e.t.Helper()
	e.mu.Lock()
	e.handler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.handler = lambdaHandler(e.agg)
		e.mu.Unlock()
	}()
	return e.drain()
}

// handle calls Process on recs and returns the reported identifiers.
func (e *env) handle(recs []events.DynamoDBEventRecord) []string {
	e.t.Helper()
	return handleWith(e.t, e.agg, context.Background(), recs)
}

func handleWith(t *testing.T, agg *aggregator.Aggregator, ctx context.Context, recs []events.DynamoDBEventRecord) []string {
	t.Helper()
	res, err := agg.Process(ctx, recs)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	var ids []string
	if res.RedeliverFrom != "" {
		ids = append(ids, res.RedeliverFrom)
	}
	return ids
}

// lambdaHandler is agg behind a handler of the Lambda's shape, for the
// poller that stands in for the event source mapping: the record to
// redeliver from is the one batch item failure, as
// functions/aggregator/handler reports it.
func lambdaHandler(agg *aggregator.Aggregator) streampoll.Handler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		res, err := agg.Process(ctx, ev.Records)
		var resp events.DynamoDBEventResponse
		if res.RedeliverFrom != "" {
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: res.RedeliverFrom}}
		}
		return resp, err
	}
}

// mustHandle calls Process and fails the test on any reported record.
func (e *env) mustHandle(recs []events.DynamoDBEventRecord) {
	e.t.Helper()
	if ids := e.handle(recs); len(ids) > 0 {
		e.t.Fatalf("unexpected batch item failures %v", ids)
	}
}

func (e *env) setLimits(resource string, limits ...limit.Limit) {
	e.t.Helper()
	if err := e.fast.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(context.Background(), ns, resource, limits); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) acquire(l *limiter.Limiter, entity, resource string, c limiter.Consume) {
	e.t.Helper()
	if _, err := l.Acquire(context.Background(), entity, resource, c); err != nil {
		e.t.Fatalf("acquire %s/%s: %v", entity, resource, err)
	}
}

// flatItem is an item as comparable strings: "S:v", "N:v".
type flatItem map[string]string

func flatten(item map[string]types.AttributeValue) flatItem {
	out := flatItem{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			out[k] = "N:" + v.Value
		default:
			out[k] = fmt.Sprintf("%T:%v", v, v)
		}
	}
	return out
}

// snapshots returns every usage snapshot item of the table by "PK|SK".
func (e *env) snapshots() map[string]flatItem {
	e.t.Helper()
	return scanSnapshots(e.t, e.tbl)
}

func scanSnapshots(t *testing.T, tbl *ddbtest.Table) map[string]flatItem {
	t.Helper()
	out := map[string]flatItem{}
	var startKey map[string]types.AttributeValue
	for {
		page, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{
			TableName:                 aws.String(tbl.Name),
			ConsistentRead:            aws.Bool(true),
			FilterExpression:          aws.String("begins_with(SK, :u)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: schema.SKUsagePrefix}},
			ExclusiveStartKey:         startKey,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			f := flatten(it)
			out[strings.TrimPrefix(f["PK"], "S:")+"|"+strings.TrimPrefix(f["SK"], "S:")] = f
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		startKey = page.LastEvaluatedKey
	}
}

// reset deletes every usage snapshot.
func (e *env) reset() {
	e.t.Helper()
	for k := range e.snapshots() {
		pk, sk, _ := strings.Cut(k, "|")
		_, err := e.tbl.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
			TableName: aws.String(e.tbl.Name),
			Key:       schema.Key{PK: pk, SK: sk}.AttributeValues(),
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// equalSnapshots fails the test with a readable diff unless got == want.
func equalSnapshots(t *testing.T, what string, got, want map[string]flatItem) {
	t.Helper()
	if diff := diffSnapshots(got, want); diff != "" {
		t.Fatalf("%s: snapshots differ:\n%s", what, diff)
	}
}

func diffSnapshots(got, want map[string]flatItem) string {
	var b strings.Builder
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		g, okG := got[k]
		w, okW := want[k]
		switch {
		case !okG:
			fmt.Fprintf(&b, "  missing item %s\n", k)
		case !okW:
			fmt.Fprintf(&b, "  extra item %s: %v\n", k, g)
		default:
			attrs := map[string]bool{}
			for a := range g {
				attrs[a] = true
			}
			for a := range w {
				attrs[a] = true
			}
			names := make([]string, 0, len(attrs))
			for a := range attrs {
				names = append(names, a)
			}
			sort.Strings(names)
			for _, a := range names {
				if g[a] != w[a] {
					fmt.Fprintf(&b, "  %s %s: got %q, want %q\n", k, a, g[a], w[a])
				}
			}
		}
	}
	return b.String()
}

// isBucket reports whether a stream record is a bucket INSERT or MODIFY.
func isBucket(r events.DynamoDBEventRecord) bool {
	if r.EventName == "REMOVE" {
		return false
	}
	sk, ok := r.Change.Keys["SK"]
	return ok && sk.DataType() == events.DataTypeString && sk.String() == schema.SKState
}

// entityOf returns the entity of a bucket record.
func entityOf(r events.DynamoDBEventRecord) string {
	id, err := schema.ParseBucketPK(r.Change.Keys["PK"].String())
	if err != nil {
		return ""
	}
	return id.Entity
}

func pad(seq string) string {
	p, err := schema.PadSequenceNumber(seq)
	if err != nil {
		panic(err)
	}
	return p
}

// indexOf returns the position of the record with sequence number seq.
func indexOf(t *testing.T, recs []events.DynamoDBEventRecord, seq string) int {
	t.Helper()
	for i, r := range recs {
		if r.Change.SequenceNumber == seq {
			return i
		}
	}
	t.Fatalf("sequence number %s is not in the batch", seq)
	return -1
}

// restamp returns copies of recs with ApproximateCreationDateTime set by at.
func restamp(recs []events.DynamoDBEventRecord, at func(i int) time.Time) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, len(recs))
	for i, r := range recs {
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: at(i)}
		out[i] = r
	}
	return out
}

func updateItems(p *faultproxy.Proxy) int { return p.StatsFor("UpdateItem").Forwarded }
