package aggregator

import (
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// delivered is one delivered record, as parse reads it, from either form
// the aggregator takes (docs/design.md §6, "Memory per record"): an
// events record (Process) or a record read from the event's text
// (ProcessText).
type delivered struct {
	eventName, seq string
	// created is ApproximateCreationDateTime; zero when absent.
	created              time.Time
	keys, newImg, oldImg image
}

// eventDelivered is rec as parse reads it.
func eventDelivered(rec *events.DynamoDBEventRecord) delivered {
	return delivered{
		eventName: rec.EventName,
		seq:       rec.Change.SequenceNumber,
		created:   rec.Change.ApproximateCreationDateTime.Time,
		keys:      image{item: rec.Change.Keys},
		newImg:    image{item: rec.Change.NewImage},
		oldImg:    image{item: rec.Change.OldImage},
	}
}

// textDelivered is rec as parse reads it.
func textDelivered(rec *streamimage.Record) delivered {
	return delivered{
		eventName: rec.EventName,
		seq:       rec.SequenceNumber,
		created:   rec.Created,
		keys:      image{text: rec.Keys, isText: true},
		newImg:    image{text: rec.NewImage, isText: true},
		oldImg:    image{text: rec.OldImage, isText: true},
	}
}

// key returns the record's PK and SK: from Keys, else from NewImage, else
// from OldImage. ok is false when either is missing or not a string.
func (d *delivered) key() (pk, sk string, ok bool) {
	for _, img := range [...]*image{&d.keys, &d.newImg, &d.oldImg} {
		if img.empty() {
			continue
		}
		pk, okPK := img.str(schema.AttrPK)
		sk, okSK := img.str(schema.AttrSK)
		return pk, sk, okPK && okSK
	}
	return "", "", false
}

// batch is one invocation's records in either form.
type batch interface {
	len() int
	record(i int) delivered
}

// eventBatch is the records Process takes.
type eventBatch []events.DynamoDBEventRecord

func (b eventBatch) len() int               { return len(b) }
func (b eventBatch) record(i int) delivered { return eventDelivered(&b[i]) }

// textBatch is the records ProcessText takes.
type textBatch []streamimage.Record

func (b textBatch) len() int               { return len(b) }
func (b textBatch) record(i int) delivered { return textDelivered(&b[i]) }

// image is a delivered image: a map of events values (item), or the text
// streamimage.ReadEvent read (text, when isText). Absent is a nil map or
// an empty text.
type image struct {
	item   map[string]events.DynamoDBAttributeValue
	text   streamimage.Image
	isText bool
}

// check reports the error converting the image to SDK values would
// return. A text image always converts (streamimage.Image).
func (im *image) check() error {
	if im.isText {
		return nil
	}
	return streamimage.CheckImage(im.item)
}

// empty reports whether the image is absent or has no attribute.
func (im *image) empty() bool {
	if im.isText {
		return im.text.Len() == 0
	}
	return len(im.item) == 0
}

// str returns the S value of attribute name, without the panics the
// events accessors have on values of another type.
func (im *image) str(name string) (string, bool) {
	if im.isText {
		return im.text.Str(name)
	}
	av, ok := im.item[name]
	if !ok || av.DataType() != events.DataTypeString || streamimage.Check(av) != nil {
		return "", false
	}
	return av.String(), true
}

// sameKey reports whether the image carries no key attributes or the
// given ones. The image has passed check.
func (im *image) sameKey(pk, sk string) bool {
	for _, k := range [...]struct{ name, want string }{{schema.AttrPK, pk}, {schema.AttrSK, sk}} {
		if !im.has(k.name) {
			continue
		}
		if v, ok := im.str(k.name); !ok || v != k.want {
			return false
		}
	}
	return true
}

// has reports whether the image has an attribute name.
func (im *image) has(name string) bool {
	if im.isText {
		return im.text.Has(name)
	}
	_, ok := im.item[name]
	return ok
}

// decode decodes the image into dst. The image has passed check.
func (im *image) decode(dst *bucketitem.Image) error {
	if im.isText {
		_, err := dst.DecodeJSON(string(im.text))
		return err
	}
	return bucketitem.DecodeItem(dst, im.item, eventScalar)
}

// toDynamoDB converts the image to SDK attribute values, with strings of
// their own.
func (im *image) toDynamoDB() (map[string]types.AttributeValue, error) {
	if im.isText {
		return im.text.DynamoDB(), nil
	}
	return streamimage.ImageToDynamoDB(im.item)
}
