package streamimage_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// TestArenaAgreesWithConversion: an Arena converts every image as
// ImageToDynamoDB does, and its items do not share members.
func TestArenaAgreesWithConversion(t *testing.T) {
	var zero events.DynamoDBAttributeValue
	var a streamimage.Arena
	var items []map[string]ddbtypes.AttributeValue
	for i := range 600 { // more than one chunk of each member type
		img := map[string]events.DynamoDBAttributeValue{
			"s": events.NewStringAttribute("x" + strconv.Itoa(i)), "n": events.NewNumberAttribute(strconv.Itoa(i)),
			"t": events.NewBooleanAttribute(i%2 == 0), "z": events.NewNullAttribute(),
			"l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("y")}),
		}
		want, err := streamimage.ImageToDynamoDB(img)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Image(img)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("image %d: Arena %v (%v), ImageToDynamoDB %v", i, got, err, want)
		}
		items = append(items, got)
	}
	for i, it := range items {
		if it["n"].(*ddbtypes.AttributeValueMemberN).Value != strconv.Itoa(i) {
			t.Fatalf("item %d was overwritten: %v", i, it)
		}
	}
	if got, err := a.Image(nil); got != nil || err != nil {
		t.Fatalf("nil image: %v, %v", got, err)
	}
	bad := map[string]events.DynamoDBAttributeValue{"ok": events.NewStringAttribute("x"), "odd key": zero}
	_, want := streamimage.ImageToDynamoDB(bad)
	if _, err := a.Image(bad); err == nil || err.Error() != want.Error() {
		t.Fatalf("bad image: Arena %v, ImageToDynamoDB %v", err, want)
	}
}
