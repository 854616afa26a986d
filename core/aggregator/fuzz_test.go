package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// fakeDB records snapshot writes and checks each against the rules
// DynamoDB enforces on expressions (every placeholder defined and used).
// Call n (from 1) fails with a throttle when n%3 == 0 and with a
// conditional check failure when n%3 == 1 and n > 1: the fuzz targets reach
// every path of writeRun. Only the fuzz targets use it; every other test
// runs on DynamoDB Local.
type fakeDB struct {
	mu      sync.Mutex
	calls   int
	writes  []*dynamodb.UpdateItemInput
	invalid []string
}

var (
	namePlaceholder  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	valuePlaceholder = regexp.MustCompile(`:[A-Za-z0-9_]+`)
)

func (f *fakeDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.writes = append(f.writes, in)
	expr := *in.UpdateExpression + " " + *in.ConditionExpression
	if got, want := uniq(namePlaceholder.FindAllString(expr, -1)), slices.Sorted(maps.Keys(in.ExpressionAttributeNames)); !slices.Equal(got, want) {
		f.invalid = append(f.invalid, fmt.Sprintf("names used %v, defined %v", got, want))
	}
	if got, want := uniq(valuePlaceholder.FindAllString(expr, -1)), slices.Sorted(maps.Keys(in.ExpressionAttributeValues)); !slices.Equal(got, want) {
		f.invalid = append(f.invalid, fmt.Sprintf("values used %v, defined %v", got, want))
	}
	for _, name := range in.ExpressionAttributeNames {
		if name == "" {
			f.invalid = append(f.invalid, "empty attribute name")
		}
	}
	switch {
	case f.calls%3 == 0:
		return nil, &types.ProvisionedThroughputExceededException{Message: new(string)}
	case f.calls%3 == 1 && f.calls > 1:
		return nil, &types.ConditionalCheckFailedException{Item: map[string]types.AttributeValue{
			in.ExpressionAttributeNames["#sq"]: &types.AttributeValueMemberS{Value: strings.Repeat("0", 39) + "5"},
		}}
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

func (f *fakeDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errors.New("fakeDB: the aggregator never puts")
}

func (f *fakeDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("fakeDB: the aggregator never reads")
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// seeds are stream events: bucket INSERT and MODIFY (one with a soft limit
// in debt and a limit name with `. - _`), a REMOVE, a config record, and
// poison of several kinds.
var seeds = []string{
	`{"Records":[{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1796040000,"SequenceNumber":"100",` +
		`"Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#0"},"SK":{"S":"#STATE"}},` +
		`"NewImage":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#0"},"SK":{"S":"#STATE"},"entity_id":{"S":"u1"},"resource":{"S":"api"},"rf":{"N":"1796040000000"},` +
		`"b_rpm_tk":{"N":"9000"},"b_rpm_cp":{"N":"10000"},"b_rpm_tc":{"N":"1000"},"b_wcu_tk":{"N":"1000000"},"b_wcu_cp":{"N":"1000000"},"b_wcu_tc":{"N":"0"}}}},` +
		`{"eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":1796040060,"SequenceNumber":"101",` +
		`"Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#0"},"SK":{"S":"#STATE"}},` +
		`"OldImage":{"entity_id":{"S":"u1"},"rf":{"N":"1796040000000"},"b_rpm_tk":{"N":"9000"},"b_rpm_cp":{"N":"10000"},"b_rpm_tc":{"N":"1000"}},` +
		`"NewImage":{"entity_id":{"S":"u1"},"rf":{"N":"1796040000000"},"b_rpm_tk":{"N":"-500"},"b_rpm_cp":{"N":"10000"},"b_rpm_tc":{"N":"10500"},"b_rpm_soft":{"N":"1"},` +
		`"b_a.b-c_d_tk":{"N":"1"},"b_a.b-c_d_cp":{"N":"1"},"b_a.b-c_d_tc":{"N":"2500"}}}},` +
		`{"eventName":"REMOVE","dynamodb":{"SequenceNumber":"102","Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#0"},"SK":{"S":"#STATE"}}}},` +
		`{"eventName":"INSERT","dynamodb":{"SequenceNumber":"103","Keys":{"PK":{"S":"aGgReGaToR0/RESOURCE#api"},"SK":{"S":"#CONFIG"}}}}]}`,
	`{"Records":[{"eventName":"MODIFY","dynamodb":{"SequenceNumber":"7","Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#1"},"SK":{"S":"#STATE"}},` +
		`"NewImage":{"entity_id":{"S":"u1"},"rf":{"N":"1"},"b_rpm_tc":{"N":"12abc"}}}},` +
		`{"eventName":"MODIFY","dynamodb":{"SequenceNumber":"8","Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#1"},"SK":{"S":"#STATE"}},` +
		`"NewImage":{"entity_id":{"S":"u1"},"rf":{"N":"1796040000000"},"b_rpm_tc":{"N":"5000"}}}},` +
		`{"eventName":"INSERT","dynamodb":{"SequenceNumber":"x9","Keys":{"PK":{"S":"aGgReGaToR0/BUCKET#u1#api#1"},"SK":{"S":"#STATE"}},` +
		`"NewImage":{"entity_id":{"S":"u1"},"rf":{"N":"1796040000000"},"b_ttl_tc":{"N":"5000"},"b_rpm_tc":{"N":"-9223372036854775808"}}}},` +
		`{"eventName":"INSERT","dynamodb":{"SequenceNumber":"10","Keys":{"PK":{"N":"1"},"SK":{"BOOL":true}}}}]}`,
}

// FuzzDecodeEvent decodes arbitrary event JSON and hands it to Process on a
// fake that fails some writes. Process never panics or errs, and never
// reports a record that is not a usable bucket record; every write it sends
// is well-formed.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := streamimage.DecodeEvent(data)
		if err != nil {
			return
		}
		db := &fakeDB{}
		a, err := New(db, Config{TableName: "t", Windows: []Window{Hourly, Daily, Monthly}, Workers: 2}, Options{
			Logger: quiet, Clock: func() time.Time { return time.Unix(1796040000, 0) },
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Process(context.Background(), ev.Records)
		if err != nil {
			t.Fatalf("Process: %v", err)
		}
		if fail := res.RedeliverFrom; fail != "" {
			usable := false
			for i, rec := range ev.Records {
				if rec.Change.SequenceNumber != fail {
					continue
				}
				if _, out, _ := parseRecord(rec, i); out == outBucket {
					usable = true
				}
			}
			if !usable {
				t.Fatalf("reported %q, which is no usable bucket record", fail)
			}
		}
		if len(db.invalid) > 0 {
			t.Fatalf("malformed writes: %v", db.invalid)
		}
	})
}

// FuzzParseRecord parses arbitrary record JSON. It never panics; a bucket
// record it accepts has a padded sequence number, a bucket id matching its
// key and image, a decoded NewImage, an OldImage exactly when it is a
// MODIFY, an instant in range, and contributions whose names a snapshot can
// hold; its snapshot writes are well-formed.
func FuzzParseRecord(f *testing.F) {
	for _, s := range seeds {
		ev, err := streamimage.DecodeEvent([]byte(s))
		if err != nil {
			f.Fatal(err)
		}
		for _, rec := range ev.Records {
			b, err := jsonRecord(rec)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"BS":[1]}}}}`))
	f.Add([]byte(`{"eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":-1e300,"SequenceNumber":"1"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		payload := append(append([]byte(`{"Records":[`), data...), ']', '}')
		ev, err := streamimage.DecodeEvent(payload)
		if err != nil {
			return
		}
		sameParses(t, payload, ev)
		a, err := New(&fakeDB{}, Config{TableName: "t", Windows: []Window{Hourly, Daily, Monthly}}, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range ev.Records {
			r, out, err := parseRecord(rec, i)
			switch out {
			case outSkipped:
				if r != nil || err != nil {
					t.Fatalf("skipped with %v, %v", r, err)
				}
				continue
			case outPoison:
				if r != nil || err == nil {
					t.Fatalf("poison with %v, %v", r, err)
				}
				var pe *poisonError
				if !errors.As(err, &pe) {
					t.Fatalf("poison error %T", err)
				}
				continue
			}
			if len(r.padded) != schema.SequenceNumberWidth || !strings.HasSuffix(r.padded, r.seq) {
				t.Fatalf("padded %q of %q", r.padded, r.seq)
			}
			d := eventDelivered(&rec)
			if pk, _, _ := d.key(); pk != r.id.PK() || r.newImg == nil || r.newImg.Entity != r.id.Entity {
				t.Fatalf("id %+v for key %q", r.id, pk)
			}
			if (rec.EventName == "MODIFY") != (r.oldImg != nil) || (r.oldImg == nil) != r.oldItem.empty() {
				t.Fatalf("%s with OldImage %v", rec.EventName, r.oldImg)
			}
			if r.instant.Before(minInstant) || r.instant.After(maxInstant) {
				t.Fatalf("instant %v", r.instant)
			}
			contrib, refused := contributions(r.newImg, r.oldImg)
			for _, d := range contrib {
				if !snapshotName(d.name) || (d.tokens == 0 && !d.overdraw) {
					t.Fatalf("contribution %+v", d)
				}
			}
			for _, name := range refused {
				if snapshotName(name) {
					t.Fatalf("refused %q", name)
				}
			}
			r.contrib = contrib
			_ = r.maintenanceRecord()
			keys, byKey := plan([]*bucketRecord{r}, a.cfg.Windows)
			db := &fakeDB{}
			for _, k := range keys {
				for _, run := range byKey[k] {
					_, _ = db.UpdateItem(context.Background(), a.updateInput(run, false, 1))
					_, _ = db.UpdateItem(context.Background(), a.updateInput(run, true, 1))
				}
			}
			if len(db.invalid) > 0 {
				t.Fatalf("malformed writes: %v", db.invalid)
			}
		}
	})
}

// sameParses holds the two forms of a record to one reading: where
// streamimage.ReadEvent reads payload, parsing each of its records gives
// what parsing the record of ev (payload as DecodeEvent reads it) gives.
func sameParses(t *testing.T, payload []byte, ev events.DynamoDBEvent) {
	t.Helper()
	text, err := streamimage.ReadEvent(payload)
	if err != nil {
		return
	}
	if len(text) != len(ev.Records) {
		t.Fatalf("ReadEvent read %d records, DecodeEvent %d", len(text), len(ev.Records))
	}
	for i := range text {
		var fromEvent, fromText bucketRecord
		outE, errE := fromEvent.parse(eventDelivered(&ev.Records[i]), i)
		outT, errT := fromText.parse(textDelivered(&text[i]), i)
		if outE != outT || (errE == nil) != (errT == nil) {
			t.Fatalf("record %d: from the event %v (%v), from the text %v (%v)", i, outE, errE, outT, errT)
		}
		if outE != outBucket {
			continue
		}
		fromEvent.newItem, fromText.newItem, fromEvent.oldItem, fromText.oldItem = image{}, image{}, image{}, image{}
		if !reflect.DeepEqual(fromEvent, fromText) {
			t.Fatalf("record %d:\nfrom the event %+v\nfrom the text  %+v", i, fromEvent, fromText)
		}
	}
}

// FuzzProcessText: wherever streamimage.ReadEvent reads an event,
// ProcessText makes of it what Process makes of the event DecodeEvent
// reads: the same result and the same writes, in the same order.
func FuzzProcessText(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := streamimage.ReadEvent(data)
		if err != nil {
			return
		}
		ev, err := streamimage.DecodeEvent(data)
		if err != nil {
			t.Fatalf("ReadEvent read what DecodeEvent refuses: %v", err)
		}
		sameParses(t, data, ev)
		run := func(process func(*Aggregator) (Result, error)) (Result, []*dynamodb.UpdateItemInput) {
			db := &fakeDB{}
			a, err := New(db, Config{TableName: "t", Windows: []Window{Hourly, Daily, Monthly}, Workers: 1}, Options{
				Logger: quiet, Clock: func() time.Time { return time.Unix(1796040000, 0) },
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := process(a)
			if err != nil {
				t.Fatalf("process: %v", err)
			}
			return res, db.writes
		}
		resE, writesE := run(func(a *Aggregator) (Result, error) { return a.Process(context.Background(), ev.Records) })
		resT, writesT := run(func(a *Aggregator) (Result, error) { return a.ProcessText(context.Background(), text) })
		if resE != resT {
			t.Fatalf("Process %+v, ProcessText %+v", resE, resT)
		}
		if !reflect.DeepEqual(writesE, writesT) {
			t.Fatalf("Process wrote %d items, ProcessText %d, or other ones", len(writesE), len(writesT))
		}
	})
}

// jsonRecord renders a record as Lambda sends it.
func jsonRecord(rec events.DynamoDBEventRecord) ([]byte, error) { return json.Marshal(rec) }

// TestUpdateExpression pins the snapshot write of docs/design.md §6:
// the exact expressions, positional aliases for names with `_ . -`, the
// seq# mark of the shard, and S-typed padded sequence numbers.
func TestUpdateExpression(t *testing.T) {
	a, err := New(&fakeDB{}, Config{TableName: "tbl"}, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(seq string, contrib ...limitDelta) *bucketRecord {
		p, err := schema.PadSequenceNumber(seq)
		if err != nil {
			t.Fatal(err)
		}
		return &bucketRecord{seq: seq, padded: p, contrib: contrib}
	}
	r := &run{window: Daily, windowKey: "2026-11-29T00:00:00Z", start: "2026-11-29T00:00:00Z", shard: shardKey{"aGgReGaToR0", "u1", "llm/gpt-4", 3}}
	r.add(rec("98", limitDelta{name: "a.b-c_d", tokens: 2, overdraw: true}, limitDelta{name: "rpm", tokens: 1}))
	r.add(rec("105", limitDelta{name: "rpm", tokens: -1}))
	in := a.updateInput(r, false, 1234)
	wantSet := "SET entity_id = :e, #res = if_not_exists(#res, :r), #win = if_not_exists(#win, :w), " +
		"#wst = if_not_exists(#wst, :k), GSI2PK = :g2p, GSI2SK = :g2s, " +
		"GSI4PK = if_not_exists(GSI4PK, :g4p), GSI4SK = if_not_exists(GSI4SK, :g4s), " +
		"#ttl = if_not_exists(#ttl, :ttl), #sq = :last ADD #l0 :d0, #l1 :d1, #od0 :o0, #te :events"
	if *in.UpdateExpression != wantSet {
		t.Fatalf("UpdateExpression\n got %s\nwant %s", *in.UpdateExpression, wantSet)
	}
	if *in.ConditionExpression != "attribute_not_exists(#sq) OR #sq < :first" || *in.TableName != "tbl" {
		t.Fatalf("ConditionExpression %s", *in.ConditionExpression)
	}
	wantNames := map[string]string{"#res": "resource", "#win": "window", "#wst": "window_start", "#ttl": "ttl",
		"#te": "total_events", "#sq": "seq#3", "#l0": "a.b-c_d", "#l1": "rpm", "#od0": "a.b-c_d#od"}
	if !maps.Equal(in.ExpressionAttributeNames, wantNames) {
		t.Fatalf("names %v", in.ExpressionAttributeNames)
	}
	pad := func(s string) string { return strings.Repeat("0", 40-len(s)) + s }
	wantValues := map[string]string{":e": "S:u1", ":r": "S:llm/gpt-4", ":w": "S:daily", ":k": "S:2026-11-29T00:00:00Z",
		":g2p": "S:aGgReGaToR0/RESOURCE#llm/gpt-4", ":g2s": "S:USAGE#2026-11-29T00:00:00Z#u1",
		":g4p": "S:aGgReGaToR0", ":g4s": "S:aGgReGaToR0/ENTITY#u1", ":ttl": "N:1234",
		":first": "S:" + pad("98"), ":last": "S:" + pad("105"),
		":d0": "N:2", ":d1": "N:0", ":o0": "N:1", ":events": "N:3"}
	if got := flat(in.ExpressionAttributeValues); !maps.Equal(got, wantValues) {
		t.Fatalf("values\n got %v\nwant %v", got, wantValues)
	}
	if got := flat(in.Key); !maps.Equal(got, map[string]string{"PK": "S:aGgReGaToR0/ENTITY#u1", "SK": "S:#USAGE#llm/gpt-4#2026-11-29T00:00:00Z"}) {
		t.Fatalf("key %v", got)
	}
	if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Fatal("the fallback needs the mark from the failed condition")
	}

	// The fallback's single-record form.
	one := &run{window: r.window, windowKey: r.windowKey, start: r.start, shard: r.shard}
	one.add(r.recs[1])
	in = a.updateInput(one, true, 1234)
	if !strings.HasSuffix(*in.UpdateExpression, "#sq = :seq ADD #l0 :d0, #te :events") ||
		*in.ConditionExpression != "attribute_not_exists(#sq) OR #sq < :seq" {
		t.Fatalf("fallback write %s / %s", *in.UpdateExpression, *in.ConditionExpression)
	}
	if got := flat(in.ExpressionAttributeValues); got[":seq"] != "S:"+pad("105") || got[":d0"] != "N:-1" || got[":events"] != "N:1" {
		t.Fatalf("fallback values %v", got)
	}
}

func flat(m map[string]types.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			out[k] = "N:" + v.Value
		default:
			out[k] = fmt.Sprintf("%T", v)
		}
	}
	return out
}

// TestWindowKey pins the key formats of docs/design.md §6.
func TestWindowKey(t *testing.T) {
	at := time.Date(2026, 2, 7, 13, 59, 59, 999, time.FixedZone("X", -5*3600)) // 18:59:59Z
	for w, want := range map[Window]string{Hourly: "2026-02-07T18:00:00Z", Daily: "2026-02-07T00:00:00Z", Monthly: "2026-02-01T00:00:00Z", "weekly": ""} {
		if got := WindowKey(w, at); got != want {
			t.Errorf("%s: %q, want %q", w, got, want)
		}
	}
}

// TestNewNormalisesWindows: unknown windows are refused, duplicates dropped.
func TestNewNormalisesWindows(t *testing.T) {
	if _, err := New(&fakeDB{}, Config{TableName: "t", Windows: []Window{"weekly"}}, Options{}); err == nil {
		t.Fatal("an unknown window was accepted")
	}
	a, err := New(&fakeDB{}, Config{TableName: "t", Windows: []Window{Daily, Hourly, Daily}}, Options{})
	if err != nil || !slices.Equal(a.cfg.Windows, []Window{Daily, Hourly}) {
		t.Fatalf("windows %v, %v", a.cfg.Windows, err)
	}
}

// TestRecordKeyWithoutPanics: attribute values in states the events
// accessors panic on are a skipped record, not a crash.
func TestRecordKeyWithoutPanics(t *testing.T) {
	rec := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		Keys: map[string]events.DynamoDBAttributeValue{"PK": {}, "SK": events.NewNumberAttribute("1")},
	}}
	if r, out, err := parseRecord(rec, 0); out != outSkipped || r != nil || err != nil {
		t.Fatalf("%v %v %v", r, out, err)
	}
}
