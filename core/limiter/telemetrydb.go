package limiter

// The DynamoDB side of the telemetry (docs/design.md §18): every call the
// limiter sends, counted by operation and outcome, its write units
// estimated, and a client span per call, a child of the Acquire or lease
// span it was made under.

import (
	"context"
	"errors"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/answer"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/itemsize"
)

// dbOp is a DynamoDB operation of the DB interface.
type dbOp uint8

const (
	opUpdateItem dbOp = iota
	opPutItem
	opGetItem
	opBatchGetItem
	opQuery
	opTransactWriteItems
	opBatchWriteItem
	opDeleteItem
	numDBOps
)

var dbOpNames = [numDBOps]string{"UpdateItem", "PutItem", "GetItem", "BatchGetItem", "Query", "TransactWriteItems", "BatchWriteItem", "DeleteItem"}

// observedDB is the limiter's DB with every call observed. It sits under
// onceWrites, so each throttle retry is a call of its own, and under the
// config store, so config reads are observed too.
type observedDB struct {
	DB
	t *telemetry
}

// tracing reports whether to start spans now: the calls' spans here, the
// acquire's and the lease's in telemetry.go.
func (t *telemetry) tracing() bool {
	switch t.gate {
	case traceOn:
		return true
	case traceGlobal:
		return reflect.TypeOf(otel.GetTracerProvider()) != t.deflt
	}
	return false
}

// startCall begins a call's span, when spans are on.
func (t *telemetry) startCall(ctx context.Context, op dbOp) (context.Context, trace.Span) {
	if !t.tracing() {
		return ctx, nil
	}
	return t.tracer.Start(ctx, t.callNames[op], t.callStart[op]...)
}

// endCall counts a call by its outcome, adds the write units units()
// estimates when it wrote (or was charged as if it had), and ends its
// span.
func (t *telemetry) endCall(ctx context.Context, span trace.Span, op dbOp, err error, units func() int64) {
	counting, pricing := t.calls.Enabled(ctx), units != nil && t.writeUnits.Enabled(ctx)
	if !counting && !pricing && span == nil {
		return // unused: the error is not even classified
	}
	o := outcomeOf(err)
	if counting {
		t.calls.Add(ctx, 1, t.callOpts[op][o]...)
	}
	if pricing && (o == outcomeOK || o == outcomeConditionalFailed) {
		t.writeUnits.Add(ctx, units(), t.unitOpts[op]...)
	}
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(t.outcomeKVs[o][0], semconv.ErrorTypeKey.String(errorType(err)))
		if o == outcomeThrottled || o == outcomeError {
			// A failed condition or a conflict is the limiter's answer
			// (a verdict, contention), not a fault: the span stays unset.
			failed(span, err)
		}
	}
	span.End()
}

// outcomeOf classifies a call's error.
func outcomeOf(err error) outcome {
	if err == nil {
		return outcomeOK
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return outcomeConditionalFailed
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		o := outcomeError
		for _, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				return outcomeConditionalFailed
			case "TransactionConflict":
				o = outcomeConflict
			case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				if o == outcomeError {
					o = outcomeThrottled
				}
			}
		}
		return o
	}
	if throttled(err) {
		return outcomeThrottled
	}
	return outcomeError
}

// errorType is the error.type of a failed call: DynamoDB's error code, or
// _OTHER (the semantic conventions' fallback).
func errorType(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		return api.ErrorCode()
	}
	return "_OTHER"
}

// Write units, estimated the way docs/costs.md prices a write: one unit
// per started KB of the item, at least one, a failed condition charged as
// a write of the item it failed on (one unit when there is none), and
// every item of a transaction twice. The size is the item the call shows —
// the image it returns, the item it puts — and one unit where it shows
// none (a write that returns nothing, a transaction's update). Index
// writes are not counted: the limiter cannot see the table's projections.

func (d observedDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opUpdateItem)
	out, err := d.DB.UpdateItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opUpdateItem, err, func() int64 {
		if out != nil {
			return answeredItemUnits(out.ResultMetadata, out.Attributes)
		}
		return failedItemUnits(err)
	})
	return out, err
}

func (d observedDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opPutItem)
	out, err := d.DB.PutItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opPutItem, err, func() int64 { return max(itemsize.ItemUnits(in.Item), failedItemUnits(err)) })
	return out, err
}

func (d observedDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opDeleteItem)
	out, err := d.DB.DeleteItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opDeleteItem, err, func() int64 {
		if out != nil {
			return answeredItemUnits(out.ResultMetadata, out.Attributes)
		}
		return failedItemUnits(err)
	})
	return out, err
}

func (d observedDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	ctx, span := d.t.startCall(ctx, opTransactWriteItems)
	out, err := d.DB.TransactWriteItems(ctx, in, opts...)
	d.t.endCall(ctx, span, opTransactWriteItems, err, func() int64 {
		var n int64
		for _, it := range in.TransactItems {
			if it.Put != nil {
				n += itemsize.ItemUnits(it.Put.Item)
			} else {
				n++
			}
		}
		return 2 * n
	})
	return out, err
}

func (d observedDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opBatchWriteItem)
	out, err := d.DB.BatchWriteItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opBatchWriteItem, err, func() int64 {
		n := batchUnits(in.RequestItems)
		if out != nil {
			n -= batchUnits(out.UnprocessedItems)
		}
		return max(n, 0)
	})
	return out, err
}

func (d observedDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opGetItem)
	out, err := d.DB.GetItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opGetItem, err, nil)
	return out, err
}

func (d observedDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	ctx, span := d.t.startCall(ctx, opBatchGetItem)
	out, err := d.DB.BatchGetItem(ctx, in, opts...)
	d.t.endCall(ctx, span, opBatchGetItem, err, nil)
	return out, err
}

func (d observedDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	ctx, span := d.t.startCall(ctx, opQuery)
	out, err := d.DB.Query(ctx, in, opts...)
	d.t.endCall(ctx, span, opQuery, err, nil)
	return out, err
}

// failedItemUnits is what a write whose condition failed is charged: the
// item it failed on (ReturnValuesOnConditionCheckFailure), or one unit.
func failedItemUnits(err error) int64 {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return itemsize.ItemUnits(ccf.Item)
	}
	return 1
}

// batchUnits is the write units of a BatchWriteItem's requests.
func batchUnits(reqs map[string][]types.WriteRequest) int64 {
	var n int64
	for _, rs := range reqs {
		for _, r := range rs {
			if r.PutRequest != nil {
				n += itemsize.ItemUnits(r.PutRequest.Item)
			} else {
				n++
			}
		}
	}
	return n
}

// answeredItemUnits is itemsize.ItemUnits(item) for the item a write's answer
// returned (ReturnValues), found without walking the item when the answer's
// length shows the item is at most 1 KB: one unit. The walk over a bucket
// item's thirty-odd attributes was the largest part of what the metrics
// cost a fast-path acquire (docs/decisions.md P50).
// An answer whose item the answer's reader took (package answer) carries no
// SDK values: its count of attributes gives the bound, and its JSON the
// size.
func answeredItemUnits(md middleware.Metadata, item map[string]types.AttributeValue) int64 {
	if a := answer.Of(md); a != nil {
		if b := answeredItemBound(md, a.Attrs); b >= 0 && b <= itemsize.KB {
			return 1
		}
		return itemsize.Units(int64(itemsize.JSON(a.Item)))
	}
	if b := answeredItemBound(md, len(item)); b >= 0 && b <= itemsize.KB {
		return 1
	}
	return itemsize.ItemUnits(item)
}

// Bytes of an answer's JSON beyond the sizes DynamoDB counts for the item
// it carries ({"Attributes":{"name":{"T":value},...}}): the envelope with
// the braces of the attribute map, and
// per attribute at least its name's quotes, the colon, the braces and the
// type tag of its value (`"N"` the shortest) and the colon after it, less
// one, since an empty list or map ([] or {}) is two bytes of JSON and
// counts three; and a comma between two attributes. Every value's JSON is
// at least the size counted for it (a string's quoted and escaped, a
// number's digits quoted against one byte per two digits plus one, binary
// in base64, a boolean spelt out, a non-empty list or map with its
// elements' type tags).
const (
	answerEnvelopeJSON = len(`{"Attributes":{}}`)
	attributeJSON      = len(`"":{"N":}`) - 1
)

// answeredItemBound is an upper bound of the size of the item an answer
// carries in n attributes, from the answer's Content-Length, or -1 when
// the answer does not say (no raw HTTP response in the metadata, as from a
// DB that is not the SDK's client; a length unknown; a body
// content-encoded).
func answeredItemBound(md middleware.Metadata, n int) int64 {
	resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
	if !ok || resp == nil || resp.Response == nil || resp.ContentLength < 0 || resp.Header.Get("Content-Encoding") != "" {
		return -1
	}
	return resp.ContentLength - int64(answerEnvelopeJSON) - int64(attributeJSON*n) - int64(max(n-1, 0))
}
