package limiter_test

// What the limiter's metrics and spans (docs/design.md §18) cost a
// fast-path acquire, on BenchmarkClientCost's canned endpoint and over
// loopback HTTP.

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
)

// telemetryOn returns options with the SDK's providers, exporting
// nothing: a meter provider read by a manual reader that is never
// collected, a tracer provider with no exporter (every span sampled and
// recorded, then dropped at End). They are shut down when tb ends.
func telemetryOn(tb testing.TB) limiter.Options {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	tb.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	return limiter.Options{MeterProvider: mp, TracerProvider: tp}
}

// BenchmarkTelemetryCost measures the CPU time and allocations metrics
// and tracing add to a fast-path acquire: on is BenchmarkClientCost's
// acquire by a limiter with the SDK's providers (telemetryOn), off the
// same acquire with no provider set (the global no-op), both against the
// canned endpoint; metrics-only has the SDK's meter provider and the
// no-op tracer provider. After its timed loop, each of on and metrics-only
// runs b.N more acquires interleaved with b.N of off (benchkit.PairedCost) and
// reports itself over off: ns-ratio (CPU time; the goal is ≤ 1.03),
// allocs-ratio, and the allocations and bytes it adds per acquire
// (allocs-added, B-added). two-sdk-spans is off's acquire inside two bare
// spans of the same SDK provider, measured the same way: the floor of the
// tracing alone, so that on's ratio less its own is the limiter's share;
// on-over-two-sdk-spans measures that share directly, on's acquire
// interleaved with two-sdk-spans' and reported over it. off-over-off is
// the control: off over itself, measured the same way, whose distance
// from 1 is how far the method itself strays (docs/decisions.md P50).
// on-over-no-exemplars is on over on with the meter provider's exemplars
// off: what the SDK's default exemplar filter costs.
// on-sampled-1pc is on with the tracer provider sampling one trace in a
// hundred (sdktrace.TraceIDRatioBased): what a service that samples its
// traces pays.
// over-http/on, over-http/two-sdk-spans and over-http/off-over-off are
// on, two-sdk-spans and the control with both sides of every pair sent
// over loopback HTTP to a canned server in another process
// (startCannedServer): the acquire's CPU then includes the transport a
// service pays, which the canned endpoint leaves out. Every paired case also reports off's CPU time per acquire
// (ref-cpu-ns). limiter-only-off and limiter-only-on are the
// acquire with no SDK call (BenchmarkClientCost's limiter-only), off and
// on: the instrumentation's share in absolute terms.
func BenchmarkTelemetryCost(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		measureClientCost(b, cannedAcquire(b, newCannedDynamoDB()))
	})
	paired := func(b *testing.B, o limiter.Options) {
		canned := newCannedDynamoDB()
		pairedWith(b, canned, cannedAcquireWith(b, canned, o))
	}
	b.Run("on", func(b *testing.B) { paired(b, telemetryOn(b)) })
	b.Run("metrics-only", func(b *testing.B) {
		o := telemetryOn(b)
		o.TracerProvider = tracenoop.NewTracerProvider()
		paired(b, o)
	})
	b.Run("two-sdk-spans", func(b *testing.B) {
		canned := newCannedDynamoDB()
		pairedWith(b, canned, inTwoSpans(b, cannedAcquire(b, canned)))
	})
	b.Run("on-sampled-1pc", func(b *testing.B) {
		// on with head sampling, the lever the README names: the
		// tracer provider records one trace in a hundred (by trace id,
		// as sdktrace.TraceIDRatioBased decides), the other ninety-nine
		// acquires get spans that record nothing, and their measurements
		// keep no exemplar.
		o := telemetryOn(b)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(
			sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		o.TracerProvider = tp
		paired(b, o)
	})
	b.Run("off-over-off", func(b *testing.B) {
		// The control: off against itself, each side on an endpoint of
		// its own as in every other case. Its distance from 1 is the
		// spread of the method, not a cost.
		canned := newCannedDynamoDB()
		pairedWith(b, canned, cannedAcquire(b, canned))
	})
	b.Run("on-over-no-exemplars", func(b *testing.B) {
		// on against on with the meter provider's exemplar filter off:
		// what the SDK's default filter (an exemplar for a measurement
		// made inside a sampled span, which every measurement of on is)
		// costs.
		canned := newCannedDynamoDB()
		o := telemetryOn(b)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()),
			sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
		b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		pairedAgainst(b, canned.calls.Load, cannedAcquireWith(b, canned, o),
			cannedAcquireWith(b, newCannedDynamoDB(), limiter.Options{MeterProvider: mp, TracerProvider: o.TracerProvider}))
	})
	b.Run("on-over-two-sdk-spans", func(b *testing.B) {
		// on against two-sdk-spans, interleaved: what the limiter's
		// instrumentation adds beyond the SDK's floor of two spans.
		canned := newCannedDynamoDB()
		pairedAgainst(b, canned.calls.Load, cannedAcquireWith(b, canned, telemetryOn(b)),
			inTwoSpans(b, cannedAcquire(b, newCannedDynamoDB())))
	})
	b.Run("over-http", func(b *testing.B) {
		// on and two-sdk-spans again, every acquire (both sides of each
		// pair) sent over loopback HTTP to a canned server in another
		// process: the transport in the acquire's CPU, as a service pays
		// it (without TLS, which would add more). The measured side and
		// the reference have a server each, so that the measured one's
		// count is its own requests.
		// srv.calls reports to the b of the benchmark that reads it.
		srv, ref := startCannedServer(b), startCannedServer(b)
		b.Run("on", func(b *testing.B) {
			calls := func() int64 { return srv.calls(b) }
			pairedAgainst(b, calls, srv.acquireWith(b, telemetryOn(b)), ref.acquireWith(b, limiter.Options{}))
		})
		b.Run("off-over-off", func(b *testing.B) {
			calls := func() int64 { return srv.calls(b) }
			pairedAgainst(b, calls, srv.acquireWith(b, limiter.Options{}), ref.acquireWith(b, limiter.Options{}))
		})
		b.Run("two-sdk-spans", func(b *testing.B) {
			calls := func() int64 { return srv.calls(b) }
			pairedAgainst(b, calls, inTwoSpans(b, srv.acquireWith(b, limiter.Options{})), ref.acquireWith(b, limiter.Options{}))
		})
	})
	b.Run("limiter-only-off", func(b *testing.B) {
		measureClientCost(b, sdkFreeAcquire(b))
	})
	b.Run("limiter-only-on", func(b *testing.B) {
		measureClientCost(b, sdkFreeAcquireWith(b, telemetryOn(b)))
	})
}

// inTwoSpans is acquire (with no telemetry of its own) inside two spans of
// the SDK's default provider, one in the other, started and ended here with
// no attributes: the least that a span per Acquire with a child per
// DynamoDB call costs, whoever starts them.
func inTwoSpans(b *testing.B, acquire func() error) func() error {
	tr := telemetryOn(b).TracerProvider.Tracer("floor")
	ctx := context.Background()
	return func() error {
		actx, outer := tr.Start(ctx, "acquire")
		_, inner := tr.Start(actx, "call")
		err := acquire()
		inner.End()
		outer.End()
		return err
	}
}

// pairedWith runs BenchmarkTelemetryCost's measurement of acquire, whose
// requests go to canned: its timed loop, then b.N more interleaved with
// b.N of the acquire with no telemetry (benchkit.PairedCost), reported as
// ratios over it.
func pairedWith(b *testing.B, canned *cannedDynamoDB, acquire func() error) {
	pairedAgainst(b, canned.calls.Load, acquire, cannedAcquire(b, newCannedDynamoDB()))
}

// pairedAgainst is pairedWith with ref as the acquire interleaved and
// reported over, and calls the count of the requests acquire's endpoint
// has answered: acquire must send exactly one each time. It also reports
// ref's CPU time per call (ref-cpu-ns).
func pairedAgainst(b *testing.B, calls func() int64, acquire, ref func() error) {
	before := calls()
	measureClientCost(b, acquire)
	op, refCost, err := benchkit.PairedCost(b.N, acquire, ref)
	if err != nil {
		b.Fatal(err)
	}
	if sent := calls() - before; sent != 2*int64(b.N) {
		b.Fatalf("%d acquires sent %d requests, want one each", 2*b.N, sent)
	}
	b.ReportMetric(op.CPU/refCost.CPU, "ns-ratio")
	b.ReportMetric(refCost.CPU, "ref-cpu-ns")
	b.ReportMetric(op.Allocs/refCost.Allocs, "allocs-ratio")
	b.ReportMetric(op.Allocs-refCost.Allocs, "allocs-added")
	b.ReportMetric(op.Bytes-refCost.Bytes, "B-added")
}

// TestTelemetryCostSetup runs BenchmarkTelemetryCost's on side as the
// benchmark does, with a span recorder and a reader beside: every acquire
// is one UpdateItem on the fast path, counted, timed and traced (an
// acquire span and its call's span), so the benchmark measures the
// instrumentation at work and not a path that skips it.
func TestTelemetryCostSetup(t *testing.T) {
	ob := newObserved(t)
	canned := newCannedDynamoDB()
	acquire := cannedAcquireWith(t, canned, ob.options(limiter.Options{}))
	const n = 2*benchkit.PairBlock + 1
	before, spans := canned.calls.Load(), len(ob.spans.Ended())
	op, ref, err := benchkit.PairedCost(n, acquire, cannedAcquire(t, newCannedDynamoDB()))
	if err != nil {
		t.Fatal(err)
	}
	if calls := canned.calls.Load() - before; calls != n {
		t.Errorf("%d acquires sent %d requests, want one each", n, calls)
	}
	if got := len(ob.spans.Ended()) - spans; got != 2*n {
		t.Errorf("%d acquires ended %d spans, want 2 each", n, got)
	}
	fast := ob.count("zae_limiter.acquire.duration", limiter.AttrPath.String("fast"), limiter.AttrResult.String("admitted"))
	if fast != n+1 { // and the setup's acquire
		t.Errorf("%d fast-path admissions timed, want %d", fast, n+1)
	}
	if op.CPU <= 0 || ref.CPU <= 0 {
		t.Errorf("PairedCost measured %+v and %+v per call", op, ref)
	}
}
