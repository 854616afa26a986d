// Command infra is the CDK app of the limiter stack: one stack, named by the
// context value stackName (default zae-limiter), holding the construct of
// package construct with the Lambda zips of `make lambdas` (context value
// buildDir, default ../build). A CDK app outside this repository leaves
// BuildDir out and the construct builds the Lambdas at synth; this one
// deploys the zips `make lambdas` built. `cdk synth` and `go run .` write
// the same template to cdk.out (docs/design.md §13).
//
// Context values (cdk -c key=value) set the construct's main props:
// buildDir, gsi2ProjectAll, enableDeletionProtection, enableIamRoles,
// permissionBoundary, alarmSnsTopicArn, and limits (a manifest file
// applied as a Custom::ZaeLimiterLimits resource; off by default; see
// limits.example.yaml) with retainLimits.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

// DefaultStackName names the stack, and so the table, unless the context
// says otherwise.
const DefaultStackName = "zae-limiter"

func main() {
	defer jsii.Close()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app, _, err := newApp(nil)
	if err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// newApp builds the app and its one stack from the context: the CLI's
// (-c key=value, cdk.json) and extra. The cloud assembly goes where the CDK
// CLI asks (CDK_OUTDIR), else to cdk.out.
func newApp(extra map[string]any) (awscdk.App, awscdk.Stack, error) {
	outdir := os.Getenv("CDK_OUTDIR")
	if outdir == "" {
		outdir = "cdk.out"
	}
	appProps := &awscdk.AppProps{Outdir: jsii.String(outdir), AnalyticsReporting: jsii.Bool(false)}
	if extra != nil {
		appProps.Context = &extra
	}
	app := awscdk.NewApp(appProps)
	ctx := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	name := ctx("stackName", DefaultStackName)
	if err := construct.ValidateStackName(name); err != nil {
		return nil, nil, err
	}
	stack := awscdk.NewStack(app, jsii.String(name), &awscdk.StackProps{
		StackName:   jsii.String(name),
		Description: jsii.String("zae-limiter: DynamoDB rate-limit table, stream aggregator and limits provisioner"),
	})
	props := construct.Props{
		BuildDir:                 ctx("buildDir", "../build"),
		GSI2ProjectAll:           ctx("gsi2ProjectAll", "false") == "true",
		EnableDeletionProtection: ctx("enableDeletionProtection", "false") == "true",
		EnableIAMRoles:           ctx("enableIamRoles", "false") == "true",
		PermissionBoundary:       ctx("permissionBoundary", ""),
		AlarmSNSTopicArn:         ctx("alarmSnsTopicArn", ""),
	}
	if f := ctx("limits", ""); f != "" {
		props.Limits = &construct.Limits{ManifestFile: f, RetainOnDelete: ctx("retainLimits", "false") == "true"}
	}
	if _, err := construct.New(stack, "Limiter", props); err != nil {
		return nil, nil, err
	}
	return app, stack, nil
}
