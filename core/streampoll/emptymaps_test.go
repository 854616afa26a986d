package streampoll

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestFixEmptyMapsBody(t *testing.T) {
	in := []byte(`{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"a"}},` +
		`"NewImage":{"e":{},"m":{"M":{"x":{},"y":{"N":"1"}}},"l":{"L":[{},{"S":"s"}]}},` +
		`"OldImage":{"n":{"N":"12345678901234567890"}}}}]}`)
	out, ok := fixEmptyMaps(in)
	if !ok {
		t.Fatal("nothing fixed")
	}
	var got, want any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(`{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"a"}},`+
		`"NewImage":{"e":{"M":{}},"m":{"M":{"x":{"M":{}},"y":{"N":"1"}}},"l":{"L":[{"M":{}},{"S":"s"}]}},`+
		`"OldImage":{"n":{"N":"12345678901234567890"}}}}]}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fixed body = %s", out)
	}
	if !bytes.Contains(out, []byte(`"12345678901234567890"`)) {
		t.Fatal("a number string changed")
	}
	if _, ok := fixEmptyMaps([]byte(`{"Records":[{"dynamodb":{"NewImage":{"m":{"M":{"a":{"S":"b"}}}}}}]}`)); ok {
		t.Fatal("fixed a body with no empty map")
	}
	if _, ok := fixEmptyMaps([]byte(`{}{`)); ok {
		t.Fatal("fixed a body that is not JSON")
	}
}
