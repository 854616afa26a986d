package condwrite_test

import (
	"context"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// BenchmarkSnapshotWrite sends the snapshot write's pattern (a conditional
// SET and ADD, refused nowhere: each write's mark is past the last) to
// DynamoDB Local through condwrite and through the SDK client alone,
// interleaved (benchkit.PairedCost), and reports condwrite's cost over
// the SDK's: CPU (ns-ratio), allocations and bytes, and each side's
// allocations and bytes per write.
func BenchmarkSnapshotWrite(b *testing.B) {
	tbl := ddbtest.NewBareTable(b)
	db := condwrite.New(context.Background(), tbl.DB)
	var seqDirect, seqSDK int
	viaDirect := func() error {
		seqDirect++
		_, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, "direct", seqDirect, 1))
		return err
	}
	viaSDK := func() error {
		seqSDK++
		_, err := tbl.DB.UpdateItem(context.Background(), seqWrite(tbl.Name, "sdk", seqSDK, 1))
		return err
	}
	b.ResetTimer()
	op, ref, err := benchkit.PairedCost(b.N, viaDirect, viaSDK)
	if err != nil {
		b.Fatal(err)
	}
	if c := db.Stats(); c.Succeeded != int64(b.N) {
		b.Fatalf("counts %+v, want all %d writes sent directly", c, b.N)
	}
	b.ReportMetric(op.CPU/ref.CPU, "ns-ratio")
	b.ReportMetric(op.Allocs/ref.Allocs, "allocs-ratio")
	b.ReportMetric(op.Bytes/ref.Bytes, "B-ratio")
	b.ReportMetric(op.Allocs, "allocs/write")
	b.ReportMetric(op.Bytes, "B/write")
	b.ReportMetric(ref.Allocs, "sdk-allocs/write")
	b.ReportMetric(ref.Bytes, "sdk-B/write")
}
