// Command provisioner is the CloudFormation custom-resource Lambda of the
// limiter stack (docs/design.md §12): it applies declarative limits manifests
// (Custom::ZaeLimiterLimits, or any custom resource type but the version
// stamp), stamps the version record (Custom::ZaeLimiterVersion), and answers
// direct {action: plan|apply} invocations. It wires configuration, the
// DynamoDB client and the handler.
//
// Under Lambda (AWS_LAMBDA_RUNTIME_API set) it serves invocations. A build
// without the lambda.norpc tag also runs outside Lambda, against DynamoDB
// Local or any endpoint in AWS_ENDPOINT_URL_DYNAMODB (local.go):
//
//	provisioner -event events/cfn-limits-create.json       # one CloudFormation request
//	provisioner -manifest events/limits.yaml -plan         # prints the changes
//	provisioner -manifest events/limits.yaml -apply        # applies them
package main

import (
	"context"
	"log/slog"
	"os"

	// Schedules read the wall clock of IANA zones (docs/design.md §14):
	// the zone database is built in, so the function needs none on its host.
	_ "time/tzdata"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") == "" {
		os.Exit(runLocal(log))
	}
	h, err := wire(context.Background(), log, false)
	if err != nil {
		log.Error("provisioner init failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(h.Invoke)
}
