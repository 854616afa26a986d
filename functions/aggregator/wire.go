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
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// wired is what wire builds besides the handler: the AWS config and the
// DynamoDB client (the local modes reuse them).
type wired struct {
	aws aws.Config
	db  *dynamodb.Client
	// direct is the handler's client: db, with the snapshot writes sent
	// by condwrite.
	direct *condwrite.DB
}

// wire builds the handler from the environment (handler.SettingsFromEnv:
// TABLE_NAME and the snapshot settings), the SDK's default AWS config and
// one DynamoDB client, whose conditional UpdateItems (the snapshot writes)
// condwrite sends itself (docs/design.md §6, "Snapshot writes without the
// SDK's stack"), with EMF metrics on stdout. Response checksums are
// validated unless emulator is set (DynamoDB Local sends none on 4xx
// answers); under Lambda it never is, whatever the environment.
func wire(ctx context.Context, log *slog.Logger, emulator bool) (*handler.Handler, wired, error) {
	s, err := handler.SettingsFromEnv(os.Getenv)
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
	s.Metrics = aggregator.WriterSink(os.Stdout)
	direct := condwrite.New(ctx, db)
	h, err := handler.New(direct, s, log)
	if err != nil {
		return nil, wired{}, err
	}
	return h, wired{aws: awsCfg, db: db, direct: direct}, nil
}
