// Package handler is the aggregator function's handler (docs/design.md §6):
// it decodes a DynamoDB Streams event, hands its records to the aggregator
// of core/aggregator (usage snapshots, then bucket maintenance) and answers
// the event source mapping with partial batch failures. The function's main
// wires it; the -event flag and `make run` call RunEvent, the stream
// poller outside Lambda calls Handle.
package handler

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// DB is the part of the DynamoDB client the aggregator and its maintainer
// use.
type DB interface {
	aggregator.DB
	maintenance.DB
}

// Handler serves every invocation of the aggregator function.
type Handler struct {
	agg *aggregator.Aggregator
}

// New returns the handler of s.Config.TableName through db: the aggregator
// with its maintainer, both logging to log.
func New(db DB, s Settings, log *slog.Logger) (*Handler, error) {
	agg, err := aggregator.New(db, s.Config, aggregator.Options{
		Clock:      s.Clock,
		Logger:     log,
		Metrics:    s.Metrics,
		Maintainer: maintenance.New(db, s.Config.TableName, maintenance.Options{Clock: s.Clock, Logger: log}),
	})
	if err != nil {
		return nil, err
	}
	return &Handler{agg: agg}, nil
}

// Invoke is the Lambda entry point, which makes *Handler a lambda.Handler
// (main starts it with lambda.Start): the records read from the bytes the
// runtime hands over, processed, and the response as JSON. An event of the
// usual shape is read by streamimage.ReadEvent and processed from its text
// (aggregator.ProcessText: no map per image; the payload is not written
// while Invoke runs, and nothing of it is kept after); any other is decoded
// by streamimage.DecodeEvent and handed to Handle. An undecodable payload
// is an error, which fails the invocation (its error is the decoder's,
// naming the record and attribute).
//
// It takes the bytes itself rather than a typed event through
// aws-lambda-go's reflective adapter, whose json.Decoder first copies the
// payload into a buffer of its own, grown by doubling, and scans it once
// more: at the benchmark's 10,000-record batch that was a fifth of the
// bytes an invocation allocated (docs/costs.md).
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var resp events.DynamoDBEventResponse
	if recs, err := streamimage.ReadEvent(payload); err == nil {
		res, err := h.agg.ProcessText(ctx, recs)
		if err != nil {
			return nil, err
		}
		resp = response(res)
	} else {
		ev, err := streamimage.DecodeEvent(payload)
		if err != nil {
			return nil, err
		}
		if resp, err = h.Handle(ctx, ev); err != nil {
			return nil, err
		}
	}
	return json.Marshal(resp)
}

// Handle processes one batch and answers as an event source mapping with
// ReportBatchItemFailures expects: when some snapshot work is not done, one
// BatchItemFailure, the lowest sequence number to redeliver from
// (aggregator.Result); none when all of it is. An error (a panic inside
// the aggregator) fails the whole batch. It has the shape of
// streampoll.Handler, which stands in for the mapping outside Lambda.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	res, err := h.agg.Process(ctx, ev.Records)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	return response(res), nil
}

// response is the answer to the event source mapping for res.
func response(res aggregator.Result) events.DynamoDBEventResponse {
	var resp events.DynamoDBEventResponse
	if res.RedeliverFrom != "" {
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: res.RedeliverFrom}}
	}
	return resp
}
