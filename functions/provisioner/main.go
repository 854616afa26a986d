// Command provisioner is the CloudFormation custom-resource Lambda that
// applies a declarative limits manifest (docs/design.md §9).
//
// The manifest handler arrives with the provisioner issue. Until then every
// Create and Update is answered FAILED with a clear reason and every Delete
// SUCCESS (nothing was provisioned), so a stack never waits on a response.
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
)

var errNotBuilt = errors.New("provisioner: manifest handling is not built yet")

func main() {
	lambda.Start(cfn.LambdaWrap(func(_ context.Context, ev cfn.Event) (string, map[string]interface{}, error) {
		if ev.RequestType == cfn.RequestDelete {
			return ev.PhysicalResourceID, nil, nil
		}
		return "", nil, errNotBuilt
	}))
}
