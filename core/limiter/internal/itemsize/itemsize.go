// Package itemsize is an item's size as DynamoDB counts it and the write
// units a write of it is charged: the arithmetic the limiter's write-unit
// estimate (docs/design.md §18) prices its writes with, the way
// docs/costs.md does.
//
// A name counts its bytes; a string or binary value its bytes; a number
// about one byte per two significant digits, plus one; a boolean or null
// one byte; a list or map three bytes, plus one per element and the
// elements' own sizes (a map's names included). A write is charged one
// unit per started KB of the item, at least one.
package itemsize

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

// KB is the size a write unit pays for.
const KB = 1024

// Units is the write units of a write of an item of size bytes: one per
// started KB, at least one (an empty or absent item is one).
func Units(size int64) int64 {
	return max(1, (size+KB-1)/KB)
}

// ItemUnits is the write units of a write of item.
func ItemUnits(item map[string]types.AttributeValue) int64 {
	return Units(int64(Of(item)))
}

// Of is item's size: its names' and its values' bytes.
func Of(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + Value(v)
	}
	return n
}

// Value is the size of one attribute value.
func Value(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return Number(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += Number(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + Value(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + Value(e)
		}
		return n
	}
	return 0
}

// Number is the size of a number given as DynamoDB spells it: one byte
// per two significant digits, plus one. Any string is sized (never a
// panic), at 2 bytes at least and at most one per two characters plus
// two.
func Number(s string) int {
	digits, zeros := 0, 0 // significant digits so far; trailing zeros among them
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E':
			i = len(s) // the exponent adds no digits
		case c == '0':
			if digits > 0 {
				digits++
				zeros++
			}
		case c >= '1' && c <= '9':
			digits++
			zeros = 0
		}
	}
	return (max(digits-zeros, 1)+1)/2 + 1
}

// JSON is the size of an item given in DynamoDB's JSON wire form and
// inside the subset package ddbjson reads (S, N, BOOL and NULL values):
// Of the same item decoded. An item ddbjson refuses is sized up to where
// it stops reading, 0 when it cannot start.
func JSON(item string) int {
	it, err := ddbjson.NewItem(item)
	if err != nil {
		return 0
	}
	n := 0
	for {
		name, v, ok, err := it.Next()
		if err != nil || !ok {
			return n
		}
		n += len(name)
		switch v.Type {
		case "S":
			n += len(v.Text)
		case "N":
			n += Number(v.Text)
		default:
			n++
		}
	}
}
