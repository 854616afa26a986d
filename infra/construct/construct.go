// Package construct is the CDK construct of the limiter stack: the table,
// the aggregator and provisioner Lambdas with the stream mapping and the
// version stamp, the IAM policies and roles, alarms, a dashboard and the
// stack's outputs. template.yaml at the repository root is the same stack
// for SAM; docs/design.md §13 describes both.
//
// The table is built from core/schema's definition, the one the tests,
// `make run` and template.yaml are checked against. Every resource keeps the
// logical id template.yaml gives it, so one stack can move between the two.
// A stack holds at most one Limiter: the table is named after the stack.
package construct

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Limiter is the deployed stack's parts. A field of a part the props leave
// out is nil.
type Limiter struct {
	constructs.Construct
	// Table is the rate-limit table; its name is the stack's.
	Table awsdynamodb.Table
	// DLQ receives the stream batches the aggregator gave up on.
	DLQ awssqs.Queue
	// Aggregator and Provisioner are the two Lambdas.
	Aggregator, Provisioner awslambda.Function
	// AcquireOnlyPolicy, FullAccessPolicy and ReadOnlyPolicy are the
	// table-wide managed policies; the Namespace* ones are scoped to the
	// caller's zael_namespace_id principal tag.
	AcquireOnlyPolicy, FullAccessPolicy, ReadOnlyPolicy                        *string
	NamespaceAcquirePolicy, NamespaceFullAccessPolicy, NamespaceReadOnlyPolicy *string
}

// New adds the limiter stack's resources to scope under id. It fails on
// props out of range, on a Lambda zip that is missing, or, when it builds
// the Lambdas itself (no code, no BuildDir), on a go command that is
// missing or too old (*GoToolchainError), a source it cannot find or a
// build that fails (docs/design.md §13).
func New(scope constructs.Construct, id string, props Props) (*Limiter, error) {
	s, err := resolve(props)
	if err != nil {
		return nil, err
	}
	if name := awscdk.Stack_Of(scope).StackName(); !*awscdk.Token_IsUnresolved(name) {
		if err := ValidateStackName(*name); err != nil {
			return nil, err
		}
	}
	b := &builder{s: s, l: &Limiter{Construct: constructs.NewConstruct(scope, jsii.String(id))}}
	if err := b.build(); err != nil {
		return nil, err
	}
	return b.l, nil
}

// builder carries what one New call builds, in dependency order.
type builder struct {
	s settings
	l *Limiter

	table       awsdynamodb.CfnTable
	aggregator  awslambda.CfnFunction
	provisioner awslambda.CfnFunction
	mapping     awslambda.CfnEventSourceMapping
	stamp       awscdk.CustomResource
	dashboard   *string // the dashboard's name, when there is one
	alarms      []createdAlarm
	roles       []namedRole
}

// namedRole is a role the stack created and its logical id.
type namedRole struct {
	id   string
	role awsiam.CfnRole
}

func (b *builder) build() (err error) {
	// The CDK bundles an asset when it is created: a Lambda the construct
	// builds is built as its function is added, and a build that fails
	// comes back through the jsii runtime as a panic. That failure is
	// New's error; any other panic goes on.
	defer func() {
		if f := b.s.bundleFailure; f != nil && f.err != nil {
			if r := recover(); r != nil {
				err = f.err
			}
		}
	}()
	b.buildTable()
	b.buildPolicies()
	b.buildAggregator()
	b.buildProvisioner()
	if err := b.buildLimits(); err != nil {
		return err
	}
	b.buildAlarms()
	b.buildDashboard()
	b.buildOutputs()
	return nil
}

// scope is where every resource goes.
func (b *builder) scope() constructs.Construct { return b.l.Construct }

// named returns "{stack}{suffix}" as a CloudFormation string.
func named(suffix string) *string { return jsii.String(*awscdk.Aws_STACK_NAME() + suffix) }

// logicalID pins the CloudFormation logical id of an L1 resource to the one
// template.yaml uses.
func logicalID(r awscdk.CfnElement, id string) { r.OverrideLogicalId(jsii.String(id)) }
