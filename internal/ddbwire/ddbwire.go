// Package ddbwire is test tooling for code that reads DynamoDB's answers
// from their bytes: an item written as DynamoDB writes it on the wire, an
// HTTP transport that answers every request with one body, and random
// attribute values of every type.
package ddbwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Answer is an UpdateItem answer carrying item as DynamoDB writes it on the
// wire ({"Attributes":{"name":{"T":value},...}}), its names sorted. A value
// of no known type fails tb.
func Answer(tb testing.TB, item map[string]types.AttributeValue) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"Attributes":`)
	if err := writeMap(&buf, item); err != nil {
		tb.Fatal(err)
	}
	buf.WriteString(`}`)
	return buf.Bytes()
}

func writeMap(buf *bytes.Buffer, m map[string]types.AttributeValue) error {
	buf.WriteByte('{')
	for i, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(buf, k)
		buf.WriteByte(':')
		if err := writeValue(buf, m[k]); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

func writeValue(buf *bytes.Buffer, v types.AttributeValue) error {
	var err error
	list := func(tag string, n int, each func(i int)) {
		buf.WriteString(`{"` + tag + `":[`)
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			each(i)
		}
		buf.WriteString(`]}`)
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		buf.WriteString(`{"S":`)
		writeString(buf, v.Value)
		buf.WriteString(`}`)
	case *types.AttributeValueMemberN:
		buf.WriteString(`{"N":"` + v.Value + `"}`)
	case *types.AttributeValueMemberB:
		buf.WriteString(`{"B":"` + base64.StdEncoding.EncodeToString(v.Value) + `"}`)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			buf.WriteString(`{"BOOL":true}`)
		} else {
			buf.WriteString(`{"BOOL":false}`)
		}
	case *types.AttributeValueMemberNULL:
		buf.WriteString(`{"NULL":true}`)
	case *types.AttributeValueMemberSS:
		list("SS", len(v.Value), func(i int) { writeString(buf, v.Value[i]) })
	case *types.AttributeValueMemberNS:
		list("NS", len(v.Value), func(i int) { buf.WriteString(`"` + v.Value[i] + `"`) })
	case *types.AttributeValueMemberBS:
		list("BS", len(v.Value), func(i int) { buf.WriteString(`"` + base64.StdEncoding.EncodeToString(v.Value[i]) + `"`) })
	case *types.AttributeValueMemberL:
		list("L", len(v.Value), func(i int) {
			if e := writeValue(buf, v.Value[i]); e != nil && err == nil {
				err = e
			}
		})
	case *types.AttributeValueMemberM:
		buf.WriteString(`{"M":`)
		err = writeMap(buf, v.Value)
		buf.WriteString(`}`)
	default:
		return fmt.Errorf("ddbwire: no JSON for %T", v)
	}
	return err
}

// Trip is an HTTP transport that answers every request with Body (HTTP
// 200, a DynamoDB JSON content type), Header and Length (-1: unknown).
type Trip struct {
	Body   []byte
	Header http.Header
	Length int64
}

// RoundTrip implements http.RoundTripper.
func (a Trip) RoundTrip(req *http.Request) (*http.Response, error) {
	h := a.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: a.Length, Body: io.NopCloser(bytes.NewReader(a.Body)), Request: req}, nil
}

// RandomValue is an attribute value of every type, nested up to depth,
// with the shapes that are small on the wire and large in DynamoDB's count
// (one-digit numbers, empty lists and maps) and the reverse (escaped and
// multi-byte strings).
func RandomValue(r *rand.Rand, depth int) types.AttributeValue {
	str := func() string {
		return []string{"", "a", "é", "\"", "\n", "日本", strings.Repeat("x", r.IntN(40)), "a\u0000b"}[r.IntN(8)]
	}
	num := func() string {
		return []string{"0", "7", "12", "-1", "1795953600001", "0.05", "1e10", "99999999999999999999999999999999999999"}[r.IntN(8)]
	}
	n := r.IntN(4)
	switch k := r.IntN(10); {
	case k == 0:
		return &types.AttributeValueMemberS{Value: str()}
	case k == 1:
		return &types.AttributeValueMemberN{Value: num()}
	case k == 2:
		return &types.AttributeValueMemberB{Value: bytes.Repeat([]byte{0xff}, r.IntN(5))}
	case k == 3:
		return &types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}
	case k == 4:
		return &types.AttributeValueMemberNULL{Value: true}
	case k == 5:
		ss := make([]string, n+1)
		for i := range ss {
			ss[i] = str()
		}
		return &types.AttributeValueMemberSS{Value: ss}
	case k == 6:
		ns := make([]string, n+1)
		for i := range ns {
			ns[i] = num()
		}
		return &types.AttributeValueMemberNS{Value: ns}
	case k == 7:
		return &types.AttributeValueMemberBS{Value: [][]byte{{}, {1, 2}}[:1+r.IntN(2)]}
	case k == 8 || depth == 0:
		l := []types.AttributeValue{}
		for range n * min(depth, 1) {
			l = append(l, RandomValue(r, depth-1))
		}
		return &types.AttributeValueMemberL{Value: l}
	default:
		m := map[string]types.AttributeValue{}
		for i := range n {
			m[str()+string(rune('a'+i))] = RandomValue(r, depth-1)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
}

// ScalarValue is an S, N, BOOL or NULL value, often one the image decoder
// accepts.
func ScalarValue(r *rand.Rand) types.AttributeValue {
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

// Client is an SDK client whose every call is answered by body (HTTP 200,
// its length known).
func Client(body []byte) *dynamodb.Client {
	return ClientVia(Trip{Body: body, Length: int64(len(body))})
}

// ClientVia is an SDK client whose calls rt answers, with no retry and,
// unless an option turns it back on, no checksum validation.
func ClientVia(rt http.RoundTripper, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{},
		BaseEndpoint: aws.String("http://answer.invalid"), DisableValidateResponseChecksum: true, RetryMaxAttempts: 1,
		HTTPClient: &http.Client{Transport: rt}}, optFns...)
}
