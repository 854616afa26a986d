package limiter

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
