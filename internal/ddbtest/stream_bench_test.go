package ddbtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// BenchmarkStreamRecordsPileUp measures why a harness table has no stream
// unless a test asks for one (WithStream; docs/design.md §1): the CPU
// DynamoDB Local spends per write, on a table with the schema's stream and
// on one without, as the emulator's stream records pile up. It runs on an
// emulator of its own; each pile is a fresh table of each kind taking the
// same counter writes (ADD, 50 items), one after the other, and the JVM's
// CPU time is read from /proc around it (clock ticks of 10 ms). It reports
// the milliseconds of emulator CPU per write in the first pile and in the
// last, with and without the stream. It measures itself: run it with
// -benchtime=1x (-short: 2 piles of 100 writes, not 5 of 2,000).
func BenchmarkStreamRecordsPileUp(b *testing.B) {
	piles, writes := 5, 2000
	if testing.Short() {
		piles, writes = 2, 100
	}
	srv, err := start(quickJIT(false))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	cpu := func() int64 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", srv.PID))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command name, which is in parentheses:
		// utime and stime are the 12th and 13th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		s, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("/proc/%d/stat: %q", srv.PID, stat)
		}
		return u + s
	}
	perWrite := func(tbl *Table) float64 {
		before := cpu()
		for i := range writes {
			_, err := tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(tbl.Name),
				Key: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: "bench/ENTITY#" + strconv.Itoa(i%50)},
					"SK": &types.AttributeValueMemberS{Value: "#BUCKET#api#0"},
				},
				UpdateExpression:          aws.String("ADD c :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		return float64(cpu()-before) * 10 / float64(writes)
	}
	var first, last [2]float64 // [without, with] the stream
	for p := range piles {
		for k, opts := range [2][]schema.TableOption{nil, {WithStream()}} {
			tbl, err := create(srv.Endpoint, TableName(fmt.Sprintf("%s-%d-%d", b.Name(), p, k)), opts)
			if err != nil {
				b.Fatal(err)
			}
			ms := perWrite(tbl)
			if p == 0 {
				first[k] = ms
			}
			last[k] = ms
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(first[0], "first-pile-ms/write")
	b.ReportMetric(last[0], "last-pile-ms/write")
	b.ReportMetric(first[1], "stream-first-pile-ms/write")
	b.ReportMetric(last[1], "stream-last-pile-ms/write")
}
