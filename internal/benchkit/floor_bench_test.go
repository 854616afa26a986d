package benchkit_test

import (
	"context"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// BenchmarkFloor prints the two floors every later benchmark is compared
// with: a bare conditional UpdateItem (ADD with a condition, ALL_NEW) and a
// 2-item TransactWriteItems, on DynamoDB Local, on a table without a stream
// as the limiter's benchmarks use (stream records pile up in the emulator
// and slow its writes down).
func BenchmarkFloor(b *testing.B) {
	tbl := ddbtest.NewTable(b)
	ctx := context.Background()
	b.Run("UpdateItem", func(b *testing.B) {
		var m benchkit.Meter
		op, err := benchkit.FloorUpdateItem(ctx, tbl.DB, tbl.Name, &m)
		if err != nil {
			b.Fatal(err)
		}
		benchkit.Measure(b, &m, op)
	})
	b.Run("TransactWriteItems2", func(b *testing.B) {
		var m benchkit.Meter
		op, err := benchkit.FloorTransactWrite(ctx, tbl.DB, tbl.Name, &m)
		if err != nil {
			b.Fatal(err)
		}
		benchkit.Measure(b, &m, op)
	})
}
