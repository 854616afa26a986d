package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
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
