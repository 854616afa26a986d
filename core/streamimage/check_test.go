package streamimage_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// TestCheckAgreesWithConversion: CheckImage fails exactly where
// ImageToDynamoDB does, with the same error, and allocates nothing on a
// good image.
func TestCheckAgreesWithConversion(t *testing.T) {
	var zero events.DynamoDBAttributeValue
	good := map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("x"), "n": events.NewNumberAttribute("12"),
		"b": events.NewBinaryAttribute([]byte{1}), "t": events.NewBooleanAttribute(true),
		"z": events.NewNullAttribute(), "ss": events.NewStringSetAttribute([]string{"a"}),
		"ns": events.NewNumberSetAttribute([]string{"1"}), "bs": events.NewBinarySetAttribute([][]byte{{2}}),
		"l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("y")}),
		"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewNumberAttribute("3")}),
	}
	cases := map[string]map[string]events.DynamoDBAttributeValue{
		"good":        good,
		"nil":         nil,
		"zero":        {"a": zero},
		"zero in L":   {"l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("y"), zero})},
		"zero in M":   {"odd key": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": zero})},
		"deep":        {"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"l": events.NewListAttribute([]events.DynamoDBAttributeValue{zero})})},
		"nil L":       {"l": events.NewListAttribute(nil)},
		"nil M":       {"m": events.NewMapAttribute(nil)},
		"empty M key": {"": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"": zero})},
	}
	for name, img := range cases {
		_, want := streamimage.ImageToDynamoDB(img)
		got := streamimage.CheckImage(img)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("%s: CheckImage = %v, ImageToDynamoDB = %v", name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = streamimage.CheckImage(good) }); n != 0 {
		t.Errorf("CheckImage of a good image: %v allocations", n)
	}
}
