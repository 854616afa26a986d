package schema

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxShardCount is the largest shard_count a bucket carries: doubling, in
// the client and the aggregator alike, stops there (docs/design.md §5).
const MaxShardCount = 32

// Num is the number attribute value n.
func Num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// Str is the string attribute value s.
func Str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
