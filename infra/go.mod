module github.com/zae-limiter/zae-limiter-go/infra

go 1.26.8

require (
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/zae-limiter/zae-limiter-go v0.0.0
)

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
)

replace github.com/zae-limiter/zae-limiter-go => ../
