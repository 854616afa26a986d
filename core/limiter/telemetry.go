package limiter

// Telemetry (docs/design.md §18): the limiter's OpenTelemetry metrics and
// spans. The acquire and lease code calls the methods of a *telemetry and
// nothing else of OpenTelemetry; the DynamoDB calls are observed by the DB
// wrapper of telemetrydb.go.
//
// Unused, it costs next to nothing: with no provider set (the global
// no-op), no span is started, no clock is read and no attribute is built;
// each instrument is asked whether it is enabled, and a measurement that
// is made passes an option list built once (docs/decisions.md P50).

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationScope names the meter and the tracer the limiter takes
// from its providers.
const InstrumentationScope = "github.com/zae-limiter/zae-limiter-go/core/limiter"

// The attributes the limiter sets, beside the semantic conventions'
// db.system.name, db.operation.name, aws.dynamodb.table_names and
// error.type.
const (
	// AttrResult is an acquisition's result: admitted, rejected,
	// rejected_locally, disabled, unavailable or error.
	AttrResult = attribute.Key("zae_limiter.result")
	// AttrPath is the acquire path that answered: local, fast,
	// refill_pass, slow or cascade.
	AttrPath = attribute.Key("zae_limiter.path")
	// AttrResource is the resource of an acquisition or a lease.
	AttrResource = attribute.Key("zae_limiter.resource")
	// AttrEntity is the entity of an acquisition or a lease, set only
	// with Options.TelemetryEntityIDs.
	AttrEntity = attribute.Key("zae_limiter.entity")
	// AttrOutcome is how a DynamoDB call or a lease's write ended: ok,
	// conditional_failed, throttled, conflict or error (DynamoDB calls),
	// ok or error (lease commits and rollbacks).
	AttrOutcome = attribute.Key("zae_limiter.outcome")
	// AttrNamespace and AttrTable name the limiter whose rejection cache
	// an observation reads.
	AttrNamespace = attribute.Key("zae_limiter.namespace")
	AttrTable     = attribute.Key("zae_limiter.table")
)

// The span names (README "Metrics and traces"); a DynamoDB call's span is
// named "{operation} {table}".
const (
	spanAcquire  = "zae_limiter.acquire"
	spanCommit   = "zae_limiter.lease.commit"
	spanRollback = "zae_limiter.lease.rollback"
	spanAdjust   = "zae_limiter.lease.adjust"
)

// acquireResult is what an Acquire answered (AttrResult).
type acquireResult uint8

const (
	resultAdmitted acquireResult = iota
	resultRejected
	resultRejectedLocally
	resultDisabled
	resultUnavailable
	resultError
	numResults
)

var resultNames = [numResults]string{"admitted", "rejected", "rejected_locally", "disabled", "unavailable", "error"}

// acquirePath is the acquire path that answered (AttrPath): the last one
// an acquire entered before its answer. A request carries it.
type acquirePath uint8

const (
	pathNone       acquirePath = iota // refused before any path (bad input)
	pathLocal                         // the rejection cache, no call (§10)
	pathFast                          // the speculative write and what its image decides (§5 step 1)
	pathRefillPass                    // a refill pass from an image (§4)
	pathSlow                          // the read-then-write path (§5 step 3)
	pathCascade                       // a cascading pair's writes (§5 step 4)
	numPaths
)

var pathNames = [numPaths]string{"", "local", "fast", "refill_pass", "slow", "cascade"}

// outcome is how a DynamoDB call, or a lease's write, ended (AttrOutcome).
type outcome uint8

const (
	outcomeOK outcome = iota
	outcomeConditionalFailed
	outcomeThrottled
	outcomeConflict
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "conditional_failed", "throttled", "conflict", "error"}

// leaseOp is a lease's settling write (Commit or Rollback).
type leaseOp uint8

const (
	leaseCommit leaseOp = iota
	leaseRollback
	numLeaseOps
)

// maxCachedResources bounds how many resources keep attribute sets built
// once; the acquisitions of further resources build theirs per call.
const maxCachedResources = 256

// durationBuckets are the acquire duration histogram's advised bucket
// boundaries in seconds: a local rejection takes microseconds, a fast path
// a round trip, a contended slow path tens of milliseconds.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// traceGate says when the limiter starts spans.
type traceGate uint8

const (
	traceOff    traceGate = iota // a no-op tracer provider
	traceOn                      // a provider the caller gave, or a global one already set
	traceGlobal                  // the global default: on once otel.SetTracerProvider is called
)

// telemetry is one limiter's instruments, tracer and the attribute sets
// they use, built once.
type telemetry struct {
	tracer   trace.Tracer
	gate     traceGate
	deflt    reflect.Type // the global default tracer provider's type (traceGlobal)
	entities bool         // Options.TelemetryEntityIDs

	meter        metric.Meter
	acquisitions metric.Int64Counter
	duration     metric.Float64Histogram
	calls        metric.Int64Counter
	writeUnits   metric.Int64Counter
	commits      metric.Int64Counter
	rollbacks    metric.Int64Counter
	adjustments  metric.Int64Counter
	cacheEntries metric.Int64ObservableUpDownCounter
	cacheHits    metric.Int64ObservableCounter
	cacheEvicted metric.Int64ObservableCounter

	table      string
	durOpts    [numPaths][numResults][]metric.RecordOption
	endAttrs   [numPaths][numResults][]attribute.KeyValue
	callOpts   [numDBOps][numOutcomes][]metric.AddOption
	unitOpts   [numDBOps][]metric.AddOption
	callStart  [numDBOps][]trace.SpanStartOption
	callNames  [numDBOps]string
	outcomeKVs [numOutcomes][]attribute.KeyValue

	// resources holds each resource's attribute sets (at most
	// maxCachedResources), read without a lock; resMu serialises the
	// copy-on-write that adds one.
	resources atomic.Pointer[map[string]*resourceAttrs]
	resMu     sync.Mutex
}

// resourceAttrs are one resource's attribute sets, built once.
type resourceAttrs struct {
	acquisitions [numResults][]metric.AddOption
	settled      [numLeaseOps][numOutcomes][]metric.AddOption // ok and error only
	adjustments  []metric.AddOption
	spanStart    []trace.SpanStartOption
}

// newTelemetry builds the instruments of a limiter on table from the
// options' providers (the global ones where unset).
func newTelemetry(o Options, table string) (*telemetry, error) {
	mp, tp := o.MeterProvider, o.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &telemetry{gate: traceOn, entities: o.TelemetryEntityIDs, table: table}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	switch {
	case isNoopTracerProvider(tp):
		t.gate = traceOff
	case isGlobalDefault(tp):
		t.gate, t.deflt = traceGlobal, reflect.TypeOf(tp)
	}
	t.tracer = tp.Tracer(InstrumentationScope, trace.WithInstrumentationVersion(Version))
	t.meter = mp.Meter(InstrumentationScope, metric.WithInstrumentationVersion(Version))
	if err := t.instruments(); err != nil {
		return nil, fmt.Errorf("limiter: telemetry: %w", err)
	}
	t.attributeSets()
	empty := map[string]*resourceAttrs{}
	t.resources.Store(&empty)
	return t, nil
}

// isNoopTracerProvider reports the API's no-op provider.
func isNoopTracerProvider(tp trace.TracerProvider) bool {
	_, ok := tp.(tracenoop.TracerProvider)
	return ok
}

// isGlobalDefault reports the global tracer provider OpenTelemetry hands
// out before the program sets one. Its spans record nothing but cost two
// allocations each, so the limiter starts none until a provider is set
// (otel.GetTracerProvider then returns that one); the type lives in an
// internal package, so it is recognised by its package path. Were that to
// change, spans would merely be started for nothing (TestAcquireAllocs
// would say so).
func isGlobalDefault(tp trace.TracerProvider) bool {
	rt := reflect.TypeOf(tp)
	return rt != nil && rt.Kind() == reflect.Pointer && rt.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

// instruments creates every instrument on t.meter.
func (t *telemetry) instruments() error {
	m := t.meter
	var errs [11]error
	t.acquisitions, errs[0] = m.Int64Counter("zae_limiter.acquisitions",
		metric.WithUnit("{acquisition}"),
		metric.WithDescription("Acquire calls, by result and resource."))
	t.duration, errs[1] = m.Float64Histogram("zae_limiter.acquire.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time an Acquire call took, by the path that answered and its result."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	t.calls, errs[2] = m.Int64Counter("zae_limiter.dynamodb.calls",
		metric.WithUnit("{call}"),
		metric.WithDescription("DynamoDB calls the limiter sent (each throttle retry is a call), by operation and outcome."))
	t.writeUnits, errs[3] = m.Int64Counter("zae_limiter.dynamodb.write_units",
		metric.WithUnit("{write_unit}"),
		metric.WithDescription("Write units of the limiter's DynamoDB writes, estimated from the item sizes it sees (index writes not included), by operation."))
	t.commits, errs[4] = m.Int64Counter("zae_limiter.lease.commits",
		metric.WithUnit("{commit}"),
		metric.WithDescription("Lease commits, by resource and outcome."))
	t.rollbacks, errs[5] = m.Int64Counter("zae_limiter.lease.rollbacks",
		metric.WithUnit("{rollback}"),
		metric.WithDescription("Lease rollbacks, by resource and outcome."))
	t.adjustments, errs[6] = m.Int64Counter("zae_limiter.lease.adjustments",
		metric.WithUnit("{adjustment}"),
		metric.WithDescription("Changes made to leases before they are settled (Consume, Adjust, Release), by resource."))
	t.cacheEntries, errs[7] = m.Int64ObservableUpDownCounter("zae_limiter.rejection_cache.entries",
		metric.WithUnit("{entry}"),
		metric.WithDescription("Bucket shard states the rejection cache holds."))
	t.cacheHits, errs[8] = m.Int64ObservableCounter("zae_limiter.rejection_cache.hits",
		metric.WithUnit("{hit}"),
		metric.WithDescription("Rejection cache lookups that found a trusted state of the pair."))
	t.cacheEvicted, errs[9] = m.Int64ObservableCounter("zae_limiter.rejection_cache.evictions",
		metric.WithUnit("{eviction}"),
		metric.WithDescription("Pairs the rejection cache dropped to stay within its size."))
	return errors.Join(errs[:]...)
}

// attributeSets builds the option lists every measurement and span of a
// fixed attribute set passes.
func (t *telemetry) attributeSets() {
	for p := range numPaths {
		for r := range numResults {
			set := attribute.NewSet(AttrPath.String(pathNames[p]), AttrResult.String(resultNames[r]))
			t.durOpts[p][r] = []metric.RecordOption{metric.WithAttributeSet(set)}
			kvs := []attribute.KeyValue{AttrResult.String(resultNames[r])}
			if p != pathNone {
				kvs = append(kvs, AttrPath.String(pathNames[p]))
			}
			t.endAttrs[p][r] = kvs
		}
	}
	for o := range numOutcomes {
		t.outcomeKVs[o] = []attribute.KeyValue{AttrOutcome.String(outcomeNames[o])}
	}
	for op := range numDBOps {
		name := dbOpNames[op]
		for o := range numOutcomes {
			t.callOpts[op][o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				semconv.DBOperationName(name), AttrOutcome.String(outcomeNames[o])))}
		}
		t.unitOpts[op] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(semconv.DBOperationName(name)))}
		t.callNames[op] = name + " " + t.table
		t.callStart[op] = []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(semconv.DBSystemNameAWSDynamoDB, semconv.DBOperationName(name),
				semconv.AWSDynamoDBTableNames(t.table)),
		}
	}
}

// newResourceAttrs builds a resource's attribute sets.
func newResourceAttrs(resource string) *resourceAttrs {
	ra := &resourceAttrs{}
	res := AttrResource.String(resource)
	for r := range numResults {
		ra.acquisitions[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(AttrResult.String(resultNames[r]), res))}
	}
	for op := range numLeaseOps {
		for _, o := range [...]outcome{outcomeOK, outcomeError} {
			ra.settled[op][o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String(outcomeNames[o]), res))}
		}
	}
	ra.adjustments = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(res))}
	ra.spanStart = []trace.SpanStartOption{trace.WithAttributes(res)}
	return ra
}

// forResource returns resource's attribute sets, building and keeping
// them on first use while fewer than maxCachedResources are kept; nil
// when the cache is full (the caller builds what it needs).
func (t *telemetry) forResource(resource string) *resourceAttrs {
	if ra := (*t.resources.Load())[resource]; ra != nil {
		return ra
	}
	t.resMu.Lock()
	defer t.resMu.Unlock()
	cur := *t.resources.Load()
	if ra := cur[resource]; ra != nil {
		return ra
	}
	if len(cur) >= maxCachedResources {
		return nil
	}
	next := make(map[string]*resourceAttrs, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	ra := newResourceAttrs(resource)
	next[resource] = ra
	t.resources.Store(&next)
	return ra
}

// observeCache reports the rejection cache's counters (Limiter.Stats) on
// every collection, under the limiter's namespace and table. The callback
// holds the cache, not the limiter; the registration is dropped once the
// limiter is collected (newLimiter arranges it).
func (t *telemetry) observeCache(c *rejectionCache, ns string) (metric.Registration, error) {
	set := attribute.NewSet(AttrNamespace.String(ns), AttrTable.String(t.table))
	opts := []metric.ObserveOption{metric.WithAttributeSet(set)}
	entries, hits, evicted := t.cacheEntries, t.cacheHits, t.cacheEvicted
	return t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := c.stats()
		o.ObserveInt64(entries, int64(st.entries), opts...)
		o.ObserveInt64(hits, st.hits, opts...)
		o.ObserveInt64(evicted, st.evictions, opts...)
		return nil
	}, entries, hits, evicted)
}

// acquireCall is one Acquire as the telemetry follows it.
type acquireCall struct {
	span             trace.Span // nil: not traced
	start            time.Time  // zero: not timed
	entity, resource string
}

// startAcquire begins an Acquire: its span (the DynamoDB calls made under
// the returned context are its children) and its clock.
func (t *telemetry) startAcquire(ctx context.Context, entity, resource string) (context.Context, acquireCall) {
	c := acquireCall{entity: entity, resource: resource}
	if t.duration.Enabled(ctx) {
		c.start = time.Now()
	}
	if t.tracing() {
		ctx, c.span = t.tracer.Start(ctx, spanAcquire, t.spanStart(entity, resource)...)
	}
	return ctx, c
}

// endAcquire counts an Acquire's answer, records its duration by the path
// that answered and ends its span. The lease, if any, keeps the span as
// the parent of its changes' spans.
func (t *telemetry) endAcquire(ctx context.Context, c acquireCall, path acquirePath, lease *Lease, err error) {
	counting, timing := t.acquisitions.Enabled(ctx), !c.start.IsZero() && path != pathNone
	if !counting && !timing && c.span == nil {
		return // unused: not even the result is worked out
	}
	res := resultOf(lease, err)
	if counting {
		t.acquisitions.Add(ctx, 1, t.acquisitionOpts(c.entity, c.resource, res)...)
	}
	if timing {
		t.duration.Record(ctx, time.Since(c.start).Seconds(), t.durOpts[path][res]...)
	}
	if c.span == nil {
		return
	}
	c.span.SetAttributes(t.endAttrs[path][res]...)
	if err != nil && (res == resultUnavailable || res == resultError) {
		failed(c.span, err)
	}
	if lease != nil {
		lease.acquired = c.span
	}
	c.span.End()
}

// resultOf names what an Acquire answered.
func resultOf(lease *Lease, err error) acquireResult {
	if err == nil {
		if lease != nil && lease.noop {
			return resultUnavailable // on_unavailable=allow
		}
		return resultAdmitted
	}
	if rle, ok := err.(*RateLimitExceeded); ok { //nolint:errorlint // the common 429, cheaply
		if rle.Local {
			return resultRejectedLocally
		}
		return resultRejected
	}
	var (
		rle *RateLimitExceeded
		dis *ResourceDisabled
		un  *RateLimiterUnavailable
	)
	switch {
	case errors.As(err, &rle) && rle.Local:
		return resultRejectedLocally
	case rle != nil:
		return resultRejected
	case errors.As(err, &dis):
		return resultDisabled
	case errors.As(err, &un):
		return resultUnavailable
	}
	return resultError
}

// acquisitionOpts is the option list of one acquisition's count.
func (t *telemetry) acquisitionOpts(entity, resource string, res acquireResult) []metric.AddOption {
	if !t.entities {
		if ra := t.forResource(resource); ra != nil {
			return ra.acquisitions[res]
		}
	}
	return []metric.AddOption{metric.WithAttributeSet(t.callerSet(entity, resource, AttrResult.String(resultNames[res])))}
}

// callerSet is the attribute set of a resource (and, opted in, an entity)
// with kvs.
func (t *telemetry) callerSet(entity, resource string, kvs ...attribute.KeyValue) attribute.Set {
	kvs = append(kvs, AttrResource.String(resource))
	if t.entities {
		kvs = append(kvs, AttrEntity.String(entity))
	}
	return attribute.NewSet(kvs...)
}

// spanStart is the start options of a span on (entity, resource).
func (t *telemetry) spanStart(entity, resource string) []trace.SpanStartOption {
	if !t.entities {
		if ra := t.forResource(resource); ra != nil {
			return ra.spanStart
		}
		return []trace.SpanStartOption{trace.WithAttributes(AttrResource.String(resource))}
	}
	return []trace.SpanStartOption{trace.WithAttributes(AttrResource.String(resource), AttrEntity.String(entity))}
}

// leaseCall is one Commit or Rollback as the telemetry follows it.
type leaseCall struct {
	op   leaseOp
	span trace.Span
}

// startLease begins a lease's Commit or Rollback: its span, linked to
// the Acquire's, parents the writes made under the returned context.
func (t *telemetry) startLease(ctx context.Context, op leaseOp, l *Lease) (context.Context, leaseCall) {
	c := leaseCall{op: op}
	if t.tracing() {
		name := spanCommit
		if op == leaseRollback {
			name = spanRollback
		}
		opts := t.spanStart(l.Entity(), l.resource)
		if l.acquired != nil {
			opts = append(opts[:len(opts):len(opts)], trace.WithLinks(trace.Link{SpanContext: l.acquired.SpanContext()}))
		}
		ctx, c.span = t.tracer.Start(ctx, name, opts...)
	}
	return ctx, c
}

// endLease counts a Commit or Rollback and ends its span.
func (t *telemetry) endLease(ctx context.Context, c leaseCall, l *Lease, err error) {
	o := outcomeOK
	if err != nil {
		o = outcomeError
	}
	ctr := t.commits
	if c.op == leaseRollback {
		ctr = t.rollbacks
	}
	if ctr.Enabled(ctx) {
		if ra := t.forResource(l.resource); ra != nil && !t.entities {
			ctr.Add(ctx, 1, ra.settled[c.op][o]...)
		} else {
			ctr.Add(ctx, 1, metric.WithAttributeSet(t.callerSet(l.Entity(), l.resource, AttrOutcome.String(outcomeNames[o]))))
		}
	}
	if c.span != nil {
		c.span.SetAttributes(t.outcomeKVs[o]...)
		if err != nil {
			failed(c.span, err)
		}
		c.span.End()
	}
}

// leaseChanged counts a change made to a lease (Consume, Adjust or
// Release of a limit) and records it as a span under the Acquire's. The
// change takes no context: its span's parent is the Acquire's span.
func (t *telemetry) leaseChanged(l *Lease, what, name string, tokens int64, err error) {
	ctx := context.Background()
	if err == nil && t.adjustments.Enabled(ctx) {
		if ra := t.forResource(l.resource); ra != nil && !t.entities {
			t.adjustments.Add(ctx, 1, ra.adjustments...)
		} else {
			t.adjustments.Add(ctx, 1, metric.WithAttributeSet(t.callerSet(l.Entity(), l.resource)))
		}
	}
	if l.acquired == nil || !t.tracing() {
		return
	}
	ctx = trace.ContextWithSpan(ctx, l.acquired)
	_, span := t.tracer.Start(ctx, spanAdjust, t.spanStart(l.Entity(), l.resource)...)
	span.SetAttributes(attribute.String("zae_limiter.lease.change", what),
		attribute.String("zae_limiter.limit", name), attribute.Int64("zae_limiter.tokens", tokens))
	if err != nil {
		failed(span, err)
	}
	span.End()
}

// failed records err on span and sets its status to error.
func failed(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
