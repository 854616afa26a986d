// Command aggregator is the DynamoDB Streams Lambda of the limiter stack
// (SPEC §14): usage snapshots from the tc counters, rf-locked refill, shard
// doubling and stamp-preserving clones. It wires configuration, clients and
// the handler of core/aggregator.
//
// Under Lambda it serves the event source mapping. Outside Lambda the same
// binary processes one Lambda-shaped event file, or tails a table's stream:
//
//	aggregator -event events/stream-modify.json   # prints the batch response
//	aggregator -follow                            # processes batches as Lambda would
//
// against TABLE_NAME at the endpoint in AWS_ENDPOINT_URL_DYNAMODB.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
)

func main() {
	eventFile := flag.String("event", "", "process this Lambda-shaped DynamoDB stream event file and print the response")
	follow := flag.Bool("follow", false, "tail the table's stream and process batches as Lambda would")
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log, *eventFile, *follow); err != nil {
		log.Error("aggregator stopped", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, eventFile string, follow bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := aggregator.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	local := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		// DynamoDB Local sends no x-amz-crc32 on 4xx answers (DECISIONS D16).
		o.DisableValidateResponseChecksum = local
	})
	agg, err := aggregator.New(db, cfg, aggregator.Options{
		Logger:     log,
		Metrics:    aggregator.WriterSink(os.Stdout),
		Maintainer: maintenance.New(db, cfg.TableName, maintenance.Options{Logger: log}),
	})
	if err != nil {
		return err
	}
	switch {
	case eventFile != "":
		return processFile(ctx, agg, eventFile, os.Stdout)
	case follow:
		return followStream(ctx, awsCfg, db, agg, cfg.TableName, local, log)
	case os.Getenv("AWS_LAMBDA_RUNTIME_API") != "":
		lambda.StartWithOptions(agg.Handle, lambda.WithContext(ctx))
		return nil
	}
	flag.Usage()
	return fmt.Errorf("not under Lambda: pass -event FILE or -follow")
}
