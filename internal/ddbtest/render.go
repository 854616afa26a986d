package ddbtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Render writes an attribute value as text for comparisons and failure
// messages: `T:value`, sets sorted, lists in order, maps by sorted key.
func Render(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%v", v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B:%x", v.Value)
	case *types.AttributeValueMemberSS:
		s := slices.Clone(v.Value)
		slices.Sort(s)
		return "SS:" + strings.Join(s, ",")
	case *types.AttributeValueMemberNS:
		s := slices.Clone(v.Value)
		slices.Sort(s)
		return "NS:" + strings.Join(s, ",")
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = Render(e)
		}
		return "L:[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberM:
		keys := slices.Sorted(maps.Keys(v.Value))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + Render(v.Value[k])
		}
		return "M:{" + strings.Join(parts, ",") + "}"
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", v)
}
