package ddblocal

import (
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
)

// Config returns an AWS config for the emulator: fixed region and static
// credentials (see Region), nothing read from the environment or ~/.aws.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		HTTPClient: &http.Client{Transport: &http.Transport{
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
}

// DynamoDB returns a DynamoDB client for the emulator at endpoint.
// DynamoDB Local sends no x-amz-crc32 header on 4xx answers, so response
// checksum validation is off (docs/design.md §1).
func DynamoDB(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.DisableValidateResponseChecksum = true
	}}, optFns...)
	return dynamodb.NewFromConfig(Config(), opts...)
}

// Streams returns a DynamoDB Streams client for the emulator at endpoint
// (DynamoDB Local serves both APIs on one port), with streampoll.FixEmptyMaps
// applied.
func Streams(endpoint string, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	opts := append([]func(*dynamodbstreams.Options){func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}, streampoll.FixEmptyMaps}, optFns...)
	return dynamodbstreams.NewFromConfig(Config(), opts...)
}
