package limiter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
)

// answerClient is an SDK client whose every call is answered by body
// (HTTP 200, its length known).
func answerClient(body []byte) *dynamodb.Client {
	return answerClientVia(answerTrip{body: body, header: http.Header{}, length: int64(len(body))})
}

// answerClientVia is an SDK client whose calls rt answers, with no retry
// and, unless an option turns it back on, no checksum validation.
func answerClientVia(rt http.RoundTripper, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{},
		BaseEndpoint: aws.String("http://answer.invalid"), DisableValidateResponseChecksum: true, RetryMaxAttempts: 1,
		HTTPClient: &http.Client{Transport: rt}}, optFns...)
}

// readBoth sends one UpdateItem answered by body through the answer's
// reader and one without it, and returns each side's image as the fast
// path decodes it (answerImage, bucketitem.Decode of the SDK's values).
func readBoth(body []byte) (read, sdk *bucketitem.Image, readErr, sdkErr error, took bool) {
	ctx := context.Background()
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}
	db := answerClient(body)
	if out, err := db.UpdateItem(ctx, in, readAnswer); err != nil {
		readErr = err
	} else {
		took = bodyImageOf(out.ResultMetadata) != nil
		if took && len(out.Attributes) != 0 {
			readErr = errors.New("the reader took the answer, but the SDK decoded attributes too")
		} else {
			read, readErr = answerImage(out)
		}
	}
	if out, err := db.UpdateItem(ctx, in); err != nil {
		sdkErr = err
	} else {
		img, err := bucketitem.Decode(out.Attributes)
		sdk, sdkErr = &img, err
	}
	return read, sdk, readErr, sdkErr, took
}

// TestAnswerReader: the fast path's answer is read from the body when its
// item is inside ddbjson's subset, and by the SDK otherwise, to the same
// image (or the same kind of error) either way.
func TestAnswerReader(t *testing.T) {
	canned := `{"Attributes":{"PK":{"S":"ns1/ENTITY#e"},"SK":{"S":"#BUCKET#r#0"},"entity_id":{"S":"e"},"resource":{"S":"r"},` +
		`"rf":{"N":"1795953600000"},"vu":{"N":"1795953600001"},"shard_count":{"N":"1"},"cascade":{"BOOL":false},` +
		`"b_rpm_tk":{"N":"999998000"},"b_rpm_cp":{"N":"1000000"},"b_rpm_ra":{"N":"1000000"},"b_rpm_rp":{"N":"60000"},"b_rpm_tc":{"N":"2000"}}}`
	for _, tc := range []struct {
		name, body string
		took       bool
	}{
		{"a bucket", canned, true},
		{"whitespace", strings.ReplaceAll(canned, ",", " ,\n "), true},
		{"an empty item", `{"Attributes":{}}`, true},
		{"an escape", strings.Replace(canned, `"e"}`, `"\u00e9"}`, 1), false},
		{"a map attribute", strings.Replace(canned, `"cascade":{"BOOL":false}`, `"meta":{"M":{"a":{"N":"1"}}}`, 1), false},
		{"consumed capacity", strings.TrimSuffix(canned, "}") + `,"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`, false},
		{"no attributes", `{}`, false},
		{"a corrupt number", strings.Replace(canned, `"rf":{"N":"1795953600000"}`, `"rf":{"N":"1.5"}`, 1), false},
		{"a wrong type", strings.Replace(canned, `"rf":{"N":"1795953600000"}`, `"rf":{"S":"1"}`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, sdk, readErr, sdkErr, took := readBoth([]byte(tc.body))
			if took != tc.took {
				t.Errorf("reader took the answer: %v, want %v", took, tc.took)
			}
			sameReading(t, tc.body, read, sdk, readErr, sdkErr)
		})
	}
	// A body that fails while it is read fails the call, through the
	// reader as without it.
	db := answerClientVia(brokenBody{})
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}
	for _, opts := range [][]func(*dynamodb.Options){{readAnswer}, nil} {
		if _, err := db.UpdateItem(context.Background(), in, opts...); err == nil {
			t.Errorf("a broken body answered (options %d)", len(opts))
		}
	}
}

// TestAnswerReaderLeavesALongBodyWhole: an answer of unknown length longer
// than the reader reads at once is handed to the SDK whole, and decoded by
// it.
func TestAnswerReaderLeavesALongBodyWhole(t *testing.T) {
	body := []byte(`{"Attributes":{"rf":{"N":"17"},"resource":{"S":"` + strings.Repeat("x", maxAnswerBytes) + `"}}}`)
	db := answerClientVia(answerTrip{body: body, header: http.Header{}, length: -1})
	out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, readAnswer)
	if err != nil {
		t.Fatal(err)
	}
	if bodyImageOf(out.ResultMetadata) != nil {
		t.Fatal("the reader took an answer it read only in part")
	}
	img, err := answerImage(out)
	if err != nil || img.RF != 17 || len(img.Resource) != maxAnswerBytes {
		t.Fatalf("the SDK decoded rf %d and a resource of %d bytes (%v), want 17 and %d", img.RF, len(img.Resource), err, maxAnswerBytes)
	}
}

// brokenBody answers with a body that breaks after its first bytes.
type brokenBody struct{}

func (brokenBody) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, ContentLength: 40,
		Body: io.NopCloser(io.MultiReader(strings.NewReader(`{"Attributes":{"rf"`), errReader{})), Request: req}, nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// sameReading fails t unless the two readings of body agree: both fail, or
// both decode, to equal images.
func sameReading(t *testing.T, body string, read, sdk *bucketitem.Image, readErr, sdkErr error) {
	t.Helper()
	if (readErr == nil) != (sdkErr == nil) {
		t.Fatalf("%s: through the reader %v, through the SDK %v", body, readErr, sdkErr)
	}
	if readErr == nil && !reflect.DeepEqual(read, sdk) {
		t.Fatalf("%s: through the reader\n%+v\nthrough the SDK\n%+v", body, read, sdk)
	}
}

// TestAnswerReaderOnRandomItems: items of every attribute type, as
// DynamoDB writes them, read the same through the reader and through the
// SDK, and the reader takes those inside its subset.
func TestAnswerReaderOnRandomItems(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	took := 0
	for i := range 2000 {
		item := map[string]types.AttributeValue{}
		for j := range r.IntN(12) {
			name := []string{"rf", "vu", "b_rpm_tk", "b_rpm_cp", "entity_id", "cascade", "x"}[r.IntN(7)]
			if j%3 == 0 {
				name += string(rune('a' + j))
			}
			if i%2 == 0 {
				item[name] = scalarValue(r)
			} else {
				item[name] = randomValue(r, 1)
			}
		}
		body := answerJSON(t, item)
		read, sdk, readErr, sdkErr, tookIt := readBoth(body)
		sameReading(t, string(body), read, sdk, readErr, sdkErr)
		if tookIt {
			took++
		}
	}
	if took < 100 {
		t.Errorf("the reader took %d of 2000 answers: the comparison is not exercised", took)
	}
}

// scalarValue is an S, N, BOOL or NULL value, often one the image decoder
// accepts.
func scalarValue(r *rand.Rand) types.AttributeValue {
	switch r.IntN(5) {
	case 0:
		return &types.AttributeValueMemberS{Value: []string{"", "e", "a/b#c", "é"}[r.IntN(4)]}
	case 1, 2:
		return &types.AttributeValueMemberN{Value: []string{"0", "7", "-12", "1795953600001", "1.5", "99999999999999999999"}[r.IntN(6)]}
	case 3:
		return &types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// FuzzAnswerReader: for any body, the fast path's image is the same
// through the reader as through the SDK's decoder, or both fail.
func FuzzAnswerReader(f *testing.F) {
	for _, s := range []string{
		`{"Attributes":{"rf":{"N":"17"},"b_rpm_tk":{"N":"5"},"b_rpm_cp":{"N":"10"},"cascade":{"BOOL":true}}}`,
		`{"Attributes":{"rf":{"N":"17"},"rf":{"N":"18"}}}`,
		`{"Attributes":{"rf":{"N":"17"},"rf":{"S":"x"}}}`,
		`{"Attributes":{"entity_id":{"NULL":true}}}`,
		`{"Attributes":{"x":{"N":"1","S":"2"}}}`,
		`{"Attributes":{}}`, `{}`, `{"Attributes":null}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		read, sdk, readErr, sdkErr, _ := readBoth(bytes.Clone(body))
		sameReading(t, string(body), read, sdk, readErr, sdkErr)
	})
}

// TestAnsweredItemUnitsThroughReader: an answer the reader took carries no
// SDK values, and its write units are still those of the item it returned:
// one up to 1 KB (from the answer's length), more above (from its JSON).
func TestAnsweredItemUnitsThroughReader(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sizes := map[int64]int{}
	for range 500 {
		item := map[string]types.AttributeValue{}
		for j := range r.IntN(30) {
			v := scalarValue(r)
			if r.IntN(4) == 0 {
				v = &types.AttributeValueMemberS{Value: strings.Repeat("x", r.IntN(900))}
			}
			item["a"+strings.Repeat("b", j)] = v
		}
		body := answerJSON(t, item)
		out, err := answerClient(body).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, readAnswer)
		if err != nil {
			t.Fatal(err)
		}
		if bodyImageOf(out.ResultMetadata) == nil {
			continue // an item outside the subset: TestAnsweredItemBound's case
		}
		got, want := answeredItemUnits(out.ResultMetadata, out.Attributes), itemUnits(item)
		if got != want {
			t.Fatalf("%d units through the reader, %d for the item %s", got, want, body)
		}
		sizes[want]++
	}
	if sizes[1] == 0 || sizes[2]+sizes[3]+sizes[4] == 0 {
		t.Errorf("units seen %v: want items of one unit and of more", sizes)
	}
}

// TestAnswerReaderKeepsTheChecksum: the reader reads the body through the
// SDK's checksum validation, so a body that does not match its
// X-Amz-Crc32 is still reported (the SDK logs it when it closes the body),
// and a matching one is not.
func TestAnswerReaderKeepsTheChecksum(t *testing.T) {
	body := []byte(`{"Attributes":{"rf":{"N":"17"},"b_rpm_tk":{"N":"5"},"b_rpm_cp":{"N":"10"}}}`)
	for _, tc := range []struct {
		crc  string
		warn bool
	}{{strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), false}, {"12345", true}} {
		var logged []string
		db := answerClientVia(answerTrip{body: body, header: http.Header{"X-Amz-Crc32": {tc.crc}}, length: int64(len(body))},
			func(o *dynamodb.Options) {
				o.DisableValidateResponseChecksum = false
				o.Logger = logging.LoggerFunc(func(_ logging.Classification, format string, v ...any) {
					logged = append(logged, fmt.Sprintf(format, v...))
				})
			})
		out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, readAnswer)
		if err != nil {
			t.Fatal(err)
		}
		if bodyImageOf(out.ResultMetadata) == nil {
			t.Fatal("the reader did not take the answer")
		}
		warned := strings.Contains(strings.Join(logged, "\n"), "checksum")
		if warned != tc.warn {
			t.Errorf("crc %s: checksum warning %v, want %v (logged %q)", tc.crc, warned, tc.warn, logged)
		}
	}
}
