// Package streamimage converts DynamoDB attribute values between the three
// shapes a stream record takes on its way to the aggregator:
//
//   - service/dynamodbstreams/types.AttributeValue, what the Streams API
//     (GetRecords) returns;
//   - events.DynamoDBAttributeValue from aws-lambda-go, what a Lambda
//     function receives in an events.DynamoDBEvent;
//   - service/dynamodb/types.AttributeValue, what the aggregator writes back
//     and compares against.
//
// Every one of the ten DynamoDB types converts, nested to any depth. Numbers
// stay the decimal strings DynamoDB sends; nothing passes through float64.
// Byte slices are copied, so the result never aliases the input. A nil slice
// or map inside a value stays nil and an empty one stays empty, so
// conversions round-trip exactly (reflect.DeepEqual).
//
// Malformed input never panics: it yields a *PathError naming the attribute
// and wrapping ErrNilValue, ErrUnsupportedType or ErrMalformed.
//
// RecordFromStreams turns a whole Streams API record into the record Lambda
// delivers, and DecodeEvent parses Lambda event JSON without the panics
// aws-lambda-go's own decoder has on some malformed input. ReadEvent reads
// the usual event's records with their images kept as JSON text (Image),
// views of the event's bytes, for a reader that decodes them straight into
// its own values.
package streamimage

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// FromStreams converts a Streams API attribute value into the Lambda event
// shape. The SDK converts Streams values to DynamoDB ones
// (attributevalue.FromDynamoDBStreams); what it lacks, and this package
// adds, is the Lambda event shape (FromDynamoDB) and safety on malformed
// input: the SDK dereferences a typed-nil member (a panic) and reports an
// unknown member without naming the attribute, so checkStreams refuses
// both first, with their path.
func FromStreams(v streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	if err := checkStreams(v); err != nil {
		return events.DynamoDBAttributeValue{}, err
	}
	dv, err := attributevalue.FromDynamoDBStreams(v)
	if err != nil {
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: %v", ErrUnsupportedType, err))
	}
	return FromDynamoDB(dv)
}

// checkStreams refuses what attributevalue.FromDynamoDBStreams cannot take:
// a nil or typed-nil member, and a member it does not know.
func checkStreams(v streamtypes.AttributeValue) error {
	if rv := reflect.ValueOf(v); !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return leafError(ErrNilValue)
	}
	switch m := v.(type) {
	case *streamtypes.AttributeValueMemberS, *streamtypes.AttributeValueMemberN, *streamtypes.AttributeValueMemberB,
		*streamtypes.AttributeValueMemberBOOL, *streamtypes.AttributeValueMemberNULL,
		*streamtypes.AttributeValueMemberSS, *streamtypes.AttributeValueMemberNS, *streamtypes.AttributeValueMemberBS:
		return nil
	case *streamtypes.AttributeValueMemberL:
		for i, e := range m.Value {
			if err := checkStreams(e); err != nil {
				return within(err, indexSeg(i))
			}
		}
		return nil
	case *streamtypes.AttributeValueMemberM:
		for k, e := range m.Value {
			if err := checkStreams(e); err != nil {
				return within(err, keySeg(k))
			}
		}
		return nil
	case *streamtypes.UnknownUnionMember:
		return leafError(fmt.Errorf("%w: union member %q", ErrUnsupportedType, m.Tag))
	}
	return leafError(fmt.Errorf("%w: %T", ErrUnsupportedType, v))
}

// ImageFromStreams converts a Streams API item image (Keys, NewImage or
// OldImage) into the Lambda event shape. A nil image gives a nil map.
func ImageFromStreams(img map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		c, err := FromStreams(v)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		out[k] = c
	}
	return out, nil
}

// FromDynamoDB converts a DynamoDB API attribute value into the Lambda event
// shape; it is the inverse of ToDynamoDB.
func FromDynamoDB(v ddbtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch m := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewStringAttribute(m.Value), nil
	case *ddbtypes.AttributeValueMemberN:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewNumberAttribute(m.Value), nil
	case *ddbtypes.AttributeValueMemberB:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewBinaryAttribute(bytes.Clone(m.Value)), nil
	case *ddbtypes.AttributeValueMemberBOOL:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewBooleanAttribute(m.Value), nil
	case *ddbtypes.AttributeValueMemberNULL:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		if !m.Value {
			return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: NULL must be true", ErrMalformed))
		}
		return events.NewNullAttribute(), nil
	case *ddbtypes.AttributeValueMemberSS:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewStringSetAttribute(cloneStrings(m.Value)), nil
	case *ddbtypes.AttributeValueMemberNS:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewNumberSetAttribute(cloneStrings(m.Value)), nil
	case *ddbtypes.AttributeValueMemberBS:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.NewBinarySetAttribute(cloneBytesSlice(m.Value)), nil
	case *ddbtypes.AttributeValueMemberL:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		var out []events.DynamoDBAttributeValue
		if m.Value != nil {
			out = make([]events.DynamoDBAttributeValue, len(m.Value))
		}
		for i, e := range m.Value {
			c, err := FromDynamoDB(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, within(err, indexSeg(i))
			}
			out[i] = c
		}
		return events.NewListAttribute(out), nil
	case *ddbtypes.AttributeValueMemberM:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		out, err := ImageFromDynamoDB(m.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(out), nil
	case nil:
		return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
	case *ddbtypes.UnknownUnionMember:
		if m == nil {
			return events.DynamoDBAttributeValue{}, leafError(ErrNilValue)
		}
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: union member %q", ErrUnsupportedType, m.Tag))
	default:
		return events.DynamoDBAttributeValue{}, leafError(fmt.Errorf("%w: %T", ErrUnsupportedType, v))
	}
}

// ImageFromDynamoDB converts a DynamoDB API item into the Lambda event shape;
// it is the inverse of ImageToDynamoDB. A nil item gives a nil map.
func ImageFromDynamoDB(item map[string]ddbtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if item == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		c, err := FromDynamoDB(v)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		out[k] = c
	}
	return out, nil
}

// ToDynamoDB converts a Lambda event attribute value into the DynamoDB API
// shape, for writing it back or comparing it with what was written.
//
// The events type can hold states its own accessors panic on (the zero
// value, for one); ToDynamoDB reports them as errors instead.
func ToDynamoDB(av events.DynamoDBAttributeValue) (ddbtypes.AttributeValue, error) {
	// The zero value claims DataTypeBinary but holds no value; Binary() would
	// panic on it. Comparing against the zero literal is safe: its value field
	// is a nil interface, so the comparison never reaches the dynamic values.
	if av == (events.DynamoDBAttributeValue{}) {
		return nil, leafError(fmt.Errorf("%w: zero events.DynamoDBAttributeValue", ErrNilValue))
	}
	switch t := av.DataType(); t {
	case events.DataTypeString:
		s, err := access(av, events.DynamoDBAttributeValue.String)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberS{Value: s}, nil
	case events.DataTypeNumber:
		n, err := access(av, events.DynamoDBAttributeValue.Number)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberN{Value: n}, nil
	case events.DataTypeBinary:
		b, err := access(av, events.DynamoDBAttributeValue.Binary)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberB{Value: bytes.Clone(b)}, nil
	case events.DataTypeBoolean:
		b, err := access(av, events.DynamoDBAttributeValue.Boolean)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberBOOL{Value: b}, nil
	case events.DataTypeNull:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		ss, err := access(av, events.DynamoDBAttributeValue.StringSet)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberSS{Value: cloneStrings(ss)}, nil
	case events.DataTypeNumberSet:
		ns, err := access(av, events.DynamoDBAttributeValue.NumberSet)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberNS{Value: cloneStrings(ns)}, nil
	case events.DataTypeBinarySet:
		bs, err := access(av, events.DynamoDBAttributeValue.BinarySet)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberBS{Value: cloneBytesSlice(bs)}, nil
	case events.DataTypeList:
		l, err := access(av, events.DynamoDBAttributeValue.List)
		if err != nil {
			return nil, err
		}
		var out []ddbtypes.AttributeValue
		if l != nil {
			out = make([]ddbtypes.AttributeValue, len(l))
		}
		for i, e := range l {
			c, err := ToDynamoDB(e)
			if err != nil {
				return nil, within(err, indexSeg(i))
			}
			out[i] = c
		}
		return &ddbtypes.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := access(av, events.DynamoDBAttributeValue.Map)
		if err != nil {
			return nil, err
		}
		out, err := ImageToDynamoDB(m)
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberM{Value: out}, nil
	default:
		return nil, leafError(fmt.Errorf("%w: events DataType %d", ErrUnsupportedType, t))
	}
}

// ImageToDynamoDB converts a Lambda event image (Keys, NewImage or OldImage)
// into a DynamoDB API item. A nil image gives a nil map.
func ImageToDynamoDB(img map[string]events.DynamoDBAttributeValue) (map[string]ddbtypes.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]ddbtypes.AttributeValue, len(img))
	for k, v := range img {
		c, err := ToDynamoDB(v)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		out[k] = c
	}
	return out, nil
}

// CheckImage reports the error ImageToDynamoDB would return for img, without
// converting anything: nil when every attribute converts. It allocates
// nothing on success, so a consumer that reads the Lambda event shape
// directly keeps ImageToDynamoDB's rules.
func CheckImage(img map[string]events.DynamoDBAttributeValue) error {
	for k, v := range img {
		if err := Check(v); err != nil {
			return within(err, keySeg(k))
		}
	}
	return nil
}

// Check reports the error ToDynamoDB would return for av, without
// converting it. After a nil result the events accessors matching
// av.DataType() do not panic on av or on anything nested in it.
func Check(av events.DynamoDBAttributeValue) error {
	if av == (events.DynamoDBAttributeValue{}) {
		return leafError(fmt.Errorf("%w: zero events.DynamoDBAttributeValue", ErrNilValue))
	}
	var err error
	switch t := av.DataType(); t {
	case events.DataTypeString:
		_, err = access(av, events.DynamoDBAttributeValue.String)
	case events.DataTypeNumber:
		_, err = access(av, events.DynamoDBAttributeValue.Number)
	case events.DataTypeBinary:
		_, err = access(av, events.DynamoDBAttributeValue.Binary)
	case events.DataTypeBoolean:
		_, err = access(av, events.DynamoDBAttributeValue.Boolean)
	case events.DataTypeNull:
	case events.DataTypeStringSet:
		_, err = access(av, events.DynamoDBAttributeValue.StringSet)
	case events.DataTypeNumberSet:
		_, err = access(av, events.DynamoDBAttributeValue.NumberSet)
	case events.DataTypeBinarySet:
		_, err = access(av, events.DynamoDBAttributeValue.BinarySet)
	case events.DataTypeList:
		l, aerr := access(av, events.DynamoDBAttributeValue.List)
		if aerr != nil {
			return aerr
		}
		for i, e := range l {
			if err := Check(e); err != nil {
				return within(err, indexSeg(i))
			}
		}
	case events.DataTypeMap:
		m, aerr := access(av, events.DynamoDBAttributeValue.Map)
		if aerr != nil {
			return aerr
		}
		return CheckImage(m)
	default:
		return leafError(fmt.Errorf("%w: events DataType %d", ErrUnsupportedType, t))
	}
	return err
}

// access calls one of the events accessors, which panic when the value's
// content does not match its DataType, and turns such a panic into an error.
func access[T any](av events.DynamoDBAttributeValue, get func(events.DynamoDBAttributeValue) T) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = leafError(fmt.Errorf("%w: %v", ErrMalformed, r))
		}
	}()
	return get(av), nil
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append(make([]string, 0, len(s)), s...)
}

func cloneBytesSlice(bs [][]byte) [][]byte {
	if bs == nil {
		return nil
	}
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = bytes.Clone(b)
	}
	return out
}
