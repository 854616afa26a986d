package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
)

// wire builds the handler from the environment (handler.SettingsFromEnv:
// TABLE_NAME, ZAEL_STAMP_TTL_SECONDS, ZAEL_LAMBDA_VERSION), the SDK's
// default AWS config and one DynamoDB client. Response checksums are
// validated unless emulator is set (DynamoDB Local sends none on 4xx
// answers); under Lambda it never is, whatever the environment.
func wire(ctx context.Context, log *slog.Logger, emulator bool) (*handler.Handler, error) {
	s, err := handler.SettingsFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = emulator
	})
	return handler.New(db, s, log), nil
}
