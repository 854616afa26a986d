package aggregator

import (
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// outcome is what parsing made of one delivered record.
type outcome uint8

const (
	// outBucket: an INSERT or MODIFY of a bucket's `#STATE` item, parsed.
	outBucket outcome = iota
	// outSkipped: not a bucket INSERT/MODIFY (a REMOVE, a snapshot, a
	// config or audit record, a key of no known shape). Ignored silently.
	outSkipped
	// outPoison: a bucket INSERT/MODIFY that cannot be used (malformed
	// number, undecodable image, missing image, bad sequence number).
	// Logged with its index and skipped, never reported (docs/design.md §6).
	outPoison
)

// Event names of DynamoDB stream records.
const (
	eventInsert = string(events.DynamoDBOperationTypeInsert)
	eventModify = string(events.DynamoDBOperationTypeModify)
	eventRemove = string(events.DynamoDBOperationTypeRemove)
)

// Window instants outside these bounds are poison: nothing real is filed
// before the epoch, and a key must format as YYYY-MM-DD.
var (
	minInstant = time.Unix(1, 0).UTC()
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// bucketRecord is one bucket INSERT or MODIFY, parsed.
type bucketRecord struct {
	// index is the record's position in the delivered batch.
	index int
	// seq is the sequence number as delivered (the ItemIdentifier to
	// report); padded is it zero-padded to 40 digits (the seq# mark).
	seq, padded string
	// id is the bucket, from its partition key.
	id schema.BucketID
	// newItem, oldItem are the images as delivered (oldItem absent for an
	// INSERT), checked to convert to SDK form but not converted; newImg,
	// oldImg are the same decoded (oldImg nil for an INSERT), pointing at
	// newDec and oldDec.
	newItem, oldItem image
	newImg, oldImg   *bucketitem.Image
	newDec, oldDec   bucketitem.Image
	// at is ApproximateCreationDateTime (zero when absent); instant is the
	// window instant: at, else NewImage rf (docs/design.md §6).
	at, instant time.Time
	// contrib is what the record adds to a snapshot item (docs/design.md §6); nil
	// when it adds nothing.
	contrib []limitDelta
}

// maintenanceRecord converts r for the best-effort maintainer. NewItem is
// left to RawNew (only a Path 2 clone reads it, so converting every record's
// image would cost the batch its largest allocation for nothing), OldItem
// nil: the maintainer reads OldImage, which is set for every MODIFY.
func (r *bucketRecord) maintenanceRecord() maintenance.Record {
	return maintenance.Record{
		Seq: r.seq, ID: r.id,
		RawNew:   r.rawNew,
		NewImage: r.newImg, OldImage: r.oldImg,
		At: r.at,
	}
}

// rawNew converts the record's stream NewImage to SDK attribute values.
func (r *bucketRecord) rawNew() (map[string]types.AttributeValue, error) {
	return r.newItem.toDynamoDB()
}

// poisonError says why a bucket record is unusable. Its text names no key
// value (entity ids are often API keys): only attributes and shapes.
type poisonError struct{ reason string }

func (e *poisonError) Error() string { return e.reason }

func poison(reason string) error { return &poisonError{reason: reason} }

// poisonFrom describes err without repeating values from the record: a
// corrupt attribute and a conversion path name attributes, never keys.
func poisonFrom(what string, err error) error {
	var ce *bucketitem.CorruptItemError
	var pe *streamimage.PathError
	switch {
	case errors.As(err, &ce):
		reason := ce.Reason
		if strings.Contains(reason, `"`) {
			reason = "value is not an int64" // the reason quotes the value
		}
		return poison(what + ": attribute " + safeAttr(ce.Attribute) + ": " + reason)
	case errors.As(err, &pe):
		return poison(what + ": attribute " + safeAttr(pe.Path) + ": " + causeOf(pe.Err))
	}
	return poison(what)
}

// causeOf names the sentinel a streamimage error wraps, without its detail
// (which can quote a value).
func causeOf(err error) string {
	switch {
	case errors.Is(err, streamimage.ErrNilValue):
		return streamimage.ErrNilValue.Error()
	case errors.Is(err, streamimage.ErrUnsupportedType):
		return streamimage.ErrUnsupportedType.Error()
	case errors.Is(err, streamimage.ErrMalformed):
		return streamimage.ErrMalformed.Error()
	}
	return "invalid"
}

// safeAttr shortens an attribute name or path for a log line.
func safeAttr(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// parseRecord classifies and parses the record at index of a batch.
// For outBucket the returned record is complete except for contrib; for
// outPoison err says why (safe to log).
func parseRecord(rec events.DynamoDBEventRecord, index int) (*bucketRecord, outcome, error) {
	r := new(bucketRecord)
	out, err := r.parse(eventDelivered(&rec), index)
	if out != outBucket {
		return nil, out, err
	}
	return r, out, nil
}

// parse classifies and parses d, the record at index of a batch, into r,
// which it overwrites; r is meaningful only when the outcome is outBucket.
func (r *bucketRecord) parse(d delivered, index int) (outcome, error) {
	pk, sk, ok := d.key()
	if !ok {
		return outSkipped, nil
	}
	info := schema.ClassifyKey(pk, sk)
	if info.Kind != schema.KindBucket {
		return outSkipped, nil
	}
	switch d.eventName {
	case eventInsert, eventModify:
	case eventRemove:
		return outSkipped, nil // a bucket TTL delete or delete_entity: no usage
	default:
		return outPoison, poison("unknown eventName")
	}
	*r = bucketRecord{
		index: index,
		seq:   d.seq,
		id:    schema.BucketID{Namespace: info.Namespace, Entity: info.Entity, Resource: info.Resource, Shard: info.Shard},
	}
	var err error
	if r.padded, err = schema.PadSequenceNumber(r.seq); err != nil {
		return outPoison, poison("sequence number is not 1 to 40 decimal digits")
	}
	r.newItem = d.newImg
	if err = r.newItem.check(); err != nil {
		return outPoison, poisonFrom("NewImage does not convert", err)
	}
	if r.newItem.empty() {
		return outPoison, poison("no NewImage (stream view type must be NEW_AND_OLD_IMAGES)")
	}
	if !r.newItem.sameKey(pk, sk) {
		return outPoison, poison("NewImage key differs from the record key")
	}
	if err := r.newItem.decode(&r.newDec); err != nil {
		return outPoison, poisonFrom("NewImage does not decode", err)
	}
	newImg := &r.newDec
	r.newImg = newImg
	if newImg.Entity == "" {
		return outPoison, poison("NewImage has no entity_id")
	}
	if newImg.Entity != r.id.Entity {
		return outPoison, poison("NewImage entity_id differs from the bucket key")
	}
	if d.eventName == eventModify {
		r.oldItem = d.oldImg
		if err = r.oldItem.check(); err != nil {
			return outPoison, poisonFrom("OldImage does not convert", err)
		}
		if r.oldItem.empty() {
			return outPoison, poison("MODIFY without OldImage (stream view type must be NEW_AND_OLD_IMAGES)")
		}
		if !r.oldItem.sameKey(pk, sk) {
			return outPoison, poison("OldImage key differs from the record key")
		}
		if err := r.oldItem.decode(&r.oldDec); err != nil {
			return outPoison, poisonFrom("OldImage does not decode", err)
		}
		r.oldImg = &r.oldDec
	}
	// Window instant (docs/design.md §6): the record's creation time, else rf.
	if at := d.created; !at.IsZero() && at.Unix() > 0 {
		r.at = at.UTC()
		r.instant = r.at
	} else if newImg.HasRF && newImg.RF > 0 {
		r.instant = time.UnixMilli(newImg.RF).UTC()
	}
	if r.instant.Before(minInstant) || r.instant.After(maxInstant) {
		return outPoison, poison("no usable time: ApproximateCreationDateTime and rf absent or out of range")
	}
	return outBucket, nil
}

// eventScalar reads a delivered attribute value for bucketitem.DecodeItem. The
// value has passed streamimage.Check, so the accessor its DataType names
// does not panic.
func eventScalar(av events.DynamoDBAttributeValue) bucketitem.Scalar {
	switch av.DataType() {
	case events.DataTypeString:
		return bucketitem.Scalar{Type: "S", Text: av.String()}
	case events.DataTypeNumber:
		return bucketitem.Scalar{Type: "N", Text: av.Number()}
	case events.DataTypeBoolean:
		return bucketitem.Scalar{Type: "BOOL", Bool: av.Boolean()}
	case events.DataTypeBinary:
		return bucketitem.Scalar{Type: "B"}
	case events.DataTypeNull:
		return bucketitem.Scalar{Type: "NULL"}
	case events.DataTypeStringSet:
		return bucketitem.Scalar{Type: "SS"}
	case events.DataTypeNumberSet:
		return bucketitem.Scalar{Type: "NS"}
	case events.DataTypeBinarySet:
		return bucketitem.Scalar{Type: "BS"}
	case events.DataTypeList:
		return bucketitem.Scalar{Type: "L"}
	case events.DataTypeMap:
		return bucketitem.Scalar{Type: "M"}
	}
	return bucketitem.Scalar{Type: "an unknown type"}
}

// limitDelta is one limit's contribution from one record (docs/design.md §6).
type limitDelta struct {
	name string
	// tokens is floor(new_tc/1000) − floor(old_tc/1000) (docs/design.md §6).
	tokens int64
	// overdraw: a soft limit consumed (delta_milli > 0) into debt (tk < 0).
	overdraw bool
}

// contributions returns what a record adds to its snapshot items, limit by
// limit (sorted by name), and the names of limits skipped because a
// snapshot cannot hold them (a reserved or malformed name).
func contributions(newImg, oldImg *bucketitem.Image) (out []limitDelta, refused []string) {
	for _, set := range [][]bucketitem.LimitImage{newImg.Limits, newImg.Partial} {
		for i := range set {
			l := &set[i]
			if !l.Fields.Has(bucketitem.FieldConsumed) {
				continue
			}
			var old int64
			if oldImg != nil {
				// Limits and Partial hold no wcu, so Lookup finds the limit
				// or the partial of that name.
				if o := oldImg.Lookup(l.Name); o != nil && o.Fields.Has(bucketitem.FieldConsumed) {
					old = o.Consumed
				}
			}
			d := limitDelta{
				name:   l.Name,
				tokens: bucket.FloorDiv(l.Consumed, 1000) - bucket.FloorDiv(old, 1000),
				overdraw: l.Fields.Has(bucketitem.FieldSoft) && l.Consumed > old &&
					l.Fields.Has(bucketitem.FieldTokens) && l.Tokens < 0,
			}
			if d.tokens == 0 && !d.overdraw {
				continue
			}
			if !snapshotName(l.Name) {
				refused = append(refused, l.Name)
				continue
			}
			out = append(out, d)
		}
	}
	// Limits and Partial are each sorted; merge order for determinism.
	if len(out) > 1 {
		sortDeltas(out)
	}
	return out, refused
}

func sortDeltas(ds []limitDelta) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].name < ds[j-1].name; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// snapshotName reports whether a limit name can be a snapshot counter: not
// wcu (hidden), not a reserved limit name (it would collide with a snapshot
// attribute, and the write would fail forever), non-empty and free of `#`.
func snapshotName(name string) bool {
	return name != "" && !strings.Contains(name, "#") && !schema.IsReservedLimitName(name)
}
