package limiter

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/answer"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/itemsize"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbwire"
)

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

// answered is the metadata the SDK's client leaves on an UpdateItem whose
// answer is body with header (and its length, or -1 when unknown), and
// the item it decoded from it.
func answered(t *testing.T, body []byte, header http.Header, unknownLength bool) (middleware.Metadata, map[string]types.AttributeValue) {
	t.Helper()
	length := int64(len(body))
	if unknownLength {
		length = -1
	}
	db := ddbwire.ClientVia(ddbwire.Trip{Body: body, Header: header, Length: length})
	out, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}})
	if err != nil {
		t.Fatalf("UpdateItem answered %s: %v", body, err)
	}
	return out.ResultMetadata, out.Attributes
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
			item[[]string{"PK", "b_rpm_tk", "é", "x"}[j%4]+string(rune('a'+j))] = ddbwire.RandomValue(r, 2)
		}
		if i%7 == 0 { // only empty lists and maps: the bound is exact
			item = map[string]types.AttributeValue{"a": &types.AttributeValueMemberL{}, "b": &types.AttributeValueMemberM{}}
		}
		body := ddbwire.Answer(t, item)
		md, decoded := answered(t, body, http.Header{}, false)
		if len(decoded) != len(item) || itemsize.Of(decoded) != itemsize.Of(item) {
			t.Fatalf("the SDK decoded %d attributes of %d bytes from %s, want %d of %d", len(decoded), itemsize.Of(decoded), body, len(item), itemsize.Of(item))
		}
		bound, size := answeredItemBound(md, len(item)), int64(itemsize.Of(item))
		if bound < size {
			t.Fatalf("item of %d bytes (%s) bounded by %d", size, body, bound)
		}
		if bound == size {
			tight++
		}
		if got, want := answeredItemUnits(md, item), itemsize.ItemUnits(item); got != want {
			t.Fatalf("answeredItemUnits = %d, itemsize.ItemUnits = %d for %s", got, want, body)
		}
	}
	if tight == 0 {
		t.Errorf("no item met its bound: the property is not exercised where it could fail")
	}
	big := map[string]types.AttributeValue{"s": &types.AttributeValueMemberS{Value: strings.Repeat("x", 3000)}}
	body := ddbwire.Answer(t, big)
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

// TestAnsweredItemUnitsThroughReader: an answer the reader took carries no
// SDK values, and its write units are still those of the item it returned:
// one up to 1 KB (from the answer's length), more above (from its JSON).
func TestAnsweredItemUnitsThroughReader(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sizes := map[int64]int{}
	for range 500 {
		item := map[string]types.AttributeValue{}
		for j := range r.IntN(30) {
			v := ddbwire.ScalarValue(r)
			if r.IntN(4) == 0 {
				v = &types.AttributeValueMemberS{Value: strings.Repeat("x", r.IntN(900))}
			}
			item["a"+strings.Repeat("b", j)] = v
		}
		body := ddbwire.Answer(t, item)
		out, err := ddbwire.Client(body).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "k"}}}, answer.Read)
		if err != nil {
			t.Fatal(err)
		}
		if answer.Of(out.ResultMetadata) == nil {
			continue // an item outside the subset: TestAnsweredItemBound's case
		}
		got, want := answeredItemUnits(out.ResultMetadata, out.Attributes), itemsize.ItemUnits(item)
		if got != want {
			t.Fatalf("%d units through the reader, %d for the item %s", got, want, body)
		}
		sizes[want]++
	}
	if sizes[1] == 0 || sizes[2]+sizes[3]+sizes[4] == 0 {
		t.Errorf("units seen %v: want items of one unit and of more", sizes)
	}
}
