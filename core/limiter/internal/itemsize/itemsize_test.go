package itemsize_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/itemsize"
)

// TestNumber: a number's size from its significant digits, one byte per
// two, plus one; leading and trailing zeros, the sign, the point and the
// exponent add nothing.
func TestNumber(t *testing.T) {
	for s, want := range map[string]int{
		"0": 2, "1": 2, "12": 2, "123": 3, "1000": 2, "-1795953600001": 8, "0.05": 2, "1.50": 2,
		"105.0": 3, "1.5e10": 2, "12345678901234567890": 11,
	} {
		if got := itemsize.Number(s); got != want {
			t.Errorf("Number(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestOf: an item's size from its names and values, every type of value.
func TestOf(t *testing.T) {
	item := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "ns/BUCKET#e#r#0"},                                                              // 2 + 15
		"n":  &types.AttributeValueMemberN{Value: "1000"},                                                                         // 1 + 2
		"ok": &types.AttributeValueMemberBOOL{Value: true},                                                                        // 2 + 1
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNULL{}}},                      // 1 + 3 + 2
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}}, // 1 + 3 + 3
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}},                                                           // 2 + 3
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "123"}},                                                          // 2 + 2 + 3
		"b":  &types.AttributeValueMemberB{Value: []byte{1, 2, 3}},                                                                // 1 + 3
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},                                                         // 2 + 3
	}
	if got, want := itemsize.Of(item), 17+3+3+6+7+5+7+4+5; got != want {
		t.Errorf("Of = %d, want %d", got, want)
	}
}

// TestItemUnits: one write unit per started KB of the item, at least one.
func TestItemUnits(t *testing.T) {
	for size, want := range map[int]int64{0: 1, 1000: 1, 1024: 1, 1025: 2, 3000: 3} {
		it := map[string]types.AttributeValue{"s": &types.AttributeValueMemberS{Value: strings.Repeat("x", max(size-1, 0))}}
		if size == 0 {
			it = nil
		}
		if got := itemsize.ItemUnits(it); got != want {
			t.Errorf("ItemUnits of %d bytes = %d, want %d", size, got, want)
		}
	}
	for size, want := range map[int64]int64{-1: 1, 0: 1, 1: 1, 1024: 1, 1025: 2, 400 * 1024: 400} {
		if got := itemsize.Units(size); got != want {
			t.Errorf("Units(%d) = %d, want %d", size, got, want)
		}
	}
}

// TestJSON: an item in the wire form is sized as the same item decoded;
// what ddbjson cannot read is sized up to where it stops.
func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		item string
		want int
	}{
		{`{}`, 0},
		{`{"PK":{"S":"ns/BUCKET#e#r#0"},"n":{"N":"1000"},"ok":{"BOOL":true},"z":{"NULL":true}}`, 17 + 3 + 3 + 2},
		{`{"s":{"S":"a\"b"}}`, 0},            // an escape is outside the subset
		{`{"a":{"S":"xy"},"l":{"L":[]}}`, 3}, // a list is outside the subset: a is counted, l is not
		{`not json`, 0},
	} {
		if got := itemsize.JSON(tc.item); got != tc.want {
			t.Errorf("JSON(%s) = %d, want %d", tc.item, got, tc.want)
		}
	}
}

// FuzzNumber: the size of any number string DynamoDB could return (or any
// string at all) is at least 2 bytes and at most one per two characters
// plus two, never a panic, and an item of one such number is its name's
// bytes and that size.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-1795953600001", "1.50", "105.0", "1e10", "-0.000", "", "9999999999999999999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := itemsize.Number(s)
		if hi := (max(len(s), 1)+1)/2 + 1; n < 2 || n > hi {
			t.Fatalf("Number(%q) = %d, want 2..%d", s, n, hi)
		}
		item := map[string]types.AttributeValue{s: &types.AttributeValueMemberN{Value: s}}
		if got := itemsize.Of(item); got != len(s)+n {
			t.Fatalf("Of {%q: N %q} = %d, want %d", s, s, got, len(s)+n)
		}
	})
}
