//go:build !lambda.norpc

package main

// The local modes: one event file, or a table's stream tailed as Lambda
// would. Left out of the deployed build (lambdaonly.go), which links
// neither the poller nor the emulator tooling.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
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
	h, w, err := wire(ctx, log, local)
	if err == nil {
		if *eventFile != "" {
			err = h.RunEvent(ctx, *eventFile, os.Stdout)
		} else {
			err = followStream(ctx, w.aws, w.db, h, os.Getenv("TABLE_NAME"), local, log)
		}
	}
	if err != nil {
		log.Error("aggregator stopped", "error", err)
		return 1
	}
	return 0
}

// followStream tails the table's stream with the Lambda-faithful poller
// (batches of 100, partial batch failures re-delivered, 3 retries) until
// ctx ends.
func followStream(ctx context.Context, awsCfg aws.Config, db *dynamodb.Client, h *handler.Handler, table string, local bool, log *slog.Logger) error {
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
		Handler: h.Handle, BatchSize: 100, MaxRetries: 3, BisectOnError: true,
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
