package condwrite

import (
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// appendUpdate appends the JSON 1.0 body of in to buf, as the SDK's
// serializer writes it member for member (their order aside), and reports
// whether in is a shape the package sends (the package doc); when it is
// not, the bytes appended mean nothing.
func appendUpdate(buf []byte, in *dynamodb.UpdateItemInput) ([]byte, bool) {
	switch {
	case in == nil, in.TableName == nil, in.Key == nil, in.UpdateExpression == nil,
		strings.HasPrefix(*in.TableName, "arn:"), // the SDK may route it by its account
		in.ConditionExpression == nil || *in.ConditionExpression == "",
		in.AttributeUpdates != nil, in.Expected != nil, in.ConditionalOperator != "",
		in.ReturnValues != "" && in.ReturnValues != types.ReturnValueNone,
		in.ReturnConsumedCapacity != "" && in.ReturnConsumedCapacity != types.ReturnConsumedCapacityNone,
		in.ReturnItemCollectionMetrics != "" && in.ReturnItemCollectionMetrics != types.ReturnItemCollectionMetricsNone:
		return buf, false
	}
	ok := true
	buf = append(buf, `{"TableName":`...)
	buf, ok = appendString(buf, *in.TableName, ok)
	buf = append(buf, `,"Key":`...)
	buf, ok = appendValues(buf, in.Key, ok)
	buf = append(buf, `,"UpdateExpression":`...)
	buf, ok = appendString(buf, *in.UpdateExpression, ok)
	buf = append(buf, `,"ConditionExpression":`...)
	buf, ok = appendString(buf, *in.ConditionExpression, ok)
	if in.ExpressionAttributeNames != nil {
		buf = append(buf, `,"ExpressionAttributeNames":{`...)
		first := true
		for k, v := range in.ExpressionAttributeNames {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf, ok = appendString(buf, k, ok)
			buf = append(buf, ':')
			buf, ok = appendString(buf, v, ok)
		}
		buf = append(buf, '}')
	}
	if in.ExpressionAttributeValues != nil {
		buf = append(buf, `,"ExpressionAttributeValues":`...)
		buf, ok = appendValues(buf, in.ExpressionAttributeValues, ok)
	}
	for _, e := range [...]struct{ member, value string }{
		{"ReturnValues", string(in.ReturnValues)},
		{"ReturnConsumedCapacity", string(in.ReturnConsumedCapacity)},
		{"ReturnItemCollectionMetrics", string(in.ReturnItemCollectionMetrics)},
		{"ReturnValuesOnConditionCheckFailure", string(in.ReturnValuesOnConditionCheckFailure)},
	} {
		if e.value == "" {
			continue
		}
		buf = append(buf, ',', '"')
		buf = append(buf, e.member...)
		buf = append(buf, '"', ':')
		buf, ok = appendString(buf, e.value, ok)
	}
	return append(buf, '}'), ok
}

// appendValues appends a map of attribute values as a JSON object. Values
// of a type other than S, N, BOOL and NULL, and nil values, make ok false.
func appendValues(buf []byte, m map[string]types.AttributeValue, ok bool) ([]byte, bool) {
	buf = append(buf, '{')
	first := true
	for k, v := range m {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf, ok = appendString(buf, k, ok)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			buf = append(buf, `:{"S":`...)
			buf, ok = appendString(buf, v.Value, ok)
		case *types.AttributeValueMemberN:
			buf = append(buf, `:{"N":`...)
			buf, ok = appendString(buf, v.Value, ok)
		case *types.AttributeValueMemberBOOL:
			buf = append(buf, `:{"BOOL":`...)
			buf = appendBool(buf, v.Value)
		case *types.AttributeValueMemberNULL:
			buf = append(buf, `:{"NULL":`...)
			buf = appendBool(buf, v.Value)
		default:
			return buf, false
		}
		buf = append(buf, '}')
	}
	return append(buf, '}'), ok
}

func appendBool(buf []byte, v bool) []byte {
	if v {
		return append(buf, "true"...)
	}
	return append(buf, "false"...)
}

// appendString appends s as a JSON string. Text that is not valid UTF-8
// makes ok false (the SDK's encoder would replace it; the SDK sends it).
func appendString(buf []byte, s string, ok bool) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return buf, false
	}
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), ok
}

// requestSize is about the length of in's body, so that it is built in
// one allocation.
func requestSize(in *dynamodb.UpdateItemInput) int {
	if in == nil {
		return 0
	}
	n := 256
	for _, p := range []*string{in.TableName, in.UpdateExpression, in.ConditionExpression} {
		if p != nil {
			n += len(*p)
		}
	}
	for k, v := range in.ExpressionAttributeNames {
		n += len(k) + len(v) + 6
	}
	for _, m := range []map[string]types.AttributeValue{in.Key, in.ExpressionAttributeValues} {
		for k, v := range m {
			n += len(k) + 16
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				n += len(v.Value)
			case *types.AttributeValueMemberN:
				n += len(v.Value)
			}
		}
	}
	return n
}
