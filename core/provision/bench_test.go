package provision_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
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

// benchBucketsFull is how many buckets in use BenchmarkSyncLimits brings
// in line: the resource with 10,000 active buckets.
const benchBucketsFull = 10_000

// BenchmarkSyncLimits is what a change of a resource's limits costs when
// the resource has 10,000 buckets in use (a tenth under -short), side by
// side in one run (docs/design.md §8, docs/costs.md):
//
//   - floor: one bare conditional UpdateItem per bucket, sent 8 at a time
//     (the controls' default workers), the least that touching every
//     bucket once can cost;
//   - lowered: SetResourceLimits with every bucket out of line (rpm 100 ↔
//     50, alternating per iteration): the config write, its audit, the
//     discovery twice, the reads and one rf-locked write per bucket;
//   - unchanged: SetResourceLimits with the same limits: the same reads,
//     every bucket already in line, no bucket write.
//
// It reports the calls and writes per bucket, and ms per bucket; the
// buckets are written straight into the table as creates make them (one
// limit, the resource's), one entity each.
func BenchmarkSyncLimits(b *testing.B) {
	ctx := context.Background()
	n := benchBucketsFull
	if testing.Short() {
		n /= 10
	}
	tbl := ddbtest.NewTable(b)
	proxy := faultproxy.Start(b, tbl.Endpoint)
	db := proxy.DynamoDB()
	store := config.NewStore(tbl.DB, tbl.Name)
	ns, _, err := store.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "sync-bench")
	if err != nil {
		b.Fatal(err)
	}
	const res = "gpt-4"
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctl := control.New(db, tbl.Name, control.Options{Clock: clock, Logger: quietLogger()})
	rpm := func(c int64) []limit.Limit { return []limit.Limit{limit.PerMinute("rpm", c)} }
	if _, err := ctl.SetResourceLimits(ctx, ns, res, rpm(100), "bench"); err != nil {
		b.Fatal(err)
	}
	var writes []types.WriteRequest
	flush := func() {
		for len(writes) > 0 {
			out, err := tbl.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl.Name: writes}})
			if err != nil {
				b.Fatal(err)
			}
			writes = out.UnprocessedItems[tbl.Name]
		}
	}
	ids := make([]schema.BucketID, n)
	for i := range n {
		ids[i] = schema.BucketID{Namespace: ns, Entity: fmt.Sprintf("api-key-%05d", i), Resource: res}
		nb := bucketitem.New{ID: ids[i], RF: now.UnixMilli(), ShardCount: 1, VU: now.UnixMilli() + 6_000, TTL: now.Unix() + 420,
			Limits: []bucketitem.NewLimit{{Name: "rpm", Tokens: 90_000, Consumed: 10_000, Params: limit.PerMinute("rpm", 100).Params()}}}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: nb.Item()}})
		if len(writes) == 25 {
			flush()
		}
	}
	flush()
	report := func(b *testing.B, elapsed time.Duration) {
		calls, written := 0, 0
		for op, s := range proxy.Stats() {
			calls += s.Forwarded
			switch op {
			case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
				written += s.Forwarded
			}
		}
		per := float64(b.N) * float64(n)
		b.ReportMetric(float64(calls)/per, "calls/bucket")
		b.ReportMetric(float64(written)/per, "writes/bucket")
		b.ReportMetric(float64(elapsed.Microseconds())/1000/per, "ms/bucket")
		b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/op")
	}
	b.Run("floor", func(b *testing.B) {
		proxy.ResetStats()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			jobs := make(chan schema.BucketID)
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for id := range jobs {
						if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl.Name), Key: id.Key().AttributeValues(),
							UpdateExpression: aws.String("SET #m = :m"), ConditionExpression: aws.String("attribute_exists(#pk)"),
							ExpressionAttributeNames:  map[string]string{"#m": "bench_mark", "#pk": schema.AttrPK},
							ExpressionAttributeValues: map[string]types.AttributeValue{":m": schema.Num(int64(i))}}); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			for _, id := range ids {
				jobs <- id
			}
			close(jobs)
			wg.Wait()
		}
		report(b, time.Since(start))
	})
	b.Run("lowered", func(b *testing.B) {
		proxy.ResetStats()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			c := int64(50)
			if i%2 == 1 {
				c = 100
			}
			p, err := ctl.SetResourceLimits(ctx, ns, res, rpm(c), "bench")
			if err != nil || p.Stamped != n {
				b.Fatalf("%+v, %v", p, err)
			}
		}
		report(b, time.Since(start))
	})
	b.Run("unchanged", func(b *testing.B) {
		cur, err := store.GetResourceLimits(ctx, ns, res)
		if err != nil {
			b.Fatal(err)
		}
		proxy.ResetStats()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			p, err := ctl.SetResourceLimits(ctx, ns, res, cur, "bench")
			if err != nil || p.Unchanged != n || p.Stamped != 0 {
				b.Fatalf("%+v, %v", p, err)
			}
		}
		report(b, time.Since(start))
	})
}
