package handler

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// Event is the invocation payload, decoded by streamimage.DecodeEvent rather
// than by aws-lambda-go's own decoder: the same event for every valid
// payload (DecodeEvent is fuzzed against it), at a fraction of the
// allocations (it builds no map per attribute value), and an error instead
// of a panic on a malformed attribute. RunEvent decodes its file the same
// way.
type Event events.DynamoDBEvent

// UnmarshalJSON implements json.Unmarshaler.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := streamimage.DecodeEvent(data)
	if err != nil {
		return err
	}
	*e = Event(ev)
	return nil
}
