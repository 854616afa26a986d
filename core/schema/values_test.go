package schema

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestValues(t *testing.T) {
	if n, ok := Num(-1500).(*types.AttributeValueMemberN); !ok || n.Value != "-1500" {
		t.Fatalf("Num(-1500) = %#v", Num(-1500))
	}
	if s, ok := Str("a#b").(*types.AttributeValueMemberS); !ok || s.Value != "a#b" {
		t.Fatalf("Str = %#v", Str("a#b"))
	}
}
