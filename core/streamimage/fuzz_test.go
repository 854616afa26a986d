package streamimage_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// FuzzImageFromJSON feeds arbitrary bytes to DecodeEvent and DecodeImage.
// Neither may panic; whatever decodes must agree with aws-lambda-go's own
// decoder, convert to DynamoDB types and back unchanged, and survive a trip
// through JSON.
func FuzzImageFromJSON(f *testing.F) {
	addFixtureSeeds(f)
	for _, seed := range []string{
		`{"PK":{"S":"a1B2c3D4e5F/BUCKET#user-1#gpt-4#0"},"SK":{"S":"#STATE"},"rf":{"N":"1764442859123"}}`,
		`{"l":{"L":[{"M":{"bs":{"BS":["AA==",""]},"n":{"NULL":true}}},{"NS":["1","2.5"]},{"SS":[]}]}}`,
		`{"x":{"BS":[1]}}`,
		`{"Records":[{"dynamodb":{"NewImage":{"b":{"B":"AAEqQQ=="},"t":{"BOOL":true}}}}]}`,
		`{"Records":[null,{"dynamodb":null}]}`,
		`{"Records":[{"dynamodb":{"Keys":{},"NewImage":{"m":{"M":{}}}},"userIdentity":{"type":"Service"}}]}`,
		`{"Records":[{"dynamodb":{"Keys":{"a":{"S":"x"}},"keys":{"a":{"BS":[1]}}}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ev, err := streamimage.DecodeEvent(data); err == nil {
			checkEvent(t, data, ev)
		}
		if img, err := streamimage.DecodeImage(data); err == nil {
			checkImage(t, img)
			var want map[string]events.DynamoDBAttributeValue
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("DecodeImage accepted what encoding/json rejects: %v", err)
			}
			if !reflect.DeepEqual(img, want) {
				t.Fatalf("DecodeImage = %v, encoding/json = %v", img, want)
			}
		}
	})
}

func checkEvent(t *testing.T, data []byte, ev events.DynamoDBEvent) {
	t.Helper()
	// DecodeEvent is at least as strict as aws-lambda-go (so its decoder
	// cannot hit its own panics here) and agrees with it.
	var want events.DynamoDBEvent
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("DecodeEvent accepted what encoding/json rejects: %v", err)
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("DecodeEvent = %+v\nencoding/json = %+v", ev, want)
	}
	for _, rec := range ev.Records {
		for _, img := range []map[string]events.DynamoDBAttributeValue{rec.Change.Keys, rec.Change.NewImage, rec.Change.OldImage} {
			checkImage(t, img)
		}
	}
	// JSON round trip.
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	again, err := streamimage.DecodeEvent(out)
	if err != nil {
		t.Fatalf("re-decode %s: %v", out, err)
	}
	if len(again.Records) != len(ev.Records) {
		t.Fatalf("re-decoded %d records, want %d", len(again.Records), len(ev.Records))
	}
	for i := range ev.Records {
		a, b := comparable(again.Records[i]), comparable(ev.Records[i])
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("record %d after a JSON round trip:\n got %+v\nwant %+v", i, a, b)
		}
	}
}

// comparable blanks what a JSON round trip cannot keep: the timestamp
// (written as float seconds, which neither keeps nanoseconds nor survives a
// zero time) and the difference between an empty image and none (the
// images are omitempty).
func comparable(r events.DynamoDBEventRecord) events.DynamoDBEventRecord {
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}
	for _, img := range []*map[string]events.DynamoDBAttributeValue{&r.Change.Keys, &r.Change.NewImage, &r.Change.OldImage} {
		if len(*img) == 0 {
			*img = nil
		}
	}
	return r
}

func checkImage(t *testing.T, img map[string]events.DynamoDBAttributeValue) {
	t.Helper()
	d, err := streamimage.ImageToDynamoDB(img)
	if err != nil {
		t.Fatalf("ImageToDynamoDB of a decoded image: %v", err)
	}
	back, err := streamimage.ImageFromDynamoDB(d)
	if err != nil {
		t.Fatalf("ImageFromDynamoDB: %v", err)
	}
	if !reflect.DeepEqual(back, img) {
		t.Fatalf("round trip:\n got %v\nwant %v", back, img)
	}
}

// addFixtureSeeds adds every event of testdata to f's corpus.
func addFixtureSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzDecodeEventFast: whatever the fast reading accepts, the slow one
// reads to the same event.
func FuzzDecodeEventFast(f *testing.F) {
	addFixtureSeeds(f)
	for _, seed := range []string{
		`{"Records":[]}`,
		`{"Records":[{}]}`,
		`{"Records":[{"eventID":"1","eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":1764442859,"Keys":{"PK":{"S":"a"},"SK":{"S":"#STATE"}},` +
			`"NewImage":{"rf":{"N":"1"},"c":{"BOOL":true},"n":{"NULL":true}},"OldImage":{},"SequenceNumber":"0012","SizeBytes":40,"StreamViewType":"NEW_AND_OLD_IMAGES"}},` +
			`{"eventID":"2","eventName":"MODIFY","dynamodb":{"SizeBytes":0}}]}`,
		strings.Repeat(" ", 3) + `{ "Records" : [ { "dynamodb" : { "NewImage" : { "a" : { "N" : "1" } , "a" : { "S" : "x" } } } } ] }`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, err := streamimage.DecodeEventFast(data)
		if err != nil {
			if !errors.Is(err, streamimage.ErrFastUnsupported) {
				t.Fatalf("fast reading: %v", err)
			}
			return
		}
		slow, err := streamimage.DecodeEventSlow(data)
		if err != nil {
			t.Fatalf("the fast reading took %q, the slow one refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}
