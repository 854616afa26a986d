package condwrite

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// refusalReader is an SDK client answered, with no network, by a 400
// with a given body: what the SDK makes of that answer.
type refusalReader struct {
	client *dynamodb.Client
	body   []byte
}

func newRefusalReader() *refusalReader {
	r := &refusalReader{}
	r.client = offlineClient(func(req *http.Request) (*http.Response, error) {
		return response(req, 400, string(r.body)), nil
	})
	return r
}

// sdkRefusal returns the SDK's refused condition from a 400 answer with
// body, or nil when it reads another error. Not for concurrent use.
func (r *refusalReader) sdkRefusal(body []byte) *types.ConditionalCheckFailedException {
	r.body = body
	_, err := r.client.UpdateItem(context.Background(), snapshotLike())
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf
	}
	return nil
}

// TestReadRefusal: the refused conditions the package reads, as the SDK
// reads them; the answers it leaves to the SDK.
func TestReadRefusal(t *testing.T) {
	reader := newRefusalReader()
	for _, c := range []struct {
		name, body string
		read       bool
	}{
		{"DynamoDB's", `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"PK":{"S":"a"},"n":{"N":"12"},"f":{"BOOL":true},"z":{"NULL":true}}}`, true},
		{"Message capitalised", `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Message":"The conditional request failed"}`, true},
		{"no item", `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"m"}`, true},
		{"null item", `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":null}`, false},
		{"message twice", `{"__type":"#ConditionalCheckFailedException","message":"a","Message":"b"}`, false},
		{"another member", `{"__type":"#ConditionalCheckFailedException","code":"x"}`, false},
		{"two hashes", `{"__type":"a#b#ConditionalCheckFailedException"}`, false},
		{"another error", `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"bad"}`, false},
		{"throttled", `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}`, false},
		{"item outside the subset", `{"__type":"#ConditionalCheckFailedException","Item":{"b":{"B":"AQ=="}}}`, false},
		{"escaped text", `{"__type":"#ConditionalCheckFailedException","Item":{"s":{"S":"a\"b"}}}`, false},
		{"duplicate attribute", `{"__type":"#ConditionalCheckFailedException","Item":{"s":{"S":"a"},"s":{"S":"b"}}}`, false},
		{"not JSON", `<html>`, false},
	} {
		got := readRefusal("", []byte(c.body))
		if (got != nil) != c.read {
			t.Errorf("%s: read %v, want %v", c.name, got != nil, c.read)
			continue
		}
		if got == nil {
			continue
		}
		want := reader.sdkRefusal([]byte(c.body))
		if want == nil {
			t.Fatalf("%s: the SDK reads no refused condition", c.name)
		}
		if got.ErrorMessage() != want.ErrorMessage() || !reflect.DeepEqual(got.Item, want.Item) {
			t.Errorf("%s: read %q %v, the SDK %q %v", c.name, got.ErrorMessage(), got.Item, want.ErrorMessage(), want.Item)
		}
	}
	// The code in the header, when the body has none.
	if readRefusal("ConditionalCheckFailedException:http://internal.amazon.com/coral/com.amazonaws.dynamodb.v20120810/", []byte(`{"message":"m"}`)) == nil {
		t.Error("the header's code was not read")
	}
}

// FuzzReadRefusal: whatever a 400 answer holds, readRefusal does not
// panic, and a refused condition it reads is the SDK's reading of the same
// answer: the same message and the same old item.
func FuzzReadRefusal(f *testing.F) {
	f.Add([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"PK":{"S":"a"},"n":{"N":"12"}}}`))
	f.Add([]byte(`{"__type":"#ConditionalCheckFailedException","Item":{"f":{"BOOL":false},"z":{"NULL":true}}}`))
	f.Add([]byte(`{"__type":"ValidationException"}`))
	reader := newRefusalReader()
	f.Fuzz(func(t *testing.T, body []byte) {
		got := readRefusal("", body)
		if got == nil {
			return
		}
		want := reader.sdkRefusal(body)
		if want == nil {
			t.Fatalf("read a refused condition from %q; the SDK reads none", body)
		}
		if got.ErrorMessage() != want.ErrorMessage() || !reflect.DeepEqual(got.Item, want.Item) {
			t.Fatalf("from %q read %q %v, the SDK %q %v", body, got.ErrorMessage(), got.Item, want.ErrorMessage(), want.Item)
		}
	})
}
