package streampoll_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

type item = map[string]ddbtypes.AttributeValue

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

func bucketPK(entity string, shard int) string {
	return fmt.Sprintf("a1B2c3D4e5F/BUCKET#%s#gpt-4#%d", entity, shard)
}

func bucketKey(entity string, shard int) item {
	return item{"PK": s(bucketPK(entity, shard)), "SK": s("#STATE")}
}

// bucketItem is a bucket item as the limiter writes it, plus one attribute
// of every other type so that the stream carries them all.
func bucketItem(entity string, shard int) item {
	it := item{
		"entity_id": s(entity), "resource": s("gpt-4"),
		"rf": n("1764442859123"), "shard_count": n("1"),
		"cascade": &ddbtypes.AttributeValueMemberBOOL{Value: false},
		"GSI2PK":  s("a1B2c3D4e5F/RESOURCE#gpt-4"), "GSI2SK": s(fmt.Sprintf("BUCKET#%s#%d", entity, shard)),
		"b_rpm_tk": n("99000"), "b_rpm_cp": n("100000"), "b_rpm_ra": n("100000"), "b_rpm_rp": n("60000"), "b_rpm_tc": n("1000"),
		"b_wcu_tk": n("999000"), "b_wcu_cp": n("1000000"), "b_wcu_ra": n("1000000"), "b_wcu_rp": n("1000"), "b_wcu_tc": n("1000"),
		// Every other type, nested.
		"big":       n("-12345678901234567890123456789012345678"),
		"frac":      n("0.000123"),
		"parent_id": &ddbtypes.AttributeValueMemberNULL{Value: true},
		"digest":    &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 0x2a, 0xff}},
		"tags":      &ddbtypes.AttributeValueMemberSS{Value: []string{"beta", "eu", "trial"}},
		"windows":   &ddbtypes.AttributeValueMemberNS{Value: []string{"3600", "86400", "2.5"}},
		"blobs":     &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}, []byte("snapshot")}},
		"config": &ddbtypes.AttributeValueMemberM{Value: item{
			"limits": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
				&ddbtypes.AttributeValueMemberM{Value: item{"name": s("rpm"), "cp": n("100"),
					"sched": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("0 9 * * MON-FRI"), &ddbtypes.AttributeValueMemberBOOL{Value: true}}}}},
				&ddbtypes.AttributeValueMemberNULL{Value: true},
				&ddbtypes.AttributeValueMemberBS{Value: [][]byte{{9}}},
			}},
			"empty": &ddbtypes.AttributeValueMemberM{Value: item{}},
			"list":  &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		}},
	}
	for k, v := range bucketKey(entity, shard) {
		it[k] = v
	}
	return it
}

// streams is a Streams client for the table's emulator; ddblocal.Streams
// carries the empty-map fix (see TestFixLocalEmptyMaps).
func streams(tb *ddbtest.Table) *dynamodbstreams.Client { return tb.Streams }

// unfixedStreams is a Streams client without FixEmptyMaps.
func unfixedStreams(tb *ddbtest.Table) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(ddblocal.Config(), func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(tb.Endpoint)
	})
}

func put(t *testing.T, tb *ddbtest.Table, it item) {
	t.Helper()
	if _, err := tb.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tb.Name), Item: it}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// putKeys writes one small item per PK.
func putKeys(t *testing.T, tb *ddbtest.Table, pks ...string) {
	t.Helper()
	for _, pk := range pks {
		put(t, tb, item{"PK": s(pk), "SK": s("#STATE"), "b_rpm_tc": n("1000")})
	}
}

// canonical sorts set members, which DynamoDB may return in any order.
func canonical(v ddbtypes.AttributeValue) ddbtypes.AttributeValue {
	switch m := v.(type) {
	case *ddbtypes.AttributeValueMemberSS:
		return &ddbtypes.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(m.Value))}
	case *ddbtypes.AttributeValueMemberNS:
		return &ddbtypes.AttributeValueMemberNS{Value: slices.Sorted(slices.Values(m.Value))}
	case *ddbtypes.AttributeValueMemberBS:
		bs := slices.Clone(m.Value)
		slices.SortFunc(bs, bytes.Compare)
		return &ddbtypes.AttributeValueMemberBS{Value: bs}
	case *ddbtypes.AttributeValueMemberL:
		out := make([]ddbtypes.AttributeValue, len(m.Value))
		for i, e := range m.Value {
			out[i] = canonical(e)
		}
		return &ddbtypes.AttributeValueMemberL{Value: out}
	case *ddbtypes.AttributeValueMemberM:
		return &ddbtypes.AttributeValueMemberM{Value: canonicalItem(m.Value)}
	}
	return v
}

func canonicalItem(it item) item {
	if it == nil {
		return nil
	}
	out := make(item, len(it))
	for k, v := range it {
		out[k] = canonical(v)
	}
	return out
}

// sameImage converts a delivered image back to SDK types and compares it
// with what was written.
func sameImage(t *testing.T, what string, got map[string]events.DynamoDBAttributeValue, want item) {
	t.Helper()
	conv, err := streamimage.ImageToDynamoDB(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	a, b := canonicalItem(conv), canonicalItem(want)
	if reflect.DeepEqual(a, b) {
		return
	}
	for k := range a {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("%s: %s = %s, want %s", what, k, render(t, a[k]), render(t, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s: %s missing, want %s", what, k, render(t, b[k]))
		}
	}
}

// render shows an attribute value as Lambda JSON.
func render(t *testing.T, v ddbtypes.AttributeValue) string {
	t.Helper()
	if v == nil {
		return "<none>"
	}
	av, err := streamimage.FromDynamoDB(v)
	if err != nil {
		return err.Error()
	}
	out, err := json.Marshal(av)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

func TestDeliversWritesAsLambdaWould(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	ctx := context.Background()
	start := time.Now()

	first := bucketItem("user-1", 0)
	put(t, tb, first) // INSERT
	upd, err := tb.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(tb.Name),
		Key:                       bucketKey("user-1", 0),
		UpdateExpression:          aws.String("ADD b_rpm_tk :neg, b_rpm_tc :c, b_wcu_tk :wneg, b_wcu_tc :wc"),
		ExpressionAttributeValues: item{":neg": n("-2000"), ":c": n("2000"), ":wneg": n("-1000"), ":wc": n("1000")},
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	}) // MODIFY
	if err != nil {
		t.Fatal(err)
	}
	second := bucketItem("user-2", 3)
	put(t, tb, second) // INSERT
	del, err := tb.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(tb.Name), Key: bucketKey("user-1", 0), ReturnValues: ddbtypes.ReturnValueAllOld,
	}) // REMOVE
	if err != nil {
		t.Fatal(err)
	}
	if upd.Attributes["b_rpm_tc"].(*ddbtypes.AttributeValueMemberN).Value != "3000" {
		t.Fatalf("update gave %v", upd.Attributes["b_rpm_tc"])
	}

	rec := &recorder{}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle})
	st := drain(t, p)
	if st != (streampoll.Stats{Batches: 1, Records: 4}) {
		t.Fatalf("stats = %+v", st)
	}
	batches := rec.all()
	recs := batches[0]
	want := []struct {
		name           string
		keys           item
		newImg, oldImg item
	}{
		{"INSERT", bucketKey("user-1", 0), first, nil},
		{"MODIFY", bucketKey("user-1", 0), upd.Attributes, first},
		{"INSERT", bucketKey("user-2", 3), second, nil},
		{"REMOVE", bucketKey("user-1", 0), nil, del.Attributes},
	}
	ids := map[string]bool{}
	for i, w := range want {
		r := recs[i]
		if r.EventName != w.name {
			t.Errorf("record %d eventName = %s, want %s", i, r.EventName, w.name)
		}
		sameImage(t, fmt.Sprintf("record %d Keys", i), r.Change.Keys, w.keys)
		sameImage(t, fmt.Sprintf("record %d NewImage", i), r.Change.NewImage, w.newImg)
		sameImage(t, fmt.Sprintf("record %d OldImage", i), r.Change.OldImage, w.oldImg)
		if (w.newImg == nil) != (r.Change.NewImage == nil) || (w.oldImg == nil) != (r.Change.OldImage == nil) {
			t.Errorf("record %d: NewImage nil %v, OldImage nil %v", i, r.Change.NewImage == nil, r.Change.OldImage == nil)
		}
		if r.EventSourceArn != tb.StreamARN || r.EventSource != "aws:dynamodb" || r.EventVersion != "1.1" ||
			r.AWSRegion == "" || r.EventID == "" || ids[r.EventID] || r.UserIdentity != nil {
			t.Errorf("record %d envelope = %+v", i, r)
		}
		ids[r.EventID] = true
		c := r.Change
		if c.StreamViewType != "NEW_AND_OLD_IMAGES" || c.SizeBytes <= 0 || c.SequenceNumber == "" {
			t.Errorf("record %d: view %q size %d seq %q", i, c.StreamViewType, c.SizeBytes, c.SequenceNumber)
		}
		if i > 0 && !seqLess(recs[i-1].Change.SequenceNumber, c.SequenceNumber) {
			t.Errorf("sequence numbers not increasing: %s then %s", recs[i-1].Change.SequenceNumber, c.SequenceNumber)
		}
		// DynamoDB Local truncates the time to the minute (docs/design.md §1).
		at := c.ApproximateCreationDateTime.Time
		if at.IsZero() || at.Before(start.Truncate(time.Minute)) || at.After(time.Now()) {
			t.Errorf("record %d ApproximateCreationDateTime = %v (writes began %v)", i, at, start)
		}
	}
	if st := drain(t, p); st != (streampoll.Stats{}) {
		t.Fatalf("second drain = %+v", st)
	}
	putKeys(t, tb, "later")
	if st := drain(t, p); st != (streampoll.Stats{Batches: 1, Records: 1}) {
		t.Fatalf("drain after one more write = %+v", st)
	}
}

// The JSON of a delivered event is what the aggregator's -event mode reads:
// it must decode, with encoding/json and with streamimage, to the same event.
func TestDeliveredEventJSONRoundTrips(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	written := bucketItem("user-1", 0)
	put(t, tb, written)
	put(t, tb, bucketItem("user-1", 1))
	rec := &recorder{}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle})
	drain(t, p)
	ev := events.DynamoDBEvent{Records: rec.all()[0]}

	data, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var viaJSON events.DynamoDBEvent
	if err := json.Unmarshal(data, &viaJSON); err != nil {
		t.Fatal(err)
	}
	viaDecode, err := streamimage.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []events.DynamoDBEvent{viaJSON, viaDecode} {
		if len(got.Records) != 2 {
			t.Fatalf("%d records", len(got.Records))
		}
		for i := range got.Records {
			a, b := got.Records[i], ev.Records[i]
			if !a.Change.ApproximateCreationDateTime.Equal(b.Change.ApproximateCreationDateTime.Time) {
				t.Errorf("record %d time %v, want %v", i, a.Change.ApproximateCreationDateTime, b.Change.ApproximateCreationDateTime)
			}
			a.Change.ApproximateCreationDateTime, b.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}, events.SecondsEpochTime{}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("record %d after JSON:\n got %+v\nwant %+v", i, a, b)
			}
		}
		sameImage(t, "NewImage after JSON", got.Records[0].Change.NewImage, written)
	}
}

func TestBatchItemFailureRedeliversFromFailedRecord(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1", "k2", "k3", "k4", "k5")
	var failedSeq string
	rec := &recorder{respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 0 {
			failedSeq = ev.Records[2].Change.SequenceNumber
			return fail(ev, "k3"), nil
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, BatchSize: 3, MaxRetries: 3})
	st := drain(t, p)
	// The re-delivery starts at the failed record and is filled up with
	// later records; the first two never come back.
	if got := joined(rec.pks()); got != "k1,k2,k3 | k3,k4,k5" {
		t.Fatalf("batches = %s", got)
	}
	if got := rec.all()[1][0].Change.SequenceNumber; got != failedSeq {
		t.Fatalf("re-delivery starts at %s, want %s", got, failedSeq)
	}
	if st != (streampoll.Stats{Batches: 2, Records: 6, Redeliveries: 1, Failures: 1}) {
		t.Fatalf("stats = %+v", st)
	}
}

func TestHandlerErrorRedeliversSameBatch(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1", "k2", "k3", "k4")
	rec := &recorder{respond: func(call int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 0 {
			return events.DynamoDBEventResponse{}, errors.New("no DynamoDB client")
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, BatchSize: 2, MaxRetries: 3})
	st := drain(t, p)
	if got := joined(rec.pks()); got != "k1,k2 | k1,k2 | k3,k4" {
		t.Fatalf("batches = %s", got)
	}
	b := rec.all()
	if !equalBatches(b[0], b[1]) {
		t.Fatalf("re-delivered batch differs:\n%+v\n%+v", b[0], b[1])
	}
	if st != (streampoll.Stats{Batches: 3, Records: 6, Redeliveries: 1, Failures: 1}) {
		t.Fatalf("stats = %+v", st)
	}
}

func equalBatches(a, b []events.DynamoDBEventRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Change.ApproximateCreationDateTime.Equal(y.Change.ApproximateCreationDateTime.Time) {
			return false
		}
		x.Change.ApproximateCreationDateTime, y.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}, events.SecondsEpochTime{}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func TestMaxRetriesDropsToOnFailure(t *testing.T) {
	poison := errors.New("poison record")
	respond := func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.Change.Keys["PK"].String() == "k2" {
				return events.DynamoDBEventResponse{}, poison
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	for _, tc := range []struct {
		name        string
		bisect      bool
		wantBatches string
		wantDropped string
		wantStats   streampoll.Stats
	}{
		{"whole batch", false, "k1,k2 | k1,k2 | k1,k2 | k3,k4", "k1,k2",
			streampoll.Stats{Batches: 4, Records: 8, Redeliveries: 2, Failures: 3, Dropped: 2}},
		{"bisect", true, "k1,k2 | k1 | k2 | k2 | k2 | k3,k4", "k2",
			streampoll.Stats{Batches: 6, Records: 8, Redeliveries: 4, Failures: 4, Dropped: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
			putKeys(t, tb, "k1", "k2", "k3", "k4")
			var drops []streampoll.Failure
			rec := &recorder{respond: respond}
			p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{
				Handler: rec.handle, BatchSize: 2, MaxRetries: 2, BisectOnError: tc.bisect,
				OnFailure: func(_ context.Context, f streampoll.Failure) { drops = append(drops, f) },
			})
			st := drain(t, p)
			if got := joined(rec.pks()); got != tc.wantBatches {
				t.Fatalf("batches = %s\nwant      %s", got, tc.wantBatches)
			}
			if len(drops) != 1 {
				t.Fatalf("%d drops", len(drops))
			}
			d := drops[0]
			var pks []string
			for _, r := range d.Records {
				pks = append(pks, r.Change.Keys["PK"].String())
			}
			if joined([][]string{pks}) != tc.wantDropped || d.Attempts != 3 || !errors.Is(d.Err, poison) || d.ShardID == "" {
				t.Fatalf("drop = %v attempts %d err %v shard %q", pks, d.Attempts, d.Err, d.ShardID)
			}
			if st != tc.wantStats {
				t.Fatalf("stats = %+v\nwant    %+v", st, tc.wantStats)
			}
		})
	}
}

func TestInvalidItemIdentifierFailsWholeBatch(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1", "k2", "k3")
	rec := &recorder{respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		id := "" // empty: Lambda fails the whole batch
		if call == 1 {
			id = "99999" // names no record of the batch
		}
		resp := fail(ev, "k3") // a valid one alongside does not help
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
		return resp, nil
	}}
	var drop streampoll.Failure
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, MaxRetries: 1,
		OnFailure: func(_ context.Context, f streampoll.Failure) { drop = f }})
	st := drain(t, p)
	if got := joined(rec.pks()); got != "k1,k2,k3 | k1,k2,k3" {
		t.Fatalf("batches = %s", got)
	}
	var ife *streampoll.ItemFailuresError
	if !errors.As(drop.Err, &ife) || !ife.Invalid || len(drop.Records) != 3 || ife.Identifiers[1] != "99999" {
		t.Fatalf("drop = %+v", drop)
	}
	if st.Dropped != 3 || st.Failures != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestBatchSizeRespected(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1", "k2", "k3", "k4", "k5", "k6", "k7")
	rec := &recorder{}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, BatchSize: 3})
	st := drain(t, p)
	if got := joined(rec.pks()); got != "k1,k2,k3 | k4,k5,k6 | k7" {
		t.Fatalf("batches = %s", got)
	}
	if st != (streampoll.Stats{Batches: 3, Records: 7}) {
		t.Fatalf("stats = %+v", st)
	}
}

func TestLatestSkipsEarlierWrites(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "before1", "before2")
	rec := &recorder{}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, StartingPosition: streampoll.Latest})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	putKeys(t, tb, "after1", "after2")
	drain(t, p)
	if got := joined(rec.pks()); got != "after1,after2" {
		t.Fatalf("batches = %s", got)
	}
}

// Poll delivers records written while it runs: the injected wait hands
// control to the test, which writes and lets Poll go on.
func TestPollDeliversNewWrites(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	idle := make(chan struct{})
	resume := make(chan struct{})
	wait := func(ctx context.Context, _ time.Duration) error {
		select {
		case idle <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-resume:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rec := &recorder{}
	p := newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle, Wait: wait})
	done := make(chan error, 1)
	go func() { done <- p.Poll(ctx) }()

	await := func() {
		t.Helper()
		select {
		case <-idle:
		case err := <-done:
			t.Fatalf("Poll returned early: %v", err)
		case <-ctx.Done():
			t.Fatal("Poll never went idle")
		}
	}
	await() // k1 delivered, nothing more
	if got := joined(rec.pks()); got != "k1" {
		t.Fatalf("before the write: %s", got)
	}
	putKeys(t, tb, "k2", "k3")
	resume <- struct{}{}
	await()
	if got := joined(rec.pks()); got != "k1 | k2,k3" {
		t.Fatalf("after the write: %s", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll = %v", err)
	}
}

// DynamoDB Local writes an empty map into stream records as {} and the SDK
// decodes that as nil or as a copy of a neighbouring value;
// FixEmptyMaps restores {"M": {}}.
func TestFixLocalEmptyMaps(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	written := item{
		"PK": s("a1B2c3D4e5F/AUDIT#user-1"), "SK": s("#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"),
		"details": &ddbtypes.AttributeValueMemberM{Value: item{
			"a_limits": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("rpm"), &ddbtypes.AttributeValueMemberM{Value: item{}}}},
			"b_empty":  &ddbtypes.AttributeValueMemberM{Value: item{}},
			"c_nested": &ddbtypes.AttributeValueMemberM{Value: item{"inner": &ddbtypes.AttributeValueMemberM{Value: item{}}}},
		}},
		"empty": &ddbtypes.AttributeValueMemberM{Value: item{}},
	}
	put(t, tb, written)

	// Without the fix: report what the emulator and SDK do today.
	rec := &recorder{}
	p := newPoller(t, unfixedStreams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle})
	if _, err := p.DrainOnce(context.Background()); err != nil {
		t.Logf("without the fix: %v", err)
	} else if b := rec.all(); len(b) == 1 {
		got, _ := streamimage.ImageToDynamoDB(b[0][0].Change.NewImage)
		if reflect.DeepEqual(canonicalItem(got), canonicalItem(written)) {
			t.Logf("without the fix the image is right: the emulator or the SDK changed")
		} else {
			t.Logf("without the fix the image is wrong: details = %s", render(t, got["details"]))
		}
	}

	rec = &recorder{}
	p = newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: rec.handle})
	drain(t, p)
	b := rec.all()
	if len(b) != 1 || len(b[0]) != 1 {
		t.Fatalf("batches = %v", rec.pks())
	}
	sameImage(t, "NewImage", b[0][0].Change.NewImage, written)
}

// On DynamoDB's own stream, a poller resumed from an earlier one's saved
// checkpoint delivers only the records written since, in order.
func TestResumeOnDynamoDBLocal(t *testing.T) {
	tb := ddbtest.NewBareTable(t, ddbtest.WithStream())
	putKeys(t, tb, "k1", "k2")
	var saved checkpoints
	first := &recorder{}
	drain(t, newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: first.handle, OnCheckpoint: saved.save}))
	if got := joined(first.pks()); got != "k1,k2" {
		t.Fatalf("first run delivered %s", got)
	}
	// Saved and read back as a process would.
	b, err := json.Marshal(saved.last(t))
	if err != nil {
		t.Fatal(err)
	}
	var cp streampoll.Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}

	putKeys(t, tb, "k3", "k4")
	resumed := &recorder{}
	drain(t, newPoller(t, streams(tb), tb.StreamARN, streampoll.Options{Handler: resumed.handle, Resume: &cp}))
	if got := joined(resumed.pks()); got != "k3,k4" {
		t.Fatalf("resumed run delivered %s, want k3,k4", got)
	}
}
