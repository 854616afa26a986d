package limiter

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// TestItemUnits: the write-unit estimate of docs/costs.md — a number's
// size from its significant digits, an item's from its names and values,
// one unit per started KB and at least one.
func TestItemUnits(t *testing.T) {
	for s, want := range map[string]int{
		"0": 2, "1": 2, "12": 2, "123": 3, "1000": 2, "-1795953600001": 8, "0.05": 2, "1.50": 2, "105.0": 3, "1.5e10": 2, "12345678901234567890": 11,
	} {
		if got := numberSize(s); got != want {
			t.Errorf("numberSize(%q) = %d, want %d", s, got, want)
		}
	}
	item := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "ns/BUCKET#e#r#0"},                                                              // 2 + 15
		"n":  &types.AttributeValueMemberN{Value: "1000"},                                                                         // 1 + 2
		"ok": &types.AttributeValueMemberBOOL{Value: true},                                                                        // 2 + 1
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNULL{}}},                      // 1 + 3 + 2
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}}, // 1 + 3 + 3
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}},                                                           // 2 + 3
	}
	if got := itemSize(item); got != 17+3+3+6+7+5 {
		t.Errorf("itemSize = %d, want %d", got, 17+3+3+6+7+5)
	}
	for size, want := range map[int]int64{0: 1, 1000: 1, 1024: 1, 1025: 2, 3000: 3} {
		it := map[string]types.AttributeValue{"s": &types.AttributeValueMemberS{Value: strings.Repeat("x", max(size-1, 0))}}
		if size == 0 {
			it = nil
		}
		if got := itemUnits(it); got != want {
			t.Errorf("itemUnits of %d bytes = %d, want %d", size, got, want)
		}
	}
}

// TestGlobalTracerProviderUnsetStartsNoSpan: with no provider given and
// none set globally, the limiter recognises OpenTelemetry's global
// default and starts no span (its spans would record nothing and
// allocate); a no-op provider starts none either; any other provider
// does. When an OpenTelemetry upgrade moves the default's type, this
// fails before TestAcquireAllocs does.
func TestGlobalTracerProviderUnsetStartsNoSpan(t *testing.T) {
	if !isGlobalDefault(otel.GetTracerProvider()) {
		t.Fatalf("the global default tracer provider (%T) is not recognised", otel.GetTracerProvider())
	}
	for _, c := range []struct {
		name string
		o    Options
		gate traceGate
		on   bool
	}{
		{"unset", Options{}, traceGlobal, false},
		{"no-op", Options{TracerProvider: tracenoop.NewTracerProvider()}, traceOff, false},
		{"SDK", Options{TracerProvider: sdktrace.NewTracerProvider()}, traceOn, true},
	} {
		tel, err := newTelemetry(c.o, "t")
		if err != nil {
			t.Fatal(err)
		}
		if tel.gate != c.gate || tel.tracing() != c.on {
			t.Errorf("%s: gate %d, tracing %v; want %d, %v", c.name, tel.gate, tel.tracing(), c.gate, c.on)
		}
	}
}

// FuzzNumberSize: the size of any number string DynamoDB could return
// (or any string at all) is at least 2 bytes and at most one per two
// characters plus two, and never panics.
func FuzzNumberSize(f *testing.F) {
	for _, s := range []string{"0", "-1795953600001", "1.50", "105.0", "1e10", "-0.000", "", "9999999999999999999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := numberSize(s)
		if hi := (max(len(s), 1)+1)/2 + 1; n < 2 || n > hi {
			t.Fatalf("numberSize(%q) = %d, want 2..%d", s, n, hi)
		}
		item := map[string]types.AttributeValue{s: &types.AttributeValueMemberN{Value: s}}
		if got := itemSize(item); got != len(s)+n {
			t.Fatalf("itemSize of {%q: N %q} = %d, want %d", s, s, got, len(s)+n)
		}
	})
}

// answerJSON is an UpdateItem answer carrying item as DynamoDB writes it
// on the wire ({"Attributes":{"name":{"T":value},...}}).
func answerJSON(t *testing.T, item map[string]types.AttributeValue) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"Attributes":`)
	writeMapJSON(t, &buf, item)
	buf.WriteString(`}`)
	return buf.Bytes()
}

func writeMapJSON(t *testing.T, buf *bytes.Buffer, m map[string]types.AttributeValue) {
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
		writeStringJSON(t, buf, k)
		buf.WriteByte(':')
		writeValueJSON(t, buf, m[k])
	}
	buf.WriteByte('}')
}

func writeStringJSON(t *testing.T, buf *bytes.Buffer, s string) {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(b)
}

func writeValueJSON(t *testing.T, buf *bytes.Buffer, v types.AttributeValue) {
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
		writeStringJSON(t, buf, v.Value)
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
		list("SS", len(v.Value), func(i int) { writeStringJSON(t, buf, v.Value[i]) })
	case *types.AttributeValueMemberNS:
		list("NS", len(v.Value), func(i int) { buf.WriteString(`"` + v.Value[i] + `"`) })
	case *types.AttributeValueMemberBS:
		list("BS", len(v.Value), func(i int) { buf.WriteString(`"` + base64.StdEncoding.EncodeToString(v.Value[i]) + `"`) })
	case *types.AttributeValueMemberL:
		list("L", len(v.Value), func(i int) { writeValueJSON(t, buf, v.Value[i]) })
	case *types.AttributeValueMemberM:
		buf.WriteString(`{"M":`)
		writeMapJSON(t, buf, v.Value)
		buf.WriteString(`}`)
	default:
		t.Fatalf("no JSON for %T", v)
	}
}

// answerTrip answers every request with body, header and length.
type answerTrip struct {
	body   []byte
	header http.Header
	length int64
}

func (a answerTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	h := a.header.Clone()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: a.length, Body: io.NopCloser(bytes.NewReader(a.body)), Request: req}, nil
}

// answered is the metadata the SDK's client leaves on an UpdateItem whose
// answer is body with header (and its length, or -1 when unknown), and
// the item it decoded from it.
func answered(t *testing.T, body []byte, header http.Header, unknownLength bool) (middleware.Metadata, map[string]types.AttributeValue) {
	t.Helper()
	length := int64(len(body))
	if unknownLength {
		length = -1
	}
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{},
		BaseEndpoint: aws.String("http://answer.invalid"), DisableValidateResponseChecksum: true,
		HTTPClient: &http.Client{Transport: answerTrip{body: body, header: header, length: length}}})
	out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}})
	if err != nil {
		t.Fatalf("UpdateItem answered %s: %v", body, err)
	}
	return out.ResultMetadata, out.Attributes
}

// randomValue is an attribute value of every type, nested up to depth,
// with the shapes that are small on the wire and large in DynamoDB's count
// (one-digit numbers, empty lists and maps) and the reverse (escaped and
// multi-byte strings).
func randomValue(r *rand.Rand, depth int) types.AttributeValue {
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
			l = append(l, randomValue(r, depth-1))
		}
		return &types.AttributeValueMemberL{Value: l}
	default:
		m := map[string]types.AttributeValue{}
		for i := range n {
			m[str()+string(rune('a'+i))] = randomValue(r, depth-1)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
}

// TestAnsweredItemBound: the item an answer carries is never larger, as
// DynamoDB counts it, than answeredItemBound says from the answer's
// length, for random items of every attribute type, and exactly for an
// item of empty lists and maps (the shapes whose JSON is shortest against
// their count); so answeredItemUnits answers 1 only for items
// of at most 1 KB. Where the metadata holds no usable length, it says -1
// and the item is walked.
func TestAnsweredItemBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tight := 0
	for i := range 3000 {
		item := map[string]types.AttributeValue{}
		for j := range r.IntN(40) {
			item[[]string{"PK", "b_rpm_tk", "é", "x"}[j%4]+string(rune('a'+j))] = randomValue(r, 2)
		}
		if i%7 == 0 { // only empty lists and maps: the bound is exact
			item = map[string]types.AttributeValue{"a": &types.AttributeValueMemberL{}, "b": &types.AttributeValueMemberM{}}
		}
		body := answerJSON(t, item)
		md, decoded := answered(t, body, http.Header{}, false)
		if len(decoded) != len(item) || itemSize(decoded) != itemSize(item) {
			t.Fatalf("the SDK decoded %d attributes of %d bytes from %s, want %d of %d", len(decoded), itemSize(decoded), body, len(item), itemSize(item))
		}
		bound, size := answeredItemBound(md, len(item)), int64(itemSize(item))
		if bound < size {
			t.Fatalf("item of %d bytes (%s) bounded by %d", size, body, bound)
		}
		if bound == size {
			tight++
		}
		if got, want := answeredItemUnits(md, item), itemUnits(item); got != want {
			t.Fatalf("answeredItemUnits = %d, itemUnits = %d for %s", got, want, body)
		}
	}
	if tight == 0 {
		t.Errorf("no item met its bound: the property is not exercised where it could fail")
	}
	big := map[string]types.AttributeValue{"s": &types.AttributeValueMemberS{Value: strings.Repeat("x", 3000)}}
	body := answerJSON(t, big)
	encoded, _ := answered(t, body, http.Header{"Content-Encoding": {"identity"}}, false)
	unknown, _ := answered(t, body, http.Header{}, true)
	for name, md := range map[string]middleware.Metadata{
		"no raw response": {},
		"content-encoded": encoded,
		"unknown length":  unknown,
	} {
		if b := answeredItemBound(md, len(big)); b != -1 {
			t.Errorf("%s: bound %d, want -1", name, b)
		}
		if got := answeredItemUnits(md, big); got != 3 {
			t.Errorf("%s: %d units for a 3 KB item, want 3 (walked)", name, got)
		}
	}
}
