// Command aggregator is the DynamoDB Streams Lambda of the limiter stack
// (docs/design.md §6): usage snapshots from the tc counters, rf-locked
// refill, shard doubling and stamp-preserving clones. It wires
// configuration, the DynamoDB client and the handler (package handler, over
// the aggregator of core/aggregator).
//
// Under Lambda (AWS_LAMBDA_RUNTIME_API set) it serves the event source
// mapping. A build without the lambda.norpc tag (not the deployed one, see
// scripts/build-lambdas.sh) also runs outside Lambda, on DynamoDB Local or
// any endpoint in AWS_ENDPOINT_URL_DYNAMODB (local.go):
//
//	aggregator -event events/stream-modify.json   # prints the batch response
//	aggregator -follow                            # processes batches as Lambda would
package main

import (
	"context"
	"log/slog"
	"os"

	// Schedules read the wall clock of IANA zones (docs/design.md §14):
	// the zone database is built in, so the function needs none on its host.
	_ "time/tzdata"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") == "" {
		os.Exit(runLocal(log))
	}
	h, _, err := wire(context.Background(), log, false)
	if err != nil {
		log.Error("aggregator init failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
