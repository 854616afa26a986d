//go:build !lambda.norpc

package main

// The local modes: one event file, or a table's stream tailed as Lambda
// would. Left out of the deployed build (lambdaonly.go), which links
// neither the poller nor the emulator tooling.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
)

// runLocal parses -event and -follow and runs the mode asked for; it
// returns the process exit code.
func runLocal(log *slog.Logger) int {
	eventFile := flag.String("event", "", "process this Lambda-shaped DynamoDB stream event file and print the response")
	follow := flag.Bool("follow", false, "tail the table's stream and process batches as Lambda would")
	flag.Parse()
	if *eventFile == "" && !*follow {
		flag.Usage()
		log.Error("not under Lambda: pass -event FILE or -follow")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	local := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
	agg, w, err := wire(ctx, log, local)
	if err == nil {
		if *eventFile != "" {
			err = processFile(ctx, agg, *eventFile, os.Stdout)
		} else {
			err = followStream(ctx, w.aws, w.db, agg, os.Getenv("TABLE_NAME"), local, log)
		}
	}
	if err != nil {
		log.Error("aggregator stopped", "error", err)
		return 1
	}
	return 0
}

// processFile runs the handler on one Lambda-shaped event file and prints
// the batch response as JSON.
func processFile(ctx context.Context, agg *aggregator.Aggregator, path string, out io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ev, err := streamimage.DecodeEvent(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	resp, err := agg.Handle(ctx, ev)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}

// followStream tails the table's stream with the Lambda-faithful poller
// (batches of 100, partial batch failures re-delivered, 3 retries) until
// ctx ends.
func followStream(ctx context.Context, awsCfg aws.Config, db *dynamodb.Client, agg *aggregator.Aggregator, table string, local bool, log *slog.Logger) error {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return err
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		return fmt.Errorf("table %s has no stream", table)
	}
	opts := []func(*dynamodbstreams.Options){}
	if ep := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); local && os.Getenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS") == "" {
		opts = append(opts, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(ep) })
	}
	if local {
		opts = append(opts, streampoll.FixEmptyMaps)
	}
	streams := dynamodbstreams.NewFromConfig(awsCfg, opts...)
	p, err := streampoll.New(streams, arn, streampoll.Options{
		Handler: agg.Handle, BatchSize: 100, MaxRetries: 3, BisectOnError: true,
		StartingPosition: streampoll.Latest, Logger: log,
	})
	if err != nil {
		return err
	}
	log.Info("following stream", "table", table)
	if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
