package provision_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// benchEntitiesFull is the size of the manifest the benchmarks apply.
const benchEntitiesFull = 1000

// benchEntityCount is benchEntitiesFull, or a tenth of it under -short
// (make test and make bench-smoke run every benchmark once: it must work,
// its figures mean nothing).
func benchEntityCount() int {
	if testing.Short() {
		return benchEntitiesFull / 10
	}
	return benchEntitiesFull
}

func benchManifest(b *testing.B) *manifest.Manifest {
	benchEntities := benchEntityCount()
	var doc strings.Builder
	doc.WriteString("namespace: bench\nsystem: {limits: {rpm: {capacity: 1000}}}\nresources: {gpt-4: {limits: {rpm: {capacity: 100}}}}\nentities:\n")
	for i := range benchEntities {
		fmt.Fprintf(&doc, "  api-key-%04d: {resources: {gpt-4: {limits: {rpm: {capacity: 10}}}}}\n", i)
	}
	m, err := manifest.Parse([]byte(doc.String()))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkApply measures, side by side in one run, the time and DynamoDB
// calls of: the baseline — the same 1,000 entity configs (plus the system
// and resource items) written one by one with the config setters, no
// fan-out, no state; a declarative apply of the 1,000-entity manifest to a
// fresh namespace; and a re-apply of it unchanged. Calls are counted by a
// proxy in front of DynamoDB Local. The table has no stream
// (a harness table has none unless asked): the emulator's writes slow down
// as stream records pile up, and each case would pay for the records of the
// ones before it.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	benchEntities := benchEntityCount()
	tbl := ddbtest.NewTable(b)
	proxy := faultproxy.Start(b, tbl.Endpoint)
	db := proxy.DynamoDB()
	m := benchManifest(b)
	store := config.NewStore(db, tbl.Name, config.WithCacheTTL(-1))
	prov := provision.New(db, tbl.Name, provision.Options{Logger: quietLogger()})
	namespace := func(b *testing.B, i int, kind string) string {
		b.Helper()
		ns, _, err := store.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, fmt.Sprintf("%s-%d-%d", kind, b.N, i))
		if err != nil {
			b.Fatal(err)
		}
		return ns
	}
	report := func(b *testing.B, elapsed time.Duration) {
		calls, writes := 0, 0
		for op, s := range proxy.Stats() {
			calls += s.Forwarded
			switch op {
			case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
				writes += s.Forwarded
			}
		}
		b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
		b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N)/float64(benchEntities), "ms/entity")
	}
	req := provision.Request{Owner: provision.Owner{Name: "bench"}, Principal: "bench"}
	rpm := []limit.Limit{limit.PerMinute("rpm", 10)}

	b.Run("baseline-setters", func(b *testing.B) {
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			ns := namespace(b, i, "setters")
			proxy.ResetStats()
			start := time.Now()
			b.StartTimer()
			if err := store.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, m.System.Limits, config.SystemOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := store.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt-4", m.Resources["gpt-4"].Limits); err != nil {
				b.Fatal(err)
			}
			for e := range benchEntities {
				if err := store.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, fmt.Sprintf("api-key-%04d", e), "gpt-4", rpm); err != nil {
					b.Fatal(err)
				}
			}
			elapsed += time.Since(start)
		}
		report(b, elapsed)
	})
	b.Run("apply", func(b *testing.B) {
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			ns := namespace(b, i, "apply")
			proxy.ResetStats()
			start := time.Now()
			b.StartTimer()
			res, err := prov.Apply(ctx, ns, m, req)
			if err != nil || len(res.Errors) > 0 || res.Created != benchEntities+2 {
				b.Fatalf("%v %+v", err, res)
			}
			elapsed += time.Since(start)
		}
		report(b, elapsed)
	})
	b.Run("reapply-unchanged", func(b *testing.B) {
		ns := namespace(b, 0, "reapply")
		if _, err := prov.Apply(ctx, ns, m, req); err != nil {
			b.Fatal(err)
		}
		proxy.ResetStats()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			res, err := prov.Apply(ctx, ns, m, req)
			if err != nil || res.StateWritten {
				b.Fatalf("%v %+v", err, res)
			}
		}
		report(b, time.Since(start))
	})
}
