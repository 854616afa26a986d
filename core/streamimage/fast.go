package streamimage

// The fast reading of an event (docs/design.md §6, "Memory per record"):
// the event a stream event source mapping sends is almost always of one
// shape, and encoding/json's reflective decoding of it, with a map of raw
// values per image converted into a second map, was nine tenths of what
// the aggregator allocated per record. decodeEventFast reads that shape
// directly: the event object with its Records, each record's known fields
// once each, string values in ddbjson's subset (printable ASCII, no
// escape), and images whose attributes are S, N, BOOL or NULL true. For
// anything else it returns ddbjson.ErrUnsupported and DecodeEvent decodes
// the event as before, so what it accepts reads exactly as encoding/json
// reads it (FuzzDecodeEventFast).

import (
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

var errUnsupported = ddbjson.ErrUnsupported

// eventCursor reads the event's JSON text.
type eventCursor struct {
	s string
	i int
	// last holds the previous record's repeated strings (the event name,
	// source, version, region, source ARN and stream view type), so that
	// an equal value shares its string instead of copying it again.
	last [6]string
}

func (c *eventCursor) space() { c.i = ddbjson.SkipSpace(c.s, c.i) }

// next skips whitespace and consumes b.
func (c *eventCursor) next(b byte) bool {
	c.space()
	if c.i < len(c.s) && c.s[c.i] == b {
		c.i++
		return true
	}
	return false
}

// peek skips whitespace and returns the next byte (0 at the end).
func (c *eventCursor) peek() byte {
	c.space()
	if c.i < len(c.s) {
		return c.s[c.i]
	}
	return 0
}

// text reads a string in the subset, as a view of the input.
func (c *eventCursor) text() (string, bool) {
	t, next, err := ddbjson.ReadString(c.s, ddbjson.SkipSpace(c.s, c.i))
	if err != nil {
		return "", false
	}
	c.i = next
	return t, true
}

// owned reads a string in the subset as a string of its own (the input is
// the runtime's buffer), sharing last[slot] when equal.
func (c *eventCursor) owned(slot int) (string, bool) {
	t, ok := c.text()
	if !ok {
		return "", false
	}
	if slot >= 0 {
		if c.last[slot] == t {
			return c.last[slot], true
		}
		c.last[slot] = clone(t)
		return c.last[slot], true
	}
	return clone(t), true
}

// digits reads a JSON number that is a non-negative integer of at most 15
// digits (exact as a float64, as encoding/json reads the creation time).
func (c *eventCursor) digits() (int64, bool) {
	c.space()
	j := c.i
	var n int64
	for j < len(c.s) && c.s[j] >= '0' && c.s[j] <= '9' && j-c.i < 16 {
		n = n*10 + int64(c.s[j]-'0')
		j++
	}
	switch {
	case j == c.i, j-c.i > 15, j-c.i > 1 && c.s[c.i] == '0':
		return 0, false
	case j < len(c.s) && (c.s[j] == '.' || c.s[j] == 'e' || c.s[j] == 'E' || c.s[j] == '-' || c.s[j] == '+'):
		return 0, false
	}
	c.i = j
	return n, true
}

// image reads an image: an object whose attributes are all in the subset.
func (c *eventCursor) image() (map[string]events.DynamoDBAttributeValue, bool) {
	c.space()
	end, err := ddbjson.ObjectEnd(c.s, c.i)
	if err != nil {
		return nil, false
	}
	text := c.s[c.i:end]
	it, err := ddbjson.NewItem(text)
	if err != nil {
		return nil, false
	}
	n := 0
	for {
		_, v, ok, err := it.Next()
		if err != nil || (ok && v.Type == "NULL" && !v.Bool) {
			return nil, false
		}
		if !ok {
			break
		}
		n++
	}
	// One copy of the image's text, which the names and values share.
	text = clone(text)
	it, _ = ddbjson.NewItem(text)
	img := make(map[string]events.DynamoDBAttributeValue, n)
	for {
		name, v, ok, _ := it.Next()
		if !ok {
			break
		}
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
	}
	c.i = end
	return img, true
}

func clone(s string) string { return string([]byte(s)) }

// decodeEventFast reads data when it has the event's usual shape, or
// returns errUnsupported.
func decodeEventFast(data []byte) (events.DynamoDBEvent, error) {
	// A view of data, not a copy: every string the event keeps is cloned
	// from it (owned, image), and data is not written while it is read.
	c := eventCursor{s: unsafe.String(unsafe.SliceData(data), len(data))}
	if !c.next('{') {
		return events.DynamoDBEvent{}, errUnsupported
	}
	if k, ok := c.text(); !ok || k != "Records" || !c.next(':') || !c.next('[') {
		return events.DynamoDBEvent{}, errUnsupported
	}
	var ev events.DynamoDBEvent
	ev.Records = make([]events.DynamoDBEventRecord, 0, countRecords(c.s, c.i))
	if c.peek() == ']' {
		c.i++
	} else {
		for {
			var rec events.DynamoDBEventRecord
			if !c.record(&rec) {
				return events.DynamoDBEvent{}, errUnsupported
			}
			ev.Records = append(ev.Records, rec)
			if c.next(',') {
				continue
			}
			if c.next(']') {
				break
			}
			return events.DynamoDBEvent{}, errUnsupported
		}
	}
	if !c.next('}') {
		return events.DynamoDBEvent{}, errUnsupported
	}
	if c.space(); c.i != len(c.s) {
		return events.DynamoDBEvent{}, errUnsupported
	}
	return ev, nil
}

// countRecords is a hint of the number of records: the number of
// "eventID" keys ahead.
func countRecords(s string, i int) int {
	return strings.Count(s[i:], `"eventID"`)
}

// Slots of eventCursor.last.
const (
	slotName = iota
	slotSource
	slotVersion
	slotRegion
	slotARN
	slotViewType
)

// object reads an object: member is called with each key, the cursor on
// its value, reads the value and says whether it was read.
func (c *eventCursor) object(member func(key string) bool) bool {
	if !c.next('{') {
		return false
	}
	if c.next('}') {
		return true
	}
	for {
		k, ok := c.text()
		if !ok || !c.next(':') || !member(k) {
			return false
		}
		if !c.next(',') {
			return c.next('}')
		}
	}
}

// record reads one record object; every key it knows at most once, no
// other key.
func (c *eventCursor) record(rec *events.DynamoDBEventRecord) bool {
	var seen uint16
	return c.object(func(k string) bool {
		bit := recordField(k)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch k {
		case "awsRegion":
			rec.AWSRegion, ok = c.owned(slotRegion)
		case "eventID":
			rec.EventID, ok = c.owned(-1)
		case "eventName":
			rec.EventName, ok = c.owned(slotName)
		case "eventSource":
			rec.EventSource, ok = c.owned(slotSource)
		case "eventVersion":
			rec.EventVersion, ok = c.owned(slotVersion)
		case "eventSourceARN":
			rec.EventSourceArn, ok = c.owned(slotARN)
		case "dynamodb":
			ok = c.change(&rec.Change)
		}
		return ok
	})
}

// recordField is the bit of a record key the fast reading knows, or 0.
func recordField(k string) uint16 {
	switch k {
	case "awsRegion":
		return 1
	case "eventID":
		return 2
	case "eventName":
		return 4
	case "eventSource":
		return 8
	case "eventVersion":
		return 16
	case "eventSourceARN":
		return 32
	case "dynamodb":
		return 64
	}
	return 0
}

// change reads a record's dynamodb object, each key it knows at most once.
func (c *eventCursor) change(ch *events.DynamoDBStreamRecord) bool {
	var seen uint16
	return c.object(func(k string) bool {
		var bit uint16
		var ok bool
		switch k {
		case "ApproximateCreationDateTime":
			bit = 1
			var sec int64
			if sec, ok = c.digits(); ok {
				ch.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Unix(sec, 0)}
			}
		case "Keys":
			bit = 2
			ch.Keys, ok = c.image()
		case "NewImage":
			bit = 4
			ch.NewImage, ok = c.image()
		case "OldImage":
			bit = 8
			ch.OldImage, ok = c.image()
		case "SequenceNumber":
			bit = 16
			ch.SequenceNumber, ok = c.owned(-1)
		case "SizeBytes":
			bit = 32
			ch.SizeBytes, ok = c.digits()
		case "StreamViewType":
			bit = 64
			ch.StreamViewType, ok = c.owned(slotViewType)
		}
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}
