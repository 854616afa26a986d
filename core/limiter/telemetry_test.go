package limiter_test

// The limiter's metrics and spans (docs/design.md §18) read back through
// the SDK's manual reader and span recorder, on DynamoDB Local.

import (
	"context"
	"errors"
	"net"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// observed is a meter provider read by a manual reader and a tracer
// provider whose ended spans are recorded.
type observed struct {
	t      *testing.T
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
	spans  *tracetest.SpanRecorder
}

func newObserved(t *testing.T) *observed {
	t.Helper()
	o := &observed{t: t, reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	o.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	o.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	t.Cleanup(func() {
		_ = o.mp.Shutdown(context.Background())
		_ = o.tp.Shutdown(context.Background())
	})
	return o
}

// options returns o with the observed providers.
func (ob *observed) options(o limiter.Options) limiter.Options {
	o.MeterProvider, o.TracerProvider = ob.mp, ob.tp
	return o
}

// metric collects and returns the metric called name (nil: none).
func (ob *observed) metric(name string) *metricdata.Metrics {
	ob.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := ob.reader.Collect(context.Background(), &rm); err != nil {
		ob.t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != limiter.InstrumentationScope {
			continue
		}
		for i := range sm.Metrics {
			if sm.Metrics[i].Name == name {
				return &sm.Metrics[i]
			}
		}
	}
	return nil
}

// has reports whether set carries every one of want.
func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// sum is the total of the int64 sum name over its data points that carry
// every attribute of want.
func (ob *observed) sum(name string, want ...attribute.KeyValue) int64 {
	ob.t.Helper()
	m := ob.metric(name)
	if m == nil {
		return 0
	}
	data, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		ob.t.Fatalf("%s is a %T, want an int64 sum", name, m.Data)
	}
	var n int64
	for _, dp := range data.DataPoints {
		if has(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// count is how many values the histogram name holds over its data points
// that carry every attribute of want.
func (ob *observed) count(name string, want ...attribute.KeyValue) uint64 {
	ob.t.Helper()
	m := ob.metric(name)
	if m == nil {
		return 0
	}
	data, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		ob.t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
	}
	var n uint64
	for _, dp := range data.DataPoints {
		if has(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// results is the acquisitions counted per result.
func (ob *observed) results() map[string]int64 {
	ob.t.Helper()
	out := map[string]int64{}
	for _, r := range []string{"admitted", "rejected", "rejected_locally", "disabled", "unavailable", "error"} {
		out[r] = ob.sum("zae_limiter.acquisitions", limiter.AttrResult.String(r))
	}
	return out
}

// calls is every DynamoDB call counted.
func (ob *observed) calls() int64 { return ob.sum("zae_limiter.dynamodb.calls") }

// lastSpan is the last ended span called name.
func (ob *observed) lastSpan(name string) sdktrace.ReadOnlySpan {
	ob.t.Helper()
	ended := ob.spans.Ended()
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i].Name() == name {
			return ended[i]
		}
	}
	ob.t.Fatalf("no span %s ended", name)
	return nil
}

// children are the ended spans whose parent is parent.
func (ob *observed) children(parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range ob.spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// closedEndpoint is a loopback address nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// TestTelemetryCountsEachResultOnce: every answer of Acquire is counted
// once under its result — admitted, rejected by DynamoDB, rejected
// locally (with no DynamoDB call counted), disabled, unavailable (a
// closed endpoint, blocked and allowed), error (bad input) — and nothing
// else moves.
func TestTelemetryCountsEachResultOnce(t *testing.T) {
	ob := newObserved(t)
	e := newEnv(t, ob.options(limiter.Options{}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 2))
	ctx := context.Background()
	step := func(what, want string, lim *limiter.Limiter, entity string, consume limiter.Consume, opts ...limiter.AcquireOption) (*limiter.Lease, error) {
		t.Helper()
		before, calls := ob.results(), ob.calls()
		lease, err := lim.Acquire(ctx, entity, "api", consume, opts...)
		after := ob.results()
		for r, n := range after {
			d := n - before[r]
			if r == want && d != 1 || r != want && d != 0 {
				t.Fatalf("%s: %s counted %d more (err %v), want %s counted once and nothing else", what, r, d, err, want)
			}
		}
		if want == "rejected_locally" {
			if n := ob.calls() - calls; n != 0 {
				t.Fatalf("%s: %d DynamoDB calls counted, want none", what, n)
			}
		} else if want != "error" && ob.calls() == calls {
			t.Fatalf("%s: no DynamoDB call counted", what)
		}
		return lease, err
	}
	one := limiter.Consume{"rpm": 1}
	if _, err := step("create", "admitted", e.lim, "u", one); err != nil {
		t.Fatal(err)
	}
	if _, err := step("fast path", "admitted", e.lim, "u", one); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second) // the cached state is past the cache's TTL: DynamoDB decides
	if _, err := step("DynamoDB's 429", "rejected", e.lim, "u", one); !limiter.IsRateLimitError(err) {
		t.Fatalf("err = %v, want a 429", err)
	}
	before := e.totalCalls()
	if _, err := step("the cache's 429", "rejected_locally", e.lim, "u", one); !limiter.IsRateLimitError(err) {
		t.Fatalf("err = %v, want a 429", err)
	}
	if n := e.totalCalls() - before; n != 0 {
		t.Fatalf("a local rejection reached DynamoDB %d times", n)
	}

	if _, err := e.lim.Acquire(ctx, "d", "api", one); err != nil {
		t.Fatal(err)
	}
	_, err := e.tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.BucketKey(ns, "d", "api", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET disabled = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var dis *limiter.ResourceDisabled
	if _, err := step("disabled", "disabled", e.lim, "d", one); !errors.As(err, &dis) {
		t.Fatalf("err = %v, want ResourceDisabled", err)
	}

	closed := ddblocal.DynamoDB(closedEndpoint(t), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	down, err := limiter.New(closed, e.tbl.Name, ns, ob.options(limiter.Options{Clock: e.clk.Now}))
	if err != nil {
		t.Fatal(err)
	}
	failedCalls := ob.sum("zae_limiter.dynamodb.calls", limiter.AttrOutcome.String("error"))
	if _, err := step("closed endpoint, block", "unavailable", down, "u", one); !limiter.IsInfrastructureError(err) {
		t.Fatalf("err = %v, want RateLimiterUnavailable", err)
	}
	if ob.sum("zae_limiter.dynamodb.calls", limiter.AttrOutcome.String("error")) == failedCalls {
		t.Fatal("the failed calls were not counted as errors")
	}
	lease, err := step("closed endpoint, allow", "unavailable", down, "u", one, limiter.WithOnUnavailable(config.OnUnavailableAllow))
	if err != nil || !lease.Degraded() {
		t.Fatalf("lease %v, err %v; want a degraded lease", lease, err)
	}
	if _, err := step("bad input", "error", e.lim, "u", limiter.Consume{}); !limiter.IsValidationError(err) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	if got := ob.sum("zae_limiter.acquisitions", limiter.AttrResource.String("api")); got != 9 {
		t.Fatalf("%d acquisitions on resource api, want 9", got)
	}
}

// TestTelemetryPathOfEachAcquire: acquires steered down each path are
// timed under it and their spans name it: the create (slow), the next
// acquire (fast), one past vu from the held image (refill_pass), a
// cascading child once the pair is known (cascade), a repeat 429 (local).
func TestTelemetryPathOfEachAcquire(t *testing.T) {
	ob := newObserved(t)
	e := cascadeEnvWith(t, 10, 100, ob.options(limiter.Options{}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	check := func(what, entity string, tokens int64, wantPath, wantResult string, wantCalls map[string]int) {
		t.Helper()
		e.proxy.ResetStats()
		before := ob.count("zae_limiter.acquire.duration", limiter.AttrPath.String(wantPath), limiter.AttrResult.String(wantResult))
		_, err := e.lim.Acquire(ctx, entity, "api", limiter.Consume{"rpm": tokens})
		if err != nil && !limiter.IsRateLimitError(err) {
			t.Fatalf("%s: %v", what, err)
		}
		if n := ob.count("zae_limiter.acquire.duration", limiter.AttrPath.String(wantPath), limiter.AttrResult.String(wantResult)) - before; n != 1 {
			t.Fatalf("%s: %d durations under path %s and result %s, want 1", what, n, wantPath, wantResult)
		}
		span := ob.lastSpan("zae_limiter.acquire")
		if v, _ := spanAttr(span, limiter.AttrPath); v.AsString() != wantPath {
			t.Fatalf("%s: the span says path %q, want %q", what, v.AsString(), wantPath)
		}
		if v, _ := spanAttr(span, limiter.AttrResult); v.AsString() != wantResult {
			t.Fatalf("%s: the span says result %q, want %q", what, v.AsString(), wantResult)
		}
		for op, n := range wantCalls {
			if got := e.calls(op); got != n {
				t.Fatalf("%s: %d %s calls, want %d (the acquire took another path)", what, got, op, n)
			}
		}
	}
	check("a new bucket", "solo", 1, "slow", "admitted", map[string]int{"PutItem": 1})
	check("the next acquire", "solo", 1, "fast", "admitted", map[string]int{"UpdateItem": 1, "BatchGetItem": 0})
	e.clk.Advance(7 * time.Second) // vu passed: a token has dripped back since the create
	check("past vu, the image held", "solo", 1, "refill_pass", "admitted", map[string]int{"UpdateItem": 1, "BatchGetItem": 0})
	e.clk.Advance(time.Second) // the cached state is past the cache's TTL: DynamoDB decides
	check("short, refill would not help", "solo", 9, "fast", "rejected", map[string]int{"UpdateItem": 1, "BatchGetItem": 0})
	check("short again within the TTL", "solo", 9, "local", "rejected_locally", map[string]int{"UpdateItem": 0})
	check("a cascading child, cold", "key", 1, "slow", "admitted", map[string]int{"TransactWriteItems": 1})
	check("a cascading child, warm", "key", 1, "cascade", "admitted", map[string]int{"UpdateItem": 2, "BatchGetItem": 0})
}

// TestTelemetrySpansNest: an Acquire's span is a child of the caller's and
// the parent of every DynamoDB call it makes, each a client span with the
// DynamoDB semantic conventions; a failed condition leaves the call's
// status unset, a failure marks the call and the acquire as errors; no
// span or data point carries the entity id unless asked.
func TestTelemetrySpansNest(t *testing.T) {
	ob := newObserved(t)
	e := newEnv(t, ob.options(limiter.Options{}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx, root := ob.tp.Tracer("test").Start(context.Background(), "request")
	if _, err := e.lim.Acquire(ctx, "secret-key", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	root.End()
	acq := ob.lastSpan("zae_limiter.acquire")
	if acq.Parent().SpanID() != root.SpanContext().SpanID() || acq.SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Fatal("the acquire span is not a child of the caller's span")
	}
	calls := ob.children(acq)
	var ops []string
	for _, c := range calls {
		op, _ := spanAttr(c, "db.operation.name")
		ops = append(ops, op.AsString())
		if c.SpanKind() != trace.SpanKindClient || c.Name() != op.AsString()+" "+e.tbl.Name {
			t.Errorf("call span %q of kind %v, want a client span named after its operation and table", c.Name(), c.SpanKind())
		}
		if v, _ := spanAttr(c, "db.system.name"); v.AsString() != "aws.dynamodb" {
			t.Errorf("%s: db.system.name %q", c.Name(), v.AsString())
		}
		if v, _ := spanAttr(c, "aws.dynamodb.table_names"); !slices.Equal(v.AsStringSlice(), []string{e.tbl.Name}) {
			t.Errorf("%s: aws.dynamodb.table_names %v", c.Name(), v.AsStringSlice())
		}
		if c.Status().Code == codes.Error {
			t.Errorf("%s: status error on a creating acquire", c.Name())
		}
	}
	// The create: the fast path's write fails (no item), the slow path
	// reads config and the bucket, and puts the bucket.
	if !slices.Contains(ops, "UpdateItem") || !slices.Contains(ops, "BatchGetItem") || !slices.Contains(ops, "PutItem") {
		t.Fatalf("the acquire's call spans are %v, want the failed UpdateItem, the reads and the PutItem", ops)
	}
	for _, c := range calls {
		if op, _ := spanAttr(c, "db.operation.name"); op.AsString() == "UpdateItem" {
			if v, _ := spanAttr(c, limiter.AttrOutcome); v.AsString() != "conditional_failed" {
				t.Errorf("the failed fast path's outcome is %q", v.AsString())
			}
			if v, _ := spanAttr(c, "error.type"); v.AsString() != "ConditionalCheckFailedException" {
				t.Errorf("the failed fast path's error.type is %q", v.AsString())
			}
		}
	}

	// A failure: the call span and the acquire span are errors, with the
	// error recorded.
	down, err := limiter.New(ddblocal.DynamoDB(closedEndpoint(t), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }),
		e.tbl.Name, ns, ob.options(limiter.Options{Clock: e.clk.Now}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := down.Acquire(context.Background(), "secret-key", "api", limiter.Consume{"rpm": 1}); !limiter.IsInfrastructureError(err) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	acq = ob.lastSpan("zae_limiter.acquire")
	if acq.Status().Code != codes.Error || len(acq.Events()) == 0 {
		t.Fatalf("the failed acquire's span: status %v, %d events; want an error with the error recorded", acq.Status(), len(acq.Events()))
	}
	failedCalls := ob.children(acq)
	if len(failedCalls) == 0 {
		t.Fatal("the failed acquire has no call span")
	}
	for _, c := range failedCalls {
		if c.Status().Code != codes.Error || len(c.Events()) == 0 {
			t.Errorf("failed call %s: status %v, %d events; want an error with the error recorded", c.Name(), c.Status(), len(c.Events()))
		}
		if v, _ := spanAttr(c, limiter.AttrOutcome); v.AsString() != "error" {
			t.Errorf("failed call %s: outcome %q", c.Name(), v.AsString())
		}
	}

	// No entity id anywhere.
	for _, s := range ob.spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == limiter.AttrEntity || kv.Value.AsString() == "secret-key" {
				t.Fatalf("span %s carries the entity id: %v", s.Name(), kv)
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := ob.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, set := range dataPointSets(m) {
				if _, ok := set.Value(limiter.AttrEntity); ok {
					t.Fatalf("metric %s carries the entity id", m.Name)
				}
			}
		}
	}
}

// dataPointSets are the attribute sets of m's data points.
func dataPointSets(m metricdata.Metrics) []attribute.Set {
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	}
	return out
}

// TestTelemetryEntityIDsOptIn: with Options.TelemetryEntityIDs, the
// acquisition count, the lease counts and the spans carry the entity id.
func TestTelemetryEntityIDsOptIn(t *testing.T) {
	ob := newObserved(t)
	e := newEnv(t, ob.options(limiter.Options{TelemetryEntityIDs: true}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	lease, err := e.lim.Acquire(ctx, "key-7", "api", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Adjust("rpm", 1); err != nil {
		t.Fatal(err)
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ent := limiter.AttrEntity.String("key-7")
	for name, got := range map[string]int64{
		"zae_limiter.acquisitions":      ob.sum("zae_limiter.acquisitions", ent, limiter.AttrResult.String("admitted")),
		"zae_limiter.lease.adjustments": ob.sum("zae_limiter.lease.adjustments", ent),
		"zae_limiter.lease.commits":     ob.sum("zae_limiter.lease.commits", ent),
	} {
		if got != 1 {
			t.Errorf("%s under the entity: %d, want 1", name, got)
		}
	}
	for _, name := range []string{"zae_limiter.acquire", "zae_limiter.lease.adjust", "zae_limiter.lease.commit"} {
		if v, ok := spanAttr(ob.lastSpan(name), limiter.AttrEntity); !ok || v.AsString() != "key-7" {
			t.Errorf("span %s: entity %q, want key-7", name, v.AsString())
		}
	}
}

// TestTelemetryLeases: commits, rollbacks and changes are counted by
// resource and outcome; a Commit's span parents its write and links to
// the Acquire's; a change's span is a child of the Acquire's.
func TestTelemetryLeases(t *testing.T) {
	ob := newObserved(t)
	e := newEnv(t, ob.options(limiter.Options{}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 100))
	ctx := context.Background()
	lease, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 5})
	if err != nil {
		t.Fatal(err)
	}
	acq := ob.lastSpan("zae_limiter.acquire")
	if err := lease.Adjust("rpm", 3); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release("rpm", 1); err != nil {
		t.Fatal(err)
	}
	if err := lease.Consume("rpm", 2); err != nil {
		t.Fatal(err)
	}
	if err := lease.Adjust("nope", 1); err == nil {
		t.Fatal("an adjust of a limit the lease lacks succeeded")
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.Commit(ctx); !errors.Is(err, limiter.ErrLeaseExpired) {
		t.Fatalf("a second commit: %v", err)
	}
	other, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	res := limiter.AttrResource.String("api")
	ok, failed := limiter.AttrOutcome.String("ok"), limiter.AttrOutcome.String("error")
	for what, c := range map[string]struct{ got, want int64 }{
		"commits ok":       {ob.sum("zae_limiter.lease.commits", res, ok), 1},
		"commits failed":   {ob.sum("zae_limiter.lease.commits", res, failed), 1},
		"rollbacks ok":     {ob.sum("zae_limiter.lease.rollbacks", res, ok), 1},
		"rollbacks failed": {ob.sum("zae_limiter.lease.rollbacks", res, failed), 0},
		"adjustments":      {ob.sum("zae_limiter.lease.adjustments", res), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", what, c.got, c.want)
		}
	}
	var commit sdktrace.ReadOnlySpan
	for _, s := range ob.spans.Ended() {
		if s.Name() == "zae_limiter.lease.commit" {
			commit = s // the first: the commit that wrote
			break
		}
	}
	if commit == nil {
		t.Fatal("no commit span")
	}
	writes := ob.children(commit)
	if len(writes) != 1 || writes[0].Name() != "UpdateItem "+e.tbl.Name {
		t.Fatalf("the commit's children: %d spans, want its one UpdateItem", len(writes))
	}
	if links := commit.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != acq.SpanContext().SpanID() {
		t.Fatal("the commit span does not link to the acquire span")
	}
	changes := 0
	for _, s := range ob.children(acq) {
		if s.Name() == "zae_limiter.lease.adjust" {
			changes++
		}
	}
	if changes != 4 {
		t.Fatalf("%d change spans under the acquire, want 4 (the failed one included)", changes)
	}
	if rb := ob.lastSpan("zae_limiter.lease.rollback"); len(ob.children(rb)) != 1 {
		t.Fatal("the rollback's write is not its child")
	}
}

// TestTelemetryCallsAndWriteUnits: the fast path's one UpdateItem is one
// call counted ok and one write unit (a bucket within 1 KB, docs/costs.md);
// the create's failed UpdateItem counts as conditional_failed and one unit.
func TestTelemetryCallsAndWriteUnits(t *testing.T) {
	ob := newObserved(t)
	e := newEnv(t, ob.options(limiter.Options{}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	op := func(name string) attribute.KeyValue { return attribute.String("db.operation.name", name) }
	outcome := limiter.AttrOutcome.String
	puts := ob.sum("zae_limiter.dynamodb.write_units", op("PutItem")) // the config writes'
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if n := ob.sum("zae_limiter.dynamodb.calls", op("UpdateItem"), outcome("conditional_failed")); n != 1 {
		t.Fatalf("%d failed UpdateItems counted on the create, want 1", n)
	}
	if n := ob.sum("zae_limiter.dynamodb.write_units", op("UpdateItem")); n != 1 {
		t.Fatalf("the create's failed UpdateItem counted %d write units, want 1", n)
	}
	if n := ob.sum("zae_limiter.dynamodb.write_units", op("PutItem")) - puts; n != 1 {
		t.Fatalf("the create's PutItem counted %d write units, want 1", n)
	}
	calls, units := ob.sum("zae_limiter.dynamodb.calls", op("UpdateItem"), outcome("ok")), ob.sum("zae_limiter.dynamodb.write_units", op("UpdateItem"))
	if _, err := e.lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	if n := ob.sum("zae_limiter.dynamodb.calls", op("UpdateItem"), outcome("ok")) - calls; n != 1 {
		t.Fatalf("the fast path counted %d UpdateItems, want 1", n)
	}
	if n := ob.sum("zae_limiter.dynamodb.write_units", op("UpdateItem")) - units; n != 1 {
		t.Fatalf("the fast path counted %d write units, want 1", n)
	}
	if n := ob.sum("zae_limiter.dynamodb.calls"); int(n) != e.totalCalls() {
		t.Fatalf("%d calls counted, the proxy saw %d", n, e.totalCalls())
	}
}

// TestTelemetryRejectionCache: the rejection cache's entries, hits and
// evictions are observed as Stats reports them, under the limiter's
// namespace and table.
func TestTelemetryRejectionCache(t *testing.T) {
	ob := newObserved(t)
	// One pair per part of the cache: 40 pairs evict at least 8.
	e := newEnv(t, ob.options(limiter.Options{RejectionCacheSize: 1}))
	e.setResourceLimits("api", limit.PerMinute("rpm", 10))
	ctx := context.Background()
	const pairs = 40
	for i := range pairs {
		if _, err := e.lim.Acquire(ctx, "u"+strconv.Itoa(i), "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := e.lim.Acquire(ctx, "u"+strconv.Itoa(pairs-1), "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	st := e.lim.Stats()
	where := []attribute.KeyValue{limiter.AttrNamespace.String(ns), limiter.AttrTable.String(e.tbl.Name)}
	entries := ob.sum("zae_limiter.rejection_cache.entries", where...)
	hits := ob.sum("zae_limiter.rejection_cache.hits", where...)
	evictions := ob.sum("zae_limiter.rejection_cache.evictions", where...)
	if entries != int64(st.RejectionCacheEntries) || hits != st.RejectionCacheHits || evictions != st.RejectionCacheEvictions {
		t.Fatalf("observed entries %d, hits %d, evictions %d; Stats says %+v", entries, hits, evictions, st)
	}
	if evictions < pairs-32 || entries+evictions != pairs {
		t.Fatalf("%d entries and %d evictions after %d pairs in 32 parts of one", entries, evictions, pairs)
	}
	if hits < 3 {
		t.Fatalf("%d hits, want at least the 3 acquires on a pair just stored", hits)
	}
}

// TestTelemetryCacheObservationEndsWithTheLimiter: a limiter that is no
// longer used stops being observed (its callback is unregistered once it
// is collected), so a process that makes limiters and drops them keeps
// neither them nor their series.
func TestTelemetryCacheObservationEndsWithTheLimiter(t *testing.T) {
	ob := newObserved(t)
	const gone = "gOnEnAmEsP0"
	where := limiter.AttrNamespace.String(gone)
	observedNow := func() bool {
		m := ob.metric("zae_limiter.rejection_cache.entries")
		if m == nil {
			return false
		}
		for _, set := range dataPointSets(*m) {
			if has(set, []attribute.KeyValue{where}) {
				return true
			}
		}
		return false
	}
	func() { // the limiter is garbage once this returns
		lim, err := limiter.New(nil, "t", gone, ob.options(limiter.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if !observedNow() {
			t.Fatal("a live limiter's rejection cache is not observed")
		}
		runtime.KeepAlive(lim)
	}()
	for range 50 {
		runtime.GC()
		runtime.Gosched()
		if !observedNow() {
			return
		}
	}
	t.Fatal("a collected limiter's rejection cache is still observed after 50 collections")
}
