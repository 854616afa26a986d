package answer

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
	"github.com/zae-limiter/zae-limiter-go/internal/ddbwire"
)

// readBoth sends one UpdateItem answered by body through the answer's
// reader and one without it, and returns each side's image as the fast
// path decodes it (Image, bucketitem.Decode of the SDK's values).
func readBoth(body []byte) (read, sdk *bucketitem.Image, readErr, sdkErr error, took bool) {
	ctx := context.Background()
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}
	db := ddbwire.Client(body)
	if out, err := db.UpdateItem(ctx, in, Read); err != nil {
		readErr = err
	} else {
		took = Of(out.ResultMetadata) != nil
		if took && len(out.Attributes) != 0 {
			readErr = errors.New("the reader took the answer, but the SDK decoded attributes too")
		} else {
			read, readErr = Image(out)
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
	db := ddbwire.ClientVia(brokenBody{})
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}
	for _, opts := range [][]func(*dynamodb.Options){{Read}, nil} {
		if _, err := db.UpdateItem(context.Background(), in, opts...); err == nil {
			t.Errorf("a broken body answered (options %d)", len(opts))
		}
	}
}

// TestAnswerReaderLeavesALongBodyWhole: an answer of unknown length longer
// than the reader reads at once is handed to the SDK whole, and decoded by
// it.
func TestAnswerReaderLeavesALongBodyWhole(t *testing.T) {
	body := []byte(`{"Attributes":{"rf":{"N":"17"},"resource":{"S":"` + strings.Repeat("x", maxBytes) + `"}}}`)
	db := ddbwire.ClientVia(ddbwire.Trip{Body: body, Header: http.Header{}, Length: -1})
	out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, Read)
	if err != nil {
		t.Fatal(err)
	}
	if Of(out.ResultMetadata) != nil {
		t.Fatal("the reader took an answer it read only in part")
	}
	img, err := Image(out)
	if err != nil || img.RF != 17 || len(img.Resource) != maxBytes {
		t.Fatalf("the SDK decoded rf %d and a resource of %d bytes (%v), want 17 and %d", img.RF, len(img.Resource), err, maxBytes)
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
				item[name] = ddbwire.ScalarValue(r)
			} else {
				item[name] = ddbwire.RandomValue(r, 1)
			}
		}
		body := ddbwire.Answer(t, item)
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
		db := ddbwire.ClientVia(ddbwire.Trip{Body: body, Header: http.Header{"X-Amz-Crc32": {tc.crc}}, Length: int64(len(body))},
			func(o *dynamodb.Options) {
				o.DisableValidateResponseChecksum = false
				o.Logger = logging.LoggerFunc(func(_ logging.Classification, format string, v ...any) {
					logged = append(logged, fmt.Sprintf(format, v...))
				})
			})
		out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, Read)
		if err != nil {
			t.Fatal(err)
		}
		if Of(out.ResultMetadata) == nil {
			t.Fatal("the reader did not take the answer")
		}
		warned := strings.Contains(strings.Join(logged, "\n"), "checksum")
		if warned != tc.warn {
			t.Errorf("crc %s: checksum warning %v, want %v (logged %q)", tc.crc, warned, tc.warn, logged)
		}
	}
}
