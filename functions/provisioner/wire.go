package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
)

// Settings from the environment (docs/design.md §12).
const (
	envTable         = "TABLE_NAME"
	envStampTTL      = "ZAEL_STAMP_TTL_SECONDS"
	envLambdaVersion = "ZAEL_LAMBDA_VERSION"
)

// settings are the function's environment, validated.
type settings struct {
	table         string
	stampTTL      time.Duration
	lambdaVersion string
}

func settingsFrom(getenv func(string) string) (settings, error) {
	s := settings{table: getenv(envTable), stampTTL: 60 * time.Second, lambdaVersion: config.BuildVersion}
	if err := schema.ValidateStackName(s.table); err != nil {
		return s, fmt.Errorf("%s: %w", envTable, err)
	}
	if v := getenv(envStampTTL); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3600 {
			return s, fmt.Errorf("%s: %q is not a whole number of seconds between 1 and 3600", envStampTTL, v)
		}
		s.stampTTL = time.Duration(n) * time.Second
	}
	if v := getenv(envLambdaVersion); v != "" {
		s.lambdaVersion = v
	}
	return s, nil
}

// wire builds the handler from the environment and the SDK's default AWS
// config. Response checksums are validated unless emulator is set
// (DynamoDB Local sends none on 4xx answers).
func wire(ctx context.Context, log *slog.Logger, emulator bool) (*handler.Handler, error) {
	s, err := settingsFrom(os.Getenv)
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
	return handler.New(db, handler.Settings{Table: s.table, StampTTL: s.stampTTL, LambdaVersion: s.lambdaVersion}, log), nil
}
