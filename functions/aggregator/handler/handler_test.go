package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// newHandler is the handler of cfg (its table is tbl) with its maintainer,
// logging to nowhere.
func newHandler(t *testing.T, tbl *ddbtest.Table, cfg aggregator.Config) *handler.Handler {
	t.Helper()
	h, err := handler.New(tbl.DB, handler.Settings{Config: cfg}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHandlerDecodesAsLambda: the handler, behind aws-lambda-go's adapter
// as main starts it (a lambda.Handler, handed the payload's bytes), sees
// the event encoding/json makes of the payload, handles it, and answers a
// malformed attribute with an error, not a panic.
func TestHandlerDecodesAsLambda(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	h := lambda.NewHandler(newHandler(t, tbl, aggregator.Config{TableName: tbl.Name}))
	payload, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "stream-modify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var viaLambda events.DynamoDBEvent
	if err := json.Unmarshal(payload, &viaLambda); err != nil {
		t.Fatal(err)
	}
	e, err := streamimage.DecodeEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := json.Marshal(e); err != nil || !bytes.Equal(got, mustMarshal(t, viaLambda)) {
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

// TestInvokeTakesTheTextAsHandleTakesTheEvent: every sample event, handed
// to Invoke (read as text where streamimage.ReadEvent reads it, decoded
// where it does not) over the Lambda's client (a condwrite.DB, which sends
// the snapshot writes itself) and decoded for Handle over the SDK client,
// on two tables with one clock: the same response and the same items. The
// samples hold events of both kinds, and writes are sent directly.
func TestInvokeTakesTheTextAsHandleTakesTheEvent(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "events", "stream-*.json"))
	if err != nil || len(files) < 6 {
		t.Fatalf("sample events: %v %v", files, err)
	}
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	read, written := 0, 0
	var direct int64
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := streamimage.ReadEvent(payload); err == nil {
				read++
			}
			cfg := func(tbl *ddbtest.Table) handler.Settings {
				return handler.Settings{Clock: clock, Config: aggregator.Config{
					TableName: tbl.Name, Windows: []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly},
				}}
			}
			quietLog := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
			viaText, viaEvent := ddbtest.NewTable(t), ddbtest.NewTable(t)
			db := condwrite.New(context.Background(), viaText.DB)
			ht, err := handler.New(db, cfg(viaText), quietLog)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { direct += db.Stats().Succeeded }()
			he, err := handler.New(viaEvent.DB, cfg(viaEvent), quietLog)
			if err != nil {
				t.Fatal(err)
			}
			out, err := ht.Invoke(context.Background(), payload)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := streamimage.DecodeEvent(payload)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := he.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustMarshal(t, resp); !bytes.Equal(out, want) {
				t.Errorf("Invoke answered %s, Handle %s", out, want)
			}
			got, want := scanAll(t, viaText), scanAll(t, viaEvent)
			if len(got) > 0 {
				written++
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("items after Invoke:\n%v\nafter Handle:\n%v", got, want)
			}
		})
	}
	if read == 0 || read == len(files) || written == 0 || direct == 0 {
		t.Fatalf("ReadEvent read %d of %d sample events, %d wrote items, %d writes sent directly: both paths must be taken, and items written directly", read, len(files), written, direct)
	}
}

// scanAll returns every item of tbl but the version record (which the
// harness stamps with the time it made the table), as strings sorted by
// key.
func scanAll(t *testing.T, tbl *ddbtest.Table) []string {
	t.Helper()
	out, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range out.Items {
		if sk, ok := it[schema.AttrSK].(*types.AttributeValueMemberS); ok && sk.Value == schema.SKVersion {
			continue
		}
		var attrs []string
		for k, v := range it {
			attrs = append(attrs, fmt.Sprintf("%s=%v", k, reflect.ValueOf(v).Elem().Field(0).Interface()))
		}
		sort.Strings(attrs)
		items = append(items, strings.Join(attrs, " "))
	}
	sort.Strings(items)
	return items
}

// TestSampleEvents runs every file in events/ through RunEvent (the -event
// mode) on DynamoDB Local: each is a valid Lambda event, nothing is reported
// (the poison record is skipped), and the samples that carry consumption
// write their snapshots.
func TestSampleEvents(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "events", "stream-*.json"))
	if err != nil || len(files) < 6 {
		t.Fatalf("sample events: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tbl := ddbtest.NewTable(t)
			cfg := aggregator.Config{TableName: tbl.Name}
			if filepath.Base(f) == "stream-midnight-first.json" {
				cfg.Windows = []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}
			}
			h := newHandler(t, tbl, cfg)
			var out bytes.Buffer
			if err := h.RunEvent(context.Background(), f, &out); err != nil {
				t.Fatal(err)
			}
			var resp events.DynamoDBEventResponse
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("response %q: %v", out.String(), err)
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures reported: %+v", resp.BatchItemFailures)
			}
			snaps := scanUsage(t, tbl)
			switch filepath.Base(f) {
			case "stream-remove.json":
				if len(snaps) != 0 {
					t.Fatalf("a REMOVE wrote %d snapshots", len(snaps))
				}
			case "stream-midnight-first.json":
				// One token at 23:59:30 on 30 November, one at 00:00:10,
				// 00:59:50 and 01:00:05 on 1 December: every window has its
				// own item with its own count.
				got := map[string]string{}
				for _, it := range snaps {
					sk := it["SK"].(*types.AttributeValueMemberS).Value
					got[strings.TrimPrefix(sk, "#USAGE#gpt-4#")] = it["window"].(*types.AttributeValueMemberS).Value + " " +
						it["rpm"].(*types.AttributeValueMemberN).Value
				}
				want := map[string]string{
					"2026-11-30T23:00:00Z": "hourly 1", "2026-11-30T00:00:00Z": "daily 1", "2026-11-01T00:00:00Z": "monthly 1",
					"2026-12-01T00:00:00Z#hourly": "hourly 2", "2026-12-01T01:00:00Z": "hourly 1",
					"2026-12-01T00:00:00Z#daily": "daily 3", "2026-12-01T00:00:00Z": "monthly 3",
				}
				if !maps.Equal(got, want) {
					t.Fatalf("snapshots %v, want %v", got, want)
				}
			case "stream-doubling.json":
				if len(snaps) == 0 {
					t.Fatal("no snapshots")
				}
				clone := getItem(t, tbl, schema.BucketKey("a1B2c3D4e5F", "hot-key", "gpt-4", 1))
				if clone == nil {
					t.Fatal("the doubling did not clone shard 0 into shard 1")
				}
			default:
				if len(snaps) == 0 {
					t.Fatal("no snapshots")
				}
			}
		})
	}
}

func TestRunEventRejectsBadInput(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	h := newHandler(t, tbl, aggregator.Config{TableName: tbl.Name})
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"Records": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.RunEvent(context.Background(), bad, &bytes.Buffer{}); err == nil {
		t.Fatal("a truncated event file must be an error")
	}
	if err := h.RunEvent(context.Background(), filepath.Join(t.TempDir(), "missing.json"), &bytes.Buffer{}); err == nil {
		t.Fatal("a missing event file must be an error")
	}
}

func scanUsage(t *testing.T, tbl *ddbtest.Table) []map[string]types.AttributeValue {
	t.Helper()
	out, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var snaps []map[string]types.AttributeValue
	for _, it := range out.Items {
		if sk, ok := it["SK"].(*types.AttributeValueMemberS); ok && len(sk.Value) > 7 && sk.Value[:7] == "#USAGE#" {
			snaps = append(snaps, it)
		}
	}
	return snaps
}

func getItem(t *testing.T, tbl *ddbtest.Table, k schema.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: k.AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
