package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestHandlerDecodesAsLambda: main's handler, behind aws-lambda-go's
// adapter, sees the event encoding/json makes of the payload, handles it,
// and answers a malformed attribute with an error, not a panic.
func TestHandlerDecodesAsLambda(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	agg, err := aggregator.New(tbl.DB, aggregator.Config{TableName: tbl.Name}, aggregator.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h := lambda.NewHandler(handler(agg))
	payload, err := os.ReadFile(filepath.Join("..", "..", "events", "stream-modify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var viaLambda events.DynamoDBEvent
	if err := json.Unmarshal(payload, &viaLambda); err != nil {
		t.Fatal(err)
	}
	var e streamEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		t.Fatal(err)
	}
	if got, err := json.Marshal(e.ev); err != nil || !bytes.Equal(got, mustMarshal(t, viaLambda)) {
		t.Fatalf("decoded %s (%v), aws-lambda-go %s", got, err, mustMarshal(t, viaLambda))
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("response %s (%v)", out, err)
	}
	if len(scanUsage(t, tbl)) == 0 {
		t.Fatal("no snapshots")
	}
	bad := []byte(`{"Records":[{"eventName":"MODIFY","dynamodb":{"NewImage":{"x":{"BS":[1]}}}}]}`)
	if _, err := h.Invoke(context.Background(), bad); err == nil {
		t.Fatal("a malformed attribute must fail the invocation")
	}
	if _, err := streamimage.DecodeEvent(bad); err == nil {
		t.Fatal("DecodeEvent accepted a malformed attribute")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
