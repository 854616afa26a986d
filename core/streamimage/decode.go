package streamimage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// DecodeEvent parses the JSON of a Lambda DynamoDB stream event (the body an
// event source mapping sends, or a file of one) into an events.DynamoDBEvent.
//
// It accepts the input encoding/json accepts for an events.DynamoDBEvent,
// with the same field matching and the same result, but it never panics:
// aws-lambda-go's decoder panics on some malformed attribute values, such as
// {"BS": [1]}. It is stricter in one place: NULL must be true, as the
// DynamoDB API requires. Attribute errors are *PathError values naming the
// record and attribute, e.g. Records[3].dynamodb.NewImage.b_rpm_tk.
func DecodeEvent(data []byte) (events.DynamoDBEvent, error) {
	// The usual shape first, read directly (fast.go); anything else the
	// way below, which names what is wrong.
	if ev, err := decodeEventFast(data); err == nil {
		return ev, nil
	}
	return decodeEventSlow(data)
}

// decodeEventSlow is DecodeEvent by encoding/json, for any shape.
func decodeEventSlow(data []byte) (events.DynamoDBEvent, error) {
	// Pass one validates every attribute occurrence as encoding/json meets
	// it, so a malformed value under a key that a later duplicate overrides
	// fails here exactly as it does in aws-lambda-go.
	var strict jsonEvent[strictValue]
	err := json.Unmarshal(data, &strict)
	if err == nil {
		return buildEvent(strict, strictImage)
	}
	var pe *PathError
	if !errors.As(err, &pe) {
		return events.DynamoDBEvent{}, fmt.Errorf("streamimage: decode event: %w", err)
	}
	// An attribute is malformed, and encoding/json does not say where.
	// Pass two keeps attributes raw and decodes them one by one, to name it.
	var raw jsonEvent[json.RawMessage]
	if json.Unmarshal(data, &raw) == nil {
		if _, err := buildEvent(raw, decodeRawImage); err != nil {
			return events.DynamoDBEvent{}, err
		}
	}
	// The malformed occurrence is one a later duplicate key overrides; only
	// its path inside the attribute is known.
	return events.DynamoDBEvent{}, pe
}

// jsonEvent mirrors events.DynamoDBEvent with attribute values of type V.
type jsonEvent[V any] struct {
	Records []jsonRecord[V] `json:"Records"`
}

// jsonRecord mirrors events.DynamoDBEventRecord.
type jsonRecord[V any] struct {
	AWSRegion      string                       `json:"awsRegion"`
	Change         jsonStreamRecord[V]          `json:"dynamodb"`
	EventID        string                       `json:"eventID"`
	EventName      string                       `json:"eventName"`
	EventSource    string                       `json:"eventSource"`
	EventVersion   string                       `json:"eventVersion"`
	EventSourceArn string                       `json:"eventSourceARN"`
	UserIdentity   *events.DynamoDBUserIdentity `json:"userIdentity,omitempty"`
}

// jsonStreamRecord mirrors events.DynamoDBStreamRecord.
type jsonStreamRecord[V any] struct {
	ApproximateCreationDateTime events.SecondsEpochTime `json:"ApproximateCreationDateTime"`
	Keys                        map[string]V            `json:"Keys"`
	NewImage                    map[string]V            `json:"NewImage"`
	OldImage                    map[string]V            `json:"OldImage"`
	SequenceNumber              string                  `json:"SequenceNumber"`
	SizeBytes                   int64                   `json:"SizeBytes"`
	StreamViewType              string                  `json:"StreamViewType"`
}

// strictValue is an attribute value validated as it is unmarshalled.
type strictValue struct{ av events.DynamoDBAttributeValue }

// UnmarshalJSON implements json.Unmarshaler.
func (v *strictValue) UnmarshalJSON(data []byte) error {
	av, err := decodeAttribute(data)
	if err != nil {
		return err
	}
	v.av = av
	return nil
}

func strictImage(img map[string]strictValue) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		out[k] = v.av
	}
	return out, nil
}

func buildEvent[V any](in jsonEvent[V], image func(map[string]V) (map[string]events.DynamoDBAttributeValue, error)) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	if in.Records != nil {
		ev.Records = make([]events.DynamoDBEventRecord, len(in.Records))
	}
	for i := range in.Records {
		r := in.Records[i]
		// The input's images are dropped as they are converted, so that a
		// large batch is not held twice until the whole event is built.
		in.Records[i].Change.Keys, in.Records[i].Change.NewImage, in.Records[i].Change.OldImage = nil, nil, nil
		rec := events.DynamoDBEventRecord{
			AWSRegion:      r.AWSRegion,
			EventID:        r.EventID,
			EventName:      r.EventName,
			EventSource:    r.EventSource,
			EventVersion:   r.EventVersion,
			EventSourceArn: r.EventSourceArn,
			UserIdentity:   r.UserIdentity,
			Change: events.DynamoDBStreamRecord{
				ApproximateCreationDateTime: r.Change.ApproximateCreationDateTime,
				SequenceNumber:              r.Change.SequenceNumber,
				SizeBytes:                   r.Change.SizeBytes,
				StreamViewType:              r.Change.StreamViewType,
			},
		}
		var err error
		if rec.Change.Keys, err = image(r.Change.Keys); err != nil {
			return events.DynamoDBEvent{}, within(err, "Records"+indexSeg(i)+".dynamodb.Keys")
		}
		if rec.Change.NewImage, err = image(r.Change.NewImage); err != nil {
			return events.DynamoDBEvent{}, within(err, "Records"+indexSeg(i)+".dynamodb.NewImage")
		}
		if rec.Change.OldImage, err = image(r.Change.OldImage); err != nil {
			return events.DynamoDBEvent{}, within(err, "Records"+indexSeg(i)+".dynamodb.OldImage")
		}
		ev.Records[i] = rec
	}
	return ev, nil
}

// DecodeImage parses the JSON of one item image ({"PK": {"S": "..."}, ...})
// into the Lambda event shape, with the rules of DecodeEvent. JSON null gives
// a nil map.
func DecodeImage(data []byte) (map[string]events.DynamoDBAttributeValue, error) {
	var strict map[string]strictValue
	err := json.Unmarshal(data, &strict)
	if err == nil {
		return strictImage(strict)
	}
	var pe *PathError
	if !errors.As(err, &pe) {
		return nil, &PathError{Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) == nil {
		if _, err := decodeRawImage(raw); err != nil {
			return nil, err
		}
	}
	return nil, pe
}

// decodeRawImage decodes each attribute of an image whose top level
// encoding/json has already split, as it does for a map-typed field (which
// is how duplicate image fields merge exactly as they do in aws-lambda-go).
func decodeRawImage(raw map[string]json.RawMessage) (map[string]events.DynamoDBAttributeValue, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(raw))
	for k, v := range raw {
		av, err := decodeAttribute(v)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		out[k] = av
	}
	return out, nil
}

// decodeAttribute decodes one attribute value. Its JSON is parsed once into
// a generic tree (numbers kept as json.Number) and walked, which keeps deep
// nesting linear.
func decodeAttribute(raw json.RawMessage) (events.DynamoDBAttributeValue, error) {
	if av, ok := decodeScalar(raw); ok {
		return av, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: %w", ErrMalformed, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: data after the attribute value", ErrMalformed))
	}
	return decodeValue(tree)
}

func decodeMap(obj map[string]any) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(obj))
	for k, v := range obj {
		av, err := decodeValue(v)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		out[k] = av
	}
	return out, nil
}

// decodeValue turns one {"<type>": <value>} object into an attribute value,
// with the type rules of aws-lambda-go's decoder.
func decodeValue(v any) (events.DynamoDBAttributeValue, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: an attribute value is a JSON object, got %s", ErrMalformed, jsonKind(v)))
	}
	if len(obj) != 1 {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: an attribute value has exactly one type key, got %d", ErrMalformed, len(obj)))
	}
	var label string
	var val any
	for label, val = range obj {
	}
	return decodeTyped(label, val)
}

func decodeTyped(label string, val any) (events.DynamoDBAttributeValue, error) {
	bad := func(want string) (events.DynamoDBAttributeValue, error) {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: %s holds %s, got %s", ErrMalformed, label, want, jsonKind(val)))
	}
	switch label {
	case "S":
		s, ok := val.(string)
		if !ok {
			return bad("a string")
		}
		return events.NewStringAttribute(s), nil
	case "N":
		s, ok := val.(string)
		if !ok {
			return bad("a string")
		}
		return events.NewNumberAttribute(s), nil
	case "B":
		s, ok := val.(string)
		if !ok {
			return bad("a base64 string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: B: %w", ErrMalformed, err))
		}
		return events.NewBinaryAttribute(b), nil
	case "BOOL":
		b, ok := val.(bool)
		if !ok {
			return bad("a boolean")
		}
		return events.NewBooleanAttribute(b), nil
	case "NULL":
		if b, ok := val.(bool); !ok || !b {
			return bad("true")
		}
		return events.NewNullAttribute(), nil
	case "SS", "NS":
		list, ok := val.([]any)
		if !ok {
			return bad("a list of strings")
		}
		ss := make([]string, len(list))
		for i, e := range list {
			if ss[i], ok = e.(string); !ok {
				return events.DynamoDBAttributeValue{}, within(leafError(fmt.Errorf("%w: %s element is a string, got %s", ErrMalformed, label, jsonKind(e))), indexSeg(i))
			}
		}
		if label == "SS" {
			return events.NewStringSetAttribute(ss), nil
		}
		return events.NewNumberSetAttribute(ss), nil
	case "BS":
		list, ok := val.([]any)
		if !ok {
			return bad("a list of base64 strings")
		}
		bs := make([][]byte, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return events.DynamoDBAttributeValue{}, within(leafError(fmt.Errorf("%w: BS element is a base64 string, got %s", ErrMalformed, jsonKind(e))), indexSeg(i))
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return events.DynamoDBAttributeValue{}, within(leafError(fmt.Errorf("%w: BS: %w", ErrMalformed, err)), indexSeg(i))
			}
			bs[i] = b
		}
		return events.NewBinarySetAttribute(bs), nil
	case "L":
		list, ok := val.([]any)
		if !ok {
			return bad("a list")
		}
		out := make([]events.DynamoDBAttributeValue, len(list))
		for i, e := range list {
			av, err := decodeValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, within(err, indexSeg(i))
			}
			out[i] = av
		}
		return events.NewListAttribute(out), nil
	case "M":
		obj, ok := val.(map[string]any)
		if !ok {
			return bad("an object")
		}
		m, err := decodeMap(obj)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	default:
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: type key %s", ErrUnsupportedType, strconv.Quote(label)))
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// decodeScalar decodes, without the generic tree, the attribute values a
// bucket image is made of, in the compact form DynamoDB and Lambda write
// them: {"S":"text"} and {"N":"digits"} whose text has no escape and is
// valid UTF-8 (so its bytes are its value), {"BOOL":true|false} and
// {"NULL":true}. ok is false for anything else, which decodeAttribute then
// decodes in full; raw is already valid JSON (encoding/json checks a value
// before handing it to an Unmarshaler).
func decodeScalar(raw []byte) (av events.DynamoDBAttributeValue, ok bool) {
	switch {
	case string(raw) == `{"BOOL":true}`:
		return events.NewBooleanAttribute(true), true
	case string(raw) == `{"BOOL":false}`:
		return events.NewBooleanAttribute(false), true
	case string(raw) == `{"NULL":true}`:
		return events.NewNullAttribute(), true
	}
	var number bool
	var rest []byte
	switch {
	case bytes.HasPrefix(raw, []byte(`{"S":"`)):
		rest = raw[len(`{"S":"`):]
	case bytes.HasPrefix(raw, []byte(`{"N":"`)):
		rest, number = raw[len(`{"N":"`):], true
	default:
		return events.DynamoDBAttributeValue{}, false
	}
	text, ok := bytes.CutSuffix(rest, []byte(`"}`))
	if !ok || bytes.IndexByte(text, '"') >= 0 || bytes.IndexByte(text, '\\') >= 0 || !utf8.Valid(text) {
		return events.DynamoDBAttributeValue{}, false
	}
	if number {
		return events.NewNumberAttribute(string(text)), true
	}
	return events.NewStringAttribute(string(text)), true
}
