package benchkit

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func TestSummarisePercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, unsorted input
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	r := Summarise(lat, 2*time.Second)
	if r.N != 100 || r.P50 != 50*time.Millisecond || r.P99 != 99*time.Millisecond {
		t.Fatalf("got n=%d p50=%s p99=%s, want 100, 50ms, 99ms", r.N, r.P50, r.P99)
	}
	if r.OpsPerSec != 50 {
		t.Fatalf("ops/s = %v, want 50", r.OpsPerSec)
	}
	if lat[0] != 100*time.Millisecond {
		t.Fatal("Summarise reordered its input")
	}
	one := Summarise([]time.Duration{7}, 0)
	if one.P50 != 7 || one.P99 != 7 || one.OpsPerSec != 0 {
		t.Fatalf("single sample: %+v", one)
	}
	if (Summarise(nil, time.Second) != Result{}) {
		t.Fatal("empty input must give a zero result")
	}
}

// TestFloorsWriteWhatTheyClaim runs each floor on the emulator and checks the
// item moved by exactly the debit, and that calls and write units are counted.
func TestFloorsWriteWhatTheyClaim(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	var m Meter
	up, err := FloorUpdateItem(ctx, tbl.DB, tbl.Name, &m)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := FloorTransactWrite(ctx, tbl.DB, tbl.Name, &m)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := up(ctx, i); err != nil {
			t.Fatal(err)
		}
		if err := tx(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.calls.Load(); got != 6 {
		t.Errorf("calls = %d, want 6", got)
	}
	// 3 × 1 WCU for the single-item update, 3 × 2 items × 2 WCU for the transaction.
	if got := m.wcu.Load(); got != 15000 {
		t.Errorf("write units ×1000 = %d, want 15000", got)
	}
	for _, pk := range []string{"bench/BUCKET#floor#update#0", "bench/BUCKET#floor-child#txn#0", "bench/BUCKET#floor-parent#txn#0"} {
		out, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: pk},
				"SK": &types.AttributeValueMemberS{Value: "#STATE"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if tc := out.Item["b_x_tc"].(*types.AttributeValueMemberN).Value; tc != "3000" {
			t.Errorf("%s: b_x_tc = %s, want 3000", pk, tc)
		}
	}
}
