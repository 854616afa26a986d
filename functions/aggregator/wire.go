package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// wired is what wire builds besides the handler: the AWS config and the
// DynamoDB client (the local modes reuse them).
type wired struct {
	aws aws.Config
	db  *dynamodb.Client
}

// wire builds the aggregator from the environment: TABLE_NAME and the
// snapshot settings, the SDK's default AWS config, one DynamoDB client,
// EMF metrics on stdout and the maintainer. Response checksums are
// validated unless emulator is set (DynamoDB Local sends none on 4xx
// answers); under Lambda it never is, whatever the environment.
func wire(ctx context.Context, log *slog.Logger, emulator bool) (*aggregator.Aggregator, wired, error) {
	cfg, err := aggregator.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, wired{}, err
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, wired{}, fmt.Errorf("aws config: %w", err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = emulator
	})
	agg, err := aggregator.New(db, cfg, aggregator.Options{
		Logger:     log,
		Metrics:    aggregator.WriterSink(os.Stdout),
		Maintainer: maintenance.New(db, cfg.TableName, maintenance.Options{Logger: log}),
	})
	if err != nil {
		return nil, wired{}, err
	}
	return agg, wired{aws: awsCfg, db: db}, nil
}

// streamEvent is the invocation payload, decoded by streamimage.DecodeEvent
// rather than by aws-lambda-go's own decoder: the same event for every
// valid payload (DecodeEvent is fuzzed against it), at a fraction of the
// allocations (it builds no map per attribute value), and an error instead
// of a panic on a malformed attribute. The -event mode decodes its file the
// same way.
type streamEvent struct{ ev events.DynamoDBEvent }

// UnmarshalJSON implements json.Unmarshaler.
func (e *streamEvent) UnmarshalJSON(data []byte) error {
	ev, err := streamimage.DecodeEvent(data)
	if err != nil {
		return err
	}
	e.ev = ev
	return nil
}

// handler is the function main hands to lambda.Start: the payload decoded
// as a streamEvent, then the aggregator.
func handler(agg *aggregator.Aggregator) func(context.Context, streamEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, e streamEvent) (events.DynamoDBEventResponse, error) {
		return agg.Handle(ctx, e.ev)
	}
}
