package showcase

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/httplimit"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// httpResource is the resource of the HTTP step; the API key its client
// sends.
const (
	httpResource = "http/chat"
	httpAPIKey   = "sk-demo-0001"
)

// httpMiddleware serves a route behind core/httplimit on a loopback
// listener and sends it three requests: two answered 200 with the
// RateLimit fields of the tightest limit, the third a 429 with Retry-After,
// every limit's fields and a problem body (docs/design.md §17). The
// limiter's clock stands still, so the output is the same on every run.
// Last, the limiter's OpenTelemetry counters (docs/design.md §18).
func (d *demo) httpMiddleware(ctx context.Context) error {
	clk := clock.NewManual(d.now)
	// The limiter's OpenTelemetry metrics, read after the requests by a
	// manual reader (a service would pass its own MeterProvider).
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = meters.Shutdown(context.WithoutCancel(ctx)) }()
	lim, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now, MeterProvider: meters})
	if err != nil {
		return err
	}
	ops := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	limits := []limit.Limit{limit.PerMinute("rpm", 2), limit.PerMinute("tpm", 10_000)}
	if _, err := ops.SetResourceLimits(ctx, d.ns, httpResource, limits, "make run"); err != nil {
		return err
	}
	limited, err := httplimit.New(lim, httplimit.Options{
		Entity:        httplimit.EntityFromAPIKey("X-API-Key"),
		Resource:      httplimit.FixedResource(httpResource),
		Consume:       limiter.Consume{"rpm": 1, "tpm": 1000},
		Usage:         httplimit.UsageFromHeader("X-Tokens-Used", "tpm"),
		LegacyHeaders: true,
		Clock:         clk.Now,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat", limited(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Tokens-Used", "400") // what the model call really used
		_, _ = io.WriteString(w, "hello\n")
	})))
	srv := httptest.NewServer(mux) // a loopback listener
	defer srv.Close()

	fmt.Fprintf(d.out, "resource %s: %s; a loopback server answers POST /v1/chat behind the middleware:\n", httpResource, limitList(limits))
	fmt.Fprintf(d.out, "the entity is the API key's hash (%s), each request takes rpm 1 + an estimate of tpm 1000,\n", httplimit.APIKeyEntity(httpAPIKey))
	fmt.Fprintln(d.out, "and the handler's X-Tokens-Used (400) settles the estimate; the clock stands still")
	for i := 1; i <= 3; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat", nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", httpAPIKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "request %d: %s %s\n", i, resp.Proto, resp.Status)
		names := make([]string, 0, len(resp.Header))
		for name := range resp.Header {
			if name != "Date" { // the server's clock
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Fprintf(d.out, "  %s: %s\n", name, strings.Join(resp.Header[name], ", "))
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			fmt.Fprintf(d.out, "  (body) %s", body)
			continue
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, bytes.TrimSpace(body), "  ", "  "); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s\n", indented.String())
	}
	if left := remainingTPM(ctx, lim); left != "" {
		fmt.Fprintln(d.out, left)
	}
	return printMetrics(ctx, d.out, reader)
}

// printMetrics prints the limiter's counters as the reader collects them:
// one line per instrument and attribute set, sorted.
func printMetrics(ctx context.Context, out io.Writer, reader *sdkmetric.ManualReader) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue // the duration histogram: times vary from run to run
			}
			for _, p := range sum.DataPoints {
				var attrs []string
				for _, kv := range p.Attributes.ToSlice() {
					if kv.Key == limiter.AttrNamespace || kv.Key == limiter.AttrTable {
						continue
					}
					attrs = append(attrs, strings.TrimPrefix(string(kv.Key), "zae_limiter.")+"="+kv.Value.String())
				}
				lines = append(lines, fmt.Sprintf("  %s{%s} %d", m.Name, strings.Join(attrs, ","), p.Value))
			}
		}
	}
	slices.Sort(lines)
	fmt.Fprintln(out, "the limiter's OpenTelemetry counters after these requests (histograms left out):")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return nil
}

// remainingTPM reads the demo key's tpm balance with an acquire of 0 (checked,
// not debited): two requests that used 400 each leave 9,200.
func remainingTPM(ctx context.Context, lim *limiter.Limiter) string {
	lease, err := lim.Acquire(ctx, httplimit.APIKeyEntity(httpAPIKey), httpResource, limiter.Consume{"tpm": 0})
	if err != nil {
		return ""
	}
	n, _ := lease.Remaining("tpm")
	_ = lease.Commit(ctx)
	return fmt.Sprintf("the bucket holds tpm %d: two requests settled at the 400 they used, not the 1000 estimated", n)
}
