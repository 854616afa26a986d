package streamimage

import (
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

// Image is a stream image as ReadEvent keeps it: the JSON text of its
// object, every attribute an S, an N, a BOOL or a NULL true in ddbjson's
// subset and named once; "" for a record without the image. Its methods
// read the text again each time; they cannot fail on an Image ReadEvent
// returned.
type Image string

// attrs iterates over the image's attributes; f returns false to stop.
func (im Image) attrs(f func(name string, v ddbjson.Value) bool) {
	if im == "" {
		return
	}
	it, err := ddbjson.NewItem(string(im))
	if err != nil {
		return
	}
	for {
		name, v, ok, err := it.Next()
		if err != nil || !ok || !f(name, v) {
			return
		}
	}
}

// Len returns the number of attributes (0 for an absent image).
func (im Image) Len() int {
	n := 0
	im.attrs(func(string, ddbjson.Value) bool { n++; return true })
	return n
}

// Str returns the value of the S attribute name; ok is false when the
// image has no attribute of that name or it is not an S. The value is a
// view of the image's text.
func (im Image) Str(name string) (value string, ok bool) {
	im.attrs(func(n string, v ddbjson.Value) bool {
		if n != name {
			return true
		}
		value, ok = v.Text, v.Type == "S"
		return false
	})
	return value, ok
}

// Events returns the image as DecodeEvent reads it: nil when absent, else a
// map whose names and values share one copy of the text.
func (im Image) Events() map[string]events.DynamoDBAttributeValue {
	if im == "" {
		return nil
	}
	own := Image(clone(string(im)))
	img := make(map[string]events.DynamoDBAttributeValue, own.Len())
	own.attrs(func(name string, v ddbjson.Value) bool {
		switch v.Type {
		case "S":
			img[name] = events.NewStringAttribute(v.Text)
		case "N":
			img[name] = events.NewNumberAttribute(v.Text)
		case "BOOL":
			img[name] = events.NewBooleanAttribute(v.Bool)
		default:
			img[name] = events.NewNullAttribute()
		}
		return true
	})
	return img
}

// DynamoDB returns the image as SDK attribute values, as ImageToDynamoDB
// converts im.Events(): nil when absent, else a map whose names and
// values share one copy of the text.
func (im Image) DynamoDB() map[string]ddbtypes.AttributeValue {
	if im == "" {
		return nil
	}
	own := Image(clone(string(im)))
	img := make(map[string]ddbtypes.AttributeValue, own.Len())
	own.attrs(func(name string, v ddbjson.Value) bool {
		switch v.Type {
		case "S":
			img[name] = &ddbtypes.AttributeValueMemberS{Value: v.Text}
		case "N":
			img[name] = &ddbtypes.AttributeValueMemberN{Value: v.Text}
		case "BOOL":
			img[name] = &ddbtypes.AttributeValueMemberBOOL{Value: v.Bool}
		default:
			img[name] = &ddbtypes.AttributeValueMemberNULL{Value: true}
		}
		return true
	})
	return img
}

// Has reports whether the image has an attribute name.
func (im Image) Has(name string) bool {
	found := false
	im.attrs(func(n string, _ ddbjson.Value) bool {
		found = n == name
		return !found
	})
	return found
}
