package streamimage_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

func TestDecodeEventErrors(t *testing.T) {
	cases := []struct {
		name     string
		json     string
		sentinel error
		path     string
	}{
		{"BS element not a string", `{"Records":[{"dynamodb":{"NewImage":{"keys":{"BS":["AA==",1]}}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.NewImage.keys[1]"},
		{"unknown type", `{"Records":[{},{"dynamodb":{"OldImage":{"x":{"M":{"y":{"L":[{"DOC":"?"}]}}}}}}]}`,
			streamimage.ErrUnsupportedType, "Records[1].dynamodb.OldImage.x.y[0]"},
		{"two types", `{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"a","N":"1"}}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.Keys.PK"},
		{"N not a string", `{"Records":[{"dynamodb":{"NewImage":{"rf":{"N":1764442859123}}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.NewImage.rf"},
		{"NULL false", `{"Records":[{"dynamodb":{"NewImage":{"p":{"NULL":false}}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.NewImage.p"},
		{"null attribute", `{"Records":[{"dynamodb":{"NewImage":{"p":null}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.NewImage.p"},
		{"bad base64", `{"Records":[{"dynamodb":{"NewImage":{"b":{"B":"%%%"}}}}]}`,
			streamimage.ErrMalformed, "Records[0].dynamodb.NewImage.b"},
		{"S null", `{"Records":[{"dynamodb":{"NewImage":{"a b":{"S":null}}}}]}`,
			streamimage.ErrMalformed, `Records[0].dynamodb.NewImage["a b"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := streamimage.DecodeEvent([]byte(tc.json))
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want %v", err, tc.sentinel)
			}
			var pe *streamimage.PathError
			if !errors.As(err, &pe) || pe.Path != tc.path {
				t.Fatalf("err = %v, want path %q", err, tc.path)
			}
		})
	}
	if _, err := streamimage.DecodeEvent([]byte(`{"Records":`)); err == nil {
		t.Fatal("truncated JSON decoded")
	}
}

// The reason DecodeEvent exists: aws-lambda-go's decoder panics on this.
func TestLambdaDecoderPanicsWhereDecodeEventDoesNot(t *testing.T) {
	data := []byte(`{"Records":[{"dynamodb":{"NewImage":{"keys":{"BS":[1]}}}}]}`)
	func() {
		defer func() {
			if recover() == nil {
				t.Log("aws-lambda-go no longer panics on a non-string BS element")
			}
		}()
		var ev events.DynamoDBEvent
		_ = json.Unmarshal(data, &ev)
	}()
	if _, err := streamimage.DecodeEvent(data); err == nil {
		t.Fatal("DecodeEvent accepted a non-string BS element")
	}
}

func TestDecodeImage(t *testing.T) {
	img, err := streamimage.DecodeImage([]byte(`{"PK":{"S":"a1B2c3D4e5F/BUCKET#user-1#gpt-4#0"},"b_rpm_tk":{"N":"-1.50"},"l":{"L":[{"NULL":true}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if img["PK"].String() != "a1B2c3D4e5F/BUCKET#user-1#gpt-4#0" || img["b_rpm_tk"].Number() != "-1.50" || !img["l"].List()[0].IsNull() {
		t.Fatalf("DecodeImage = %v", img)
	}
	if img, err := streamimage.DecodeImage([]byte(`null`)); img != nil || err != nil {
		t.Fatalf("DecodeImage(null) = %v, %v", img, err)
	}
	for _, bad := range []string{``, `[]`, `{"a":{"S":"x"}} x`, `{"a":{"S":"x"}`} {
		if _, err := streamimage.DecodeImage([]byte(bad)); !errors.Is(err, streamimage.ErrMalformed) {
			t.Errorf("DecodeImage(%q) err = %v", bad, err)
		}
	}
}

// Duplicate image fields (JSON field names match case-insensitively) merge
// exactly as they do in encoding/json.
func TestDecodeEventMergesLikeEncodingJSON(t *testing.T) {
	data := []byte(`{"records":[{"DYNAMODB":{"Keys":{"a":{"S":"x"}},"keys":{"b":{"N":"1"}}},"eventname":"INSERT"}]}`)
	var want events.DynamoDBEvent
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	got, err := streamimage.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 1 || len(got.Records[0].Change.Keys) != 2 || !equalEvents(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func equalEvents(a, b events.DynamoDBEvent) bool {
	if len(a.Records) != len(b.Records) {
		return false
	}
	for i := range a.Records {
		if !equalRecords(a.Records[i], b.Records[i]) {
			return false
		}
	}
	return true
}
