// Command aggregator is the DynamoDB Streams Lambda of the limiter stack
// (SPEC §14): usage snapshots from the tc counters, rf-locked refill, shard
// doubling and stamp-preserving clones.
//
// The stream handler arrives with the aggregator issue. Until then this
// binary fails every invocation with an error, so an event source mapping
// pointed at it retries and keeps its records instead of checkpointing them
// unprocessed.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

var errNotBuilt = errors.New("aggregator: the stream handler is not built yet; records are left on the stream")

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	lambda.Start(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		log.ErrorContext(ctx, "refusing batch", "records", len(ev.Records), "error", errNotBuilt)
		return events.DynamoDBEventResponse{}, errNotBuilt
	})
}
