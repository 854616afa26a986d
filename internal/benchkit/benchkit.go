// Package benchkit measures DynamoDB-bound operations for `make bench`:
// per-operation latency percentiles, throughput, and the DynamoDB calls and
// write units each operation spends. It also provides the floors every later
// benchmark is compared with, side by side in the same run: a bare
// conditional UpdateItem and a 2-item TransactWriteItems.
package benchkit

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Op is one measured operation; i counts from 0.
type Op func(ctx context.Context, i int) error

// Meter counts what an operation spends. Ops add to it; Measure reports the
// per-operation averages. It is safe for concurrent use.
type Meter struct {
	calls atomic.Int64
	wcu   atomic.Int64 // write capacity units × 1000
	rcu   atomic.Int64 // read capacity units × 1000
}

// Write records one DynamoDB write call and the capacity it reported.
// DynamoDB Local fills only the total CapacityUnits, so that is the fallback
// when WriteCapacityUnits is absent.
func (m *Meter) Write(cc ...types.ConsumedCapacity) {
	m.calls.Add(1)
	for _, c := range cc {
		m.wcu.Add(milli(c.WriteCapacityUnits, c.CapacityUnits))
	}
}

// WriteTxn records one TransactWriteItems call. DynamoDB Local reports each
// item at the cost of a standard write; DynamoDB charges a transactional write
// two units per 1 KB, so the reported units are doubled.
func (m *Meter) WriteTxn(cc ...types.ConsumedCapacity) {
	m.calls.Add(1)
	for _, c := range cc {
		m.wcu.Add(2 * milli(c.WriteCapacityUnits, c.CapacityUnits))
	}
}

// Read records one DynamoDB read call and the capacity it reported.
func (m *Meter) Read(cc ...types.ConsumedCapacity) {
	m.calls.Add(1)
	for _, c := range cc {
		m.rcu.Add(milli(c.ReadCapacityUnits, c.CapacityUnits))
	}
}

func milli(specific, total *float64) int64 {
	switch {
	case specific != nil:
		return int64(*specific * 1000)
	case total != nil:
		return int64(*total * 1000)
	}
	return 0
}

// Result is what Measure observed.
type Result struct {
	N                              int
	P50, P99                       time.Duration
	OpsPerSec                      float64
	CallsPerOp, WCUPerOp, RCUPerOp float64
}

// Measure runs op b.N times in sequence, timing each call, and reports
// p50-µs, p99-µs, ops/s and, when a meter is given, calls/op, WCU/op and
// RCU/op as benchmark metrics.
func Measure(b *testing.B, m *Meter, op Op) Result {
	b.Helper()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	if m != nil {
		m.calls.Store(0)
		m.wcu.Store(0)
		m.rcu.Store(0)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(ctx, i); err != nil {
			b.Fatalf("op %d: %v", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	total := time.Since(start)
	b.StopTimer()
	r := Summarise(lat, total)
	if m != nil && r.N > 0 {
		r.CallsPerOp = float64(m.calls.Load()) / float64(r.N)
		r.WCUPerOp = float64(m.wcu.Load()) / 1000 / float64(r.N)
		r.RCUPerOp = float64(m.rcu.Load()) / 1000 / float64(r.N)
		b.ReportMetric(r.CallsPerOp, "calls/op")
		b.ReportMetric(r.WCUPerOp, "WCU/op")
		b.ReportMetric(r.RCUPerOp, "RCU/op")
	}
	b.ReportMetric(float64(r.P50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.P99.Microseconds()), "p99-µs")
	b.ReportMetric(r.OpsPerSec, "ops/s")
	return r
}

// Summarise computes percentiles (nearest rank) and throughput from
// per-operation latencies and the wall time they took together.
func Summarise(lat []time.Duration, total time.Duration) Result {
	r := Result{N: len(lat)}
	if len(lat) == 0 {
		return r
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	r.P50 = percentile(s, 50)
	r.P99 = percentile(s, 99)
	if total > 0 {
		r.OpsPerSec = float64(len(s)) / total.Seconds()
	}
	return r
}

// percentile returns the nearest-rank p-th percentile of sorted samples.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
