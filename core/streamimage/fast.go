package streamimage

// The fast reading of an event (docs/design.md §6, "Memory per record"):
// the event a stream event source mapping sends is almost always of one
// shape, and encoding/json's reflective decoding of it, with a map of raw
// values per image converted into a second map, was nine tenths of what
// the aggregator allocated per record. ReadEvent reads that shape
// directly: the event object with its Records, each record's known fields
// once each, string values in ddbjson's subset (printable ASCII, no
// escape), and images whose attributes are S, N, BOOL or NULL true, each
// named once. It keeps the images as text (Image); decodeEventFast turns
// what it read into an events.DynamoDBEvent. For anything else both return
// ddbjson.ErrUnsupported and DecodeEvent decodes the event as before, so
// what they accept reads exactly as encoding/json reads it
// (FuzzDecodeEventFast).

import (
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

var errUnsupported = ddbjson.ErrUnsupported

// ErrUnsupported is ReadEvent's answer for an event outside the shape it
// reads. It is not a verdict on the event: DecodeEvent may read it.
var ErrUnsupported = ddbjson.ErrUnsupported

// Record is one record of a stream event as ReadEvent reads it: its fields
// as the event's text holds them, its images as their JSON text. The
// strings are views of the event's bytes, not copies.
type Record struct {
	EventID, EventName, EventSource, EventVersion, AWSRegion, EventSourceARN string
	// Created is ApproximateCreationDateTime (whole seconds); the zero Time
	// when the record has none.
	Created time.Time
	// Keys, NewImage and OldImage are the record's images; "" for one the
	// record does not carry.
	Keys, NewImage, OldImage Image
	SequenceNumber           string
	SizeBytes                int64
	StreamViewType           string
}

// ReadEvent reads the records of a Lambda DynamoDB stream event from its
// JSON, when the event has the usual shape (the file's doc); for any other
// it returns ErrUnsupported, and DecodeEvent reads it. What it reads is
// what DecodeEvent reads from the same bytes (Record.Event).
//
// The records' strings are views of data, not copies: data must not change
// while they are used. The Lambda runtime reuses its payload buffer for
// the next invocation, so nothing read here may outlive the invocation.
func ReadEvent(data []byte) ([]Record, error) {
	c := eventCursor{s: unsafe.String(unsafe.SliceData(data), len(data))}
	if !c.next('{') {
		return nil, errUnsupported
	}
	if k, ok := c.text(); !ok || k != "Records" || !c.next(':') || !c.next('[') {
		return nil, errUnsupported
	}
	recs := make([]Record, 0, countRecords(c.s, c.i))
	if c.peek() == ']' {
		c.i++
	} else {
		for {
			recs = append(recs, Record{})
			if !c.record(&recs[len(recs)-1]) {
				return nil, errUnsupported
			}
			if c.next(',') {
				continue
			}
			if c.next(']') {
				break
			}
			return nil, errUnsupported
		}
	}
	if !c.next('}') {
		return nil, errUnsupported
	}
	if c.space(); c.i != len(c.s) {
		return nil, errUnsupported
	}
	return recs, nil
}

// eventCursor reads the event's JSON text.
type eventCursor struct {
	s string
	i int
	// names holds the attribute names of the image being read, to refuse
	// a name given twice.
	names []string
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

// image reads an image: an object whose attributes are all in the subset,
// NULL true, each named once.
func (c *eventCursor) image() (Image, bool) {
	c.space()
	end, err := ddbjson.ObjectEnd(c.s, c.i)
	if err != nil {
		return "", false
	}
	text := c.s[c.i:end]
	it, err := ddbjson.NewItem(text)
	if err != nil {
		return "", false
	}
	c.names = c.names[:0]
	for {
		name, v, ok, err := it.Next()
		if err != nil || (ok && v.Type == "NULL" && !v.Bool) {
			return "", false
		}
		if !ok {
			break
		}
		for _, n := range c.names {
			if n == name {
				return "", false
			}
		}
		c.names = append(c.names, name)
	}
	c.i = end
	return Image(text), true
}

func clone(s string) string { return string([]byte(s)) }

// decodeEventFast reads data when it has the event's usual shape, or
// returns errUnsupported: ReadEvent, each record made an
// events.DynamoDBEventRecord of its own strings.
func decodeEventFast(data []byte) (events.DynamoDBEvent, error) {
	recs, err := ReadEvent(data)
	if err != nil {
		return events.DynamoDBEvent{}, err
	}
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(recs))}
	var last repeated
	for i := range recs {
		ev.Records[i] = recs[i].event(&last)
	}
	return ev, nil
}

// repeated holds the previous record's repeated strings (the event name,
// source, version, region, source ARN and stream view type), so that an
// equal value shares its string instead of copying it again.
type repeated [6]string

// own returns s as a string of its own, sharing last[slot] when equal.
func (r *repeated) own(slot int, s string) string {
	if r[slot] != s {
		r[slot] = clone(s)
	}
	return r[slot]
}

// Event returns the record as DecodeEvent reads it, with strings of its
// own (not views of the event's bytes).
func (r *Record) Event() events.DynamoDBEventRecord {
	var last repeated
	return r.event(&last)
}

func (r *Record) event(last *repeated) events.DynamoDBEventRecord {
	e := events.DynamoDBEventRecord{
		AWSRegion:      last.own(slotRegion, r.AWSRegion),
		EventID:        clone(r.EventID),
		EventName:      last.own(slotName, r.EventName),
		EventSource:    last.own(slotSource, r.EventSource),
		EventVersion:   last.own(slotVersion, r.EventVersion),
		EventSourceArn: last.own(slotARN, r.EventSourceARN),
	}
	e.Change = events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: r.Created},
		Keys:                        r.Keys.Events(),
		NewImage:                    r.NewImage.Events(),
		OldImage:                    r.OldImage.Events(),
		SequenceNumber:              clone(r.SequenceNumber),
		SizeBytes:                   r.SizeBytes,
		StreamViewType:              last.own(slotViewType, r.StreamViewType),
	}
	return e
}

// countRecords is a hint of the number of records: the number of
// "eventID" keys ahead.
func countRecords(s string, i int) int {
	return strings.Count(s[i:], `"eventID"`)
}

// Slots of repeated.
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
func (c *eventCursor) record(rec *Record) bool {
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
			rec.AWSRegion, ok = c.text()
		case "eventID":
			rec.EventID, ok = c.text()
		case "eventName":
			rec.EventName, ok = c.text()
		case "eventSource":
			rec.EventSource, ok = c.text()
		case "eventVersion":
			rec.EventVersion, ok = c.text()
		case "eventSourceARN":
			rec.EventSourceARN, ok = c.text()
		case "dynamodb":
			ok = c.change(rec)
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
func (c *eventCursor) change(rec *Record) bool {
	var seen uint16
	return c.object(func(k string) bool {
		var bit uint16
		var ok bool
		switch k {
		case "ApproximateCreationDateTime":
			bit = 1
			var sec int64
			if sec, ok = c.digits(); ok {
				rec.Created = time.Unix(sec, 0)
			}
		case "Keys":
			bit = 2
			rec.Keys, ok = c.image()
		case "NewImage":
			bit = 4
			rec.NewImage, ok = c.image()
		case "OldImage":
			bit = 8
			rec.OldImage, ok = c.image()
		case "SequenceNumber":
			bit = 16
			rec.SequenceNumber, ok = c.text()
		case "SizeBytes":
			bit = 32
			rec.SizeBytes, ok = c.digits()
		case "StreamViewType":
			bit = 64
			rec.StreamViewType, ok = c.text()
		}
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}
