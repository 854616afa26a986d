package streamimage_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// TestReadEventIsDecodeEvent: the fixtures' events, read by ReadEvent and
// made events records, are what DecodeEvent reads; their images convert to
// the SDK's values as ImageToDynamoDB converts DecodeEvent's.
func TestReadEventIsDecodeEvent(t *testing.T) {
	for _, file := range []string{"insert.json", "modify.json", "remove.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := streamimage.ReadEvent(data)
		if err != nil {
			t.Fatalf("%s: ReadEvent: %v", file, err)
		}
		ev, err := streamimage.DecodeEvent(data)
		if err != nil || len(ev.Records) != len(recs) {
			t.Fatalf("%s: DecodeEvent: %d records, %v", file, len(ev.Records), err)
		}
		for i := range recs {
			if got := recs[i].Event(); !reflect.DeepEqual(got, ev.Records[i]) {
				t.Errorf("%s record %d:\nReadEvent   %+v\nDecodeEvent %+v", file, i, got, ev.Records[i])
			}
			ch := ev.Records[i].Change
			for _, pair := range []struct {
				name  string
				text  streamimage.Image
				event map[string]events.DynamoDBAttributeValue
			}{{"Keys", recs[i].Keys, ch.Keys}, {"NewImage", recs[i].NewImage, ch.NewImage}, {"OldImage", recs[i].OldImage, ch.OldImage}} {
				want, err := streamimage.ImageToDynamoDB(pair.event)
				if err != nil {
					t.Fatal(err)
				}
				if got := pair.text.DynamoDB(); !reflect.DeepEqual(got, want) {
					t.Errorf("%s record %d %s: DynamoDB %v, ImageToDynamoDB %v", file, i, pair.name, got, want)
				}
				if got := pair.text.Len(); got != len(want) {
					t.Errorf("%s record %d %s: Len %d, want %d", file, i, pair.name, got, len(want))
				}
			}
		}
	}
}

// TestImageReadsItsText: Str, Has and Len on an image's text; the views
// ReadEvent returns change with the payload, the maps made of them do not.
func TestImageReadsItsText(t *testing.T) {
	data := []byte(`{"Records":[{"eventID":"e1","eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":1796040000,` +
		`"Keys":{"PK":{"S":"p"},"SK":{"S":"#STATE"}},"NewImage":{"PK":{"S":"p"},"n":{"N":"12"},"b":{"BOOL":false},"z":{"NULL":true}},"SequenceNumber":"7"}}]}`)
	recs, err := streamimage.ReadEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if r.EventID != "e1" || r.EventName != "MODIFY" || r.SequenceNumber != "7" || r.Created.Unix() != 1796040000 || r.OldImage != "" {
		t.Fatalf("record %+v", r)
	}
	img := r.NewImage
	for _, c := range []struct {
		name    string
		str     string
		isS, in bool
	}{{"PK", "p", true, true}, {"n", "12", false, true}, {"b", "", false, true}, {"z", "", false, true}, {"x", "", false, false}} {
		s, ok := img.Str(c.name)
		if ok != c.isS || (ok && s != c.str) || img.Has(c.name) != c.in {
			t.Errorf("%s: Str = %q, %v; Has = %v", c.name, s, ok, img.Has(c.name))
		}
	}
	if img.Len() != 4 || streamimage.Image("").Len() != 0 || streamimage.Image(`{}`).Len() != 0 {
		t.Errorf("Len %d", img.Len())
	}
	if streamimage.Image("").Events() != nil || streamimage.Image("").DynamoDB() != nil {
		t.Error("an absent image converts to a map")
	}
	owned, sdk := img.Events(), img.DynamoDB()
	for i := range data {
		if data[i] == 'p' {
			data[i] = 'q'
		}
	}
	if s, _ := r.Keys.Str("PK"); s != "q" {
		t.Errorf("ReadEvent's strings are not views of the payload: %q", s)
	}
	if owned["PK"].String() != "p" || sdk["PK"] == nil || reflect.ValueOf(sdk["PK"]).Elem().Field(0).String() != "p" {
		t.Errorf("the converted image changed with its payload: %v %v", owned["PK"], sdk["PK"])
	}
}

// TestReadEventRefusesAnImageItCannotKeepAsText: a name given twice (a
// map would keep the last), a NULL false, another type: ErrUnsupported,
// and DecodeEvent still reads or refuses the event as before.
func TestReadEventRefusesAnImageItCannotKeepAsText(t *testing.T) {
	for _, data := range []string{
		`{"Records":[{"dynamodb":{"NewImage":{"a":{"N":"1"},"a":{"S":"x"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"a":{"NULL":false}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"a":{"L":[]}}}}]}`,
		`{"Records":[{"userIdentity":{"type":"Service"}}]}`,
	} {
		if _, err := streamimage.ReadEvent([]byte(data)); !errors.Is(err, streamimage.ErrUnsupported) {
			t.Errorf("%s: ReadEvent = %v", data, err)
		}
	}
	ev, err := streamimage.DecodeEvent([]byte(`{"Records":[{"dynamodb":{"NewImage":{"a":{"N":"1"},"a":{"S":"x"}}}}]}`))
	if err != nil || ev.Records[0].Change.NewImage["a"].String() != "x" {
		t.Errorf("DecodeEvent of a duplicated name: %v, %v", ev, err)
	}
}
