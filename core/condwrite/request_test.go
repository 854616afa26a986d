package condwrite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// bodyCatcher is an SDK client whose requests are caught before they leave
// (answered "{}" with no network): the bodies the SDK sends.
type bodyCatcher struct {
	client *dynamodb.Client
	body   []byte
}

func newBodyCatcher() *bodyCatcher {
	c := &bodyCatcher{}
	c.client = offlineClient(func(r *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		c.body = b
		return response(r, 200, "{}"), nil
	})
	return c
}

// offlineClient is an SDK client (no retries, no checksum validation)
// whose requests never leave the process: do answers each.
func offlineClient(do doFunc) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-west-2",
		Credentials:                     credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts:                1,
		DisableValidateResponseChecksum: true,
		HTTPClient:                      do,
	})
}

// response is a JSON 1.0 response to r with status and body.
func response(r *http.Request, status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: r}
}

// sdkBody returns the body the SDK client sends for in, or false when the
// SDK refuses to send it. Not for concurrent use.
func (c *bodyCatcher) sdkBody(in *dynamodb.UpdateItemInput) ([]byte, bool) {
	c.body = nil
	if _, err := c.client.UpdateItem(context.Background(), in); err != nil {
		return nil, false
	}
	return c.body, true
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		tb.Fatalf("%s is not JSON: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		tb.Fatalf("%s is not JSON: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// snapshotLike is an UpdateItem of the aggregator's snapshot shape.
func snapshotLike() *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: aws.String("limits"),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "NS#ENTITY#key-1"},
			"SK": &types.AttributeValueMemberS{Value: "#USAGE#gpt-4#2026-11-29T12:00:00Z"},
		},
		UpdateExpression:    aws.String("SET #sq = :last ADD #l0 :d0, #te :events"),
		ConditionExpression: aws.String("attribute_not_exists(#sq) OR #sq < :first"),
		ExpressionAttributeNames: map[string]string{
			"#sq": "seq#0", "#l0": "rpm", "#te": "total_events",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":first":  &types.AttributeValueMemberS{Value: "000000000000000000001"},
			":last":   &types.AttributeValueMemberS{Value: "000000000000000000009"},
			":d0":     &types.AttributeValueMemberN{Value: "7"},
			":events": &types.AttributeValueMemberN{Value: "9"},
			":ok":     &types.AttributeValueMemberBOOL{Value: true},
			":none":   &types.AttributeValueMemberNULL{Value: true},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// TestRequestIsTheSDKs: the body the package sends is the SDK's, member
// for member, for the snapshot write's shape and for text that needs
// escaping.
func TestRequestIsTheSDKs(t *testing.T) {
	escaped := snapshotLike()
	escaped.Key["PK"] = &types.AttributeValueMemberS{Value: "a\"b\\c\n\r\t\x00\x1f\u00e9\u2028😀"}
	escaped.ExpressionAttributeNames["#l0"] = "limit.with-odd_chars\"\\"
	none := snapshotLike()
	none.ReturnValues = types.ReturnValueNone
	none.ReturnConsumedCapacity = types.ReturnConsumedCapacityNone
	none.ReturnItemCollectionMetrics = types.ReturnItemCollectionMetricsNone
	emptyNames := snapshotLike()
	emptyNames.ExpressionAttributeNames = map[string]string{}
	catcher := newBodyCatcher()
	for name, in := range map[string]*dynamodb.UpdateItemInput{
		"snapshot": snapshotLike(), "escaped": escaped, "NONE spelled out": none, "empty names": emptyNames,
	} {
		got, ok := appendUpdate(nil, in)
		if !ok {
			t.Fatalf("%s: not sent directly", name)
		}
		want, sent := catcher.sdkBody(in)
		if !sent {
			t.Fatalf("%s: the SDK refused it", name)
		}
		if !sameJSON(t, got, want) {
			t.Errorf("%s:\n got  %s\n want %s", name, got, want)
		}
	}
}

// TestShapesItDoesNotSend: every shape outside the package's subset is
// refused, so the SDK client sends it.
func TestShapesItDoesNotSend(t *testing.T) {
	cases := map[string]func(*dynamodb.UpdateItemInput){
		"no condition":         func(in *dynamodb.UpdateItemInput) { in.ConditionExpression = nil },
		"empty condition":      func(in *dynamodb.UpdateItemInput) { in.ConditionExpression = aws.String("") },
		"no update expression": func(in *dynamodb.UpdateItemInput) { in.UpdateExpression = nil },
		"no table":             func(in *dynamodb.UpdateItemInput) { in.TableName = nil },
		"table ARN": func(in *dynamodb.UpdateItemInput) {
			in.TableName = aws.String("arn:aws:dynamodb:eu-west-1:123456789012:table/limits")
		},
		"no key":            func(in *dynamodb.UpdateItemInput) { in.Key = nil },
		"ALL_NEW":           func(in *dynamodb.UpdateItemInput) { in.ReturnValues = types.ReturnValueAllNew },
		"consumed capacity": func(in *dynamodb.UpdateItemInput) { in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal },
		"collection metrics": func(in *dynamodb.UpdateItemInput) {
			in.ReturnItemCollectionMetrics = types.ReturnItemCollectionMetricsSize
		},
		"legacy updates": func(in *dynamodb.UpdateItemInput) {
			in.AttributeUpdates = map[string]types.AttributeValueUpdate{}
		},
		"legacy expected": func(in *dynamodb.UpdateItemInput) { in.Expected = map[string]types.ExpectedAttributeValue{} },
		"legacy operator": func(in *dynamodb.UpdateItemInput) { in.ConditionalOperator = types.ConditionalOperatorAnd },
		"binary value": func(in *dynamodb.UpdateItemInput) {
			in.ExpressionAttributeValues[":b"] = &types.AttributeValueMemberB{Value: []byte{1}}
		},
		"string set": func(in *dynamodb.UpdateItemInput) {
			in.ExpressionAttributeValues[":ss"] = &types.AttributeValueMemberSS{Value: []string{"a"}}
		},
		"map value": func(in *dynamodb.UpdateItemInput) {
			in.ExpressionAttributeValues[":m"] = &types.AttributeValueMemberM{}
		},
		"nil value":          func(in *dynamodb.UpdateItemInput) { in.ExpressionAttributeValues[":nil"] = nil },
		"invalid UTF-8 text": func(in *dynamodb.UpdateItemInput) { in.Key["PK"] = &types.AttributeValueMemberS{Value: "a\xffb"} },
		"invalid UTF-8 name": func(in *dynamodb.UpdateItemInput) { in.ExpressionAttributeNames["#x"] = "\xc3" },
	}
	for name, change := range cases {
		in := snapshotLike()
		change(in)
		if _, ok := appendUpdate(nil, in); ok {
			t.Errorf("%s: taken for a direct send", name)
		}
	}
	if _, ok := appendUpdate(nil, nil); ok {
		t.Error("nil input taken for a direct send")
	}
}

// TestEveryMemberIsWeighed: appendUpdate decides on every member of
// UpdateItemInput. A member an SDK upgrade adds fails this test until the
// package either sends it or refuses inputs that set it.
func TestEveryMemberIsWeighed(t *testing.T) {
	weighed := []string{
		"AttributeUpdates", "ConditionExpression", "ConditionalOperator", "Expected",
		"ExpressionAttributeNames", "ExpressionAttributeValues", "Key", "ReturnConsumedCapacity",
		"ReturnItemCollectionMetrics", "ReturnValues", "ReturnValuesOnConditionCheckFailure",
		"TableName", "UpdateExpression",
	}
	var members []string
	ty := reflect.TypeFor[dynamodb.UpdateItemInput]()
	for i := range ty.NumField() {
		if f := ty.Field(i); f.IsExported() {
			members = append(members, f.Name)
		}
	}
	slices.Sort(members)
	if !slices.Equal(members, weighed) {
		t.Fatalf("UpdateItemInput's members are %v; the package weighs %v", members, weighed)
	}
}

// FuzzRequestIsTheSDKs: for any input the package takes, its body is the
// SDK's (as JSON values); text outside valid UTF-8 is never taken.
func FuzzRequestIsTheSDKs(f *testing.F) {
	f.Add("limits", "NS#ENTITY#k", "SET #a = :v", "attribute_not_exists(#a)", "#a", "rpm", ":v", "text", "12", byte(0), byte(0))
	f.Add("t", "q\"uote\\", "ADD #n :d", "#n < :d", "#n", "n.a-me", ":d", "\x00\n", "-1.5e3", byte(1), byte(2))
	f.Add("t", "k", "SET #a = :v", "c", "#a", "\xff", ":v", "\u2028", "x", byte(2), byte(3))
	catcher := newBodyCatcher()
	f.Fuzz(func(t *testing.T, table, pk, update, cond, alias, name, placeholder, text, number string, kind, returns byte) {
		in := &dynamodb.UpdateItemInput{
			TableName:                aws.String(table),
			Key:                      map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}},
			UpdateExpression:         aws.String(update),
			ConditionExpression:      aws.String(cond),
			ExpressionAttributeNames: map[string]string{alias: name},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":n": &types.AttributeValueMemberN{Value: number},
			},
		}
		switch kind % 4 {
		case 0:
			in.ExpressionAttributeValues[placeholder] = &types.AttributeValueMemberS{Value: text}
		case 1:
			in.ExpressionAttributeValues[placeholder] = &types.AttributeValueMemberBOOL{Value: len(text)%2 == 0}
		case 2:
			in.ExpressionAttributeValues[placeholder] = &types.AttributeValueMemberNULL{Value: true}
		case 3:
			in.ExpressionAttributeValues[placeholder] = &types.AttributeValueMemberB{Value: []byte(text)}
		}
		switch returns % 4 {
		case 1:
			in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		case 2:
			in.ReturnValues = types.ReturnValueNone
		case 3:
			in.ReturnValues = types.ReturnValueUpdatedNew
		}
		got, ok := appendUpdate(nil, in)
		if !ok {
			return
		}
		sentText := []string{table, pk, update, cond, alias, name, placeholder, number}
		if kind%4 == 0 {
			sentText = append(sentText, text) // a BOOL or a NULL sends none of it
		}
		for _, s := range sentText {
			if !utf8.ValidString(s) {
				t.Fatalf("took an input with invalid UTF-8 %q", s)
			}
		}
		if kind%4 == 3 || returns%4 == 3 || cond == "" {
			t.Fatalf("took an input outside the subset: kind %d, returns %d, condition %q", kind%4, returns%4, cond)
		}
		if !json.Valid(got) {
			t.Fatalf("body is not JSON: %q", got)
		}
		want, sent := catcher.sdkBody(in)
		if !sent {
			return // the SDK refuses it before sending; so would DynamoDB
		}
		if !sameJSON(t, got, want) {
			t.Fatalf("\n got  %s\n want %s", got, want)
		}
	})
}
