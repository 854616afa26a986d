// Package awsconf builds the DynamoDB client zl talks to the limiter's
// table through: the SDK's default configuration chain (environment,
// shared config and credentials files, SSO, instance roles) with the
// region, profile and endpoint the command line names.
package awsconf

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Options say where the table lives.
type Options struct {
	// Region overrides the configured region ("" keeps it).
	Region string
	// Profile names a shared config profile ("" keeps the default chain).
	Profile string
	// Endpoint is a DynamoDB endpoint URL ("" is AWS's for the region):
	// DynamoDB Local, say.
	Endpoint string
}

// DynamoDB returns a DynamoDB client for o. With an endpoint, response
// checksum validation is off: DynamoDB Local sends no x-amz-crc32 header on
// its 4xx answers (docs/design.md §1).
func DynamoDB(ctx context.Context, o Options) (*dynamodb.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, awsconfig.WithRegion(o.Region))
	}
	if o.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(o.Profile))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: pass --region or set AWS_REGION")
	}
	return dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if o.Endpoint != "" {
			do.BaseEndpoint = aws.String(o.Endpoint)
			do.DisableValidateResponseChecksum = true
		}
	}), nil
}
