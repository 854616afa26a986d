package streamimage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

// TestFastReadingTakesTheUsualEvent: the events a stream sends (the
// fixtures of insert, modify and remove records) are read by the fast reading, to
// what encoding/json reads; events outside its shape (a TTL delete, with its
// userIdentity, among them) are left to the slow
// one.
func TestFastReadingTakesTheUsualEvent(t *testing.T) {
	for _, file := range []string{"insert.json", "modify.json", "remove.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		fast, err := decodeEventFast(data)
		if err != nil {
			t.Errorf("%s: the fast reading refused it: %v", file, err)
			continue
		}
		slow, err := decodeEventSlow(data)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v\nslow %+v (%v)", file, fast, slow, err)
		}
	}
	for _, data := range []string{
		`{"Records":[{"userIdentity":{"type":"Service"}}]}`,                          // a field it does not read
		`{"Records":[{"eventName":"MODIFY","eventname":"INSERT"}]}`,                  // matched case-insensitively by encoding/json
		`{"Records":[{"eventID":"1","eventID":"2"}]}`,                                // a duplicate key
		`{"Records":[{"dynamodb":{"NewImage":{"m":{"M":{}}}}}]}`,                     // a map attribute
		`{"Records":[{"dynamodb":{"NewImage":{"n":{"NULL":false}}}}]}`,               // NULL false (refused by the slow reading)
		`{"Records":[{"dynamodb":{"ApproximateCreationDateTime":1.5}}]}`,             // not an integer
		`{"Records":[{"dynamodb":{"SequenceNumber":"1\u0032"}}]}`,                    // an escape
		`{"Records":[{"eventSource":"é"}]}`,                                          // not ASCII
		`{"Records":[],"Other":1}`, `{"Records":null}`, `[]`, ``, `{"Records":[]} x`, // the envelope
	} {
		if _, err := decodeEventFast([]byte(data)); !errors.Is(err, ddbjson.ErrUnsupported) {
			t.Errorf("%s: the fast reading took it (%v)", data, err)
		}
	}
	// The strings an event keeps are its own, not views of the payload.
	data := []byte(`{"Records":[{"eventID":"abc","dynamodb":{"Keys":{"PK":{"S":"p"}},"SequenceNumber":"12"}}]}`)
	ev, err := decodeEventFast(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'x'
	}
	if r := ev.Records[0]; r.EventID != "abc" || r.Change.SequenceNumber != "12" || r.Change.Keys["PK"].String() != "p" {
		t.Errorf("the event changed with its payload: %+v", r)
	}
}
