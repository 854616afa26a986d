package construct

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// The event source mapping of the aggregator (docs/design.md §13).
const (
	MappingBatchSize          = 100
	MappingBatchingWindow     = 5    // seconds
	MappingRetries            = 3    // attempts after the first
	MappingMaxRecordAge       = 3600 // seconds
	MappingParallelization    = 1
	DLQRetentionSeconds       = 1209600 // 14 days, SQS's longest
	DLQVisibilityTimeoutSecs  = 300
	VersionStampResourceType  = "Custom::ZaeLimiterVersion"
	LimitsResourceType        = "Custom::ZaeLimiterLimits"
	functionRuntimeHandler    = "bootstrap"
	aggregatorFunctionSuffix  = "-aggregator"
	provisionerFunctionSuffix = "-limits-provisioner"
)

// MappingFilters are the mapping's filter patterns: bucket INSERTs and
// MODIFYs (the first request's consumption arrives on the INSERT), and the
// TTL removal of audit events, matched on the sort key (docs/compatibility.md
// C6). Each is the compact JSON CloudFormation receives.
func MappingFilters() []string {
	patterns := []any{
		map[string]any{
			"eventName": []string{"INSERT", "MODIFY"},
			"dynamodb":  map[string]any{"NewImage": map[string]any{"SK": map[string]any{"S": []string{"#STATE"}}}},
		},
		map[string]any{
			"eventName": []string{"REMOVE"},
			"dynamodb":  map[string]any{"OldImage": map[string]any{"SK": map[string]any{"S": []any{map[string]string{"prefix": "#AUDIT#"}}}}},
		},
	}
	out := make([]string, len(patterns))
	for i, p := range patterns {
		b, err := json.Marshal(p)
		if err != nil {
			panic(fmt.Sprintf("construct: filter %d: %v", i, err)) // a fixed literal always marshals
		}
		out[i] = string(b)
	}
	return out
}

// logGroup adds /aws/lambda/{stack}{suffix}, deleted with the stack.
func (b *builder) logGroup(id, suffix string) awslogs.CfnLogGroup {
	lg := awslogs.NewCfnLogGroup(b.scope(), jsii.String(id), &awslogs.CfnLogGroupProps{
		LogGroupName:    jsii.String("/aws/lambda/" + *named(suffix)),
		RetentionInDays: jsii.Number(b.s.LogRetentionDays),
	})
	logicalID(lg, id)
	return lg
}

// function adds a provided.al2023 arm64 Lambda whose role is roleArn and
// whose logs go to lg.
func (b *builder) function(id, suffix string, code awslambda.Code, roleArn *string, lg awslogs.CfnLogGroup,
	memory, timeout int, env map[string]string, tracing awslambda.Tracing) (awslambda.Function, awslambda.CfnFunction) {
	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	role := awsiam.Role_FromRoleArn(b.scope(), jsii.String(id+"Role"), roleArn, &awsiam.FromRoleArnOptions{Mutable: jsii.Bool(false)})
	fn := awslambda.NewFunction(b.scope(), jsii.String(id), &awslambda.FunctionProps{
		FunctionName: named(suffix),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String(functionRuntimeHandler),
		Code:         code,
		MemorySize:   jsii.Number(memory),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(timeout)),
		Role:         role,
		Environment:  &vars,
		Tracing:      tracing,
		LogGroup:     awslogs.LogGroup_FromLogGroupName(b.scope(), jsii.String(id+"Logs"), lg.Ref()),
	})
	cfn := fn.Node().DefaultChild().(awslambda.CfnFunction)
	logicalID(cfn, id)
	return fn, cfn
}

// buildAggregator adds the DLQ and log group (aggregator on), the role
// (unless external) and, when deployable, the function and its mapping.
func (b *builder) buildAggregator() {
	s := b.s
	if !s.aggregator {
		return
	}
	q := awssqs.NewQueue(b.scope(), jsii.String("AggregatorDLQ"), &awssqs.QueueProps{
		QueueName:         named("-aggregator-dlq"),
		RetentionPeriod:   awscdk.Duration_Seconds(jsii.Number(DLQRetentionSeconds)),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(DLQVisibilityTimeoutSecs)),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	logicalID(q.Node().DefaultChild().(awscdk.CfnElement), "AggregatorDLQ")
	b.l.DLQ = q
	lg := b.logGroup("AggregatorLogGroup", aggregatorFunctionSuffix)

	roleArn := jsii.String(s.AggregatorRoleArn)
	if s.aggregatorRole {
		statements := []any{
			logsTo(lg),
			allow("TableWrites", AggregatorTableActions(), b.tableArn()),
			allow("StreamRead", StreamReadActions(), b.streamArn()),
			allow("StreamList", dynamo("ListStreams"), jsii.String("*")),
			allow("DeadLetters", []string{"sqs:SendMessage"}, q.QueueArn()),
		}
		if s.tracing {
			statements = append(statements, allow("Tracing", []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, jsii.String("*")))
		}
		r := b.role("AggregatorRole", s.AggregatorRoleName, "-aggr", lambdaTrust(), nil,
			[]any{inlinePolicy("Aggregator", doc{"Version": "2012-10-17", "Statement": statements})})
		roleArn = r.AttrArn()
	}
	if !s.aggregatorLambda {
		return
	}
	tracing := awslambda.Tracing_PASS_THROUGH
	if s.tracing {
		tracing = awslambda.Tracing_ACTIVE
	}
	b.l.Aggregator, b.aggregator = b.function("AggregatorFunction", aggregatorFunctionSuffix, s.AggregatorCode, roleArn, lg,
		s.LambdaMemorySize, s.LambdaTimeoutSeconds, aggregatorEnv(s, *b.table.Ref()), tracing)

	var filters []any
	for _, f := range MappingFilters() {
		filters = append(filters, &awslambda.CfnEventSourceMapping_FilterProperty{Pattern: jsii.String(f)})
	}
	b.mapping = awslambda.NewCfnEventSourceMapping(b.scope(), jsii.String("AggregatorEventSourceMapping"), &awslambda.CfnEventSourceMappingProps{
		EventSourceArn:                 b.streamArn(),
		FunctionName:                   b.aggregator.Ref(),
		StartingPosition:               jsii.String("LATEST"),
		BatchSize:                      jsii.Number(MappingBatchSize),
		MaximumBatchingWindowInSeconds: jsii.Number(MappingBatchingWindow),
		MaximumRetryAttempts:           jsii.Number(MappingRetries),
		MaximumRecordAgeInSeconds:      jsii.Number(MappingMaxRecordAge),
		BisectBatchOnFunctionError:     jsii.Bool(true),
		ParallelizationFactor:          jsii.Number(MappingParallelization),
		FunctionResponseTypes:          jsii.Strings("ReportBatchItemFailures"),
		FilterCriteria:                 &awslambda.CfnEventSourceMapping_FilterCriteriaProperty{Filters: filters},
		DestinationConfig: &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: q.QueueArn()},
		},
	})
	logicalID(b.mapping, "AggregatorEventSourceMapping")
}

// buildProvisioner adds the provisioner's log group, role and function and
// the version stamp. The stamp runs after both functions and the mapping:
// its ServiceToken names the provisioner and its AggregatorMapping the
// mapping, which names the aggregator (docs/design.md §13).
func (b *builder) buildProvisioner() {
	s := b.s
	if !s.provisioner {
		return
	}
	lg := b.logGroup("ProvisionerLogGroup", provisionerFunctionSuffix)
	r := b.role("ProvisionerRole", s.ProvisionerRoleName, "-prov", lambdaTrust(), nil,
		[]any{inlinePolicy("Provisioner", policy(append([]doc{logsTo(lg)}, b.tableAccess("Table", ProvisionerActions())...)...))})
	b.l.Provisioner, b.provisioner = b.function("ProvisionerFunction", provisionerFunctionSuffix, s.ProvisionerCode, r.AttrArn(), lg,
		ProvisionerMemorySize, ProvisionerTimeoutSeconds, provisionerEnv(s, *b.table.Ref()), "")

	props := map[string]any{
		"LambdaVersion": s.LambdaVersion,
		"SchemaVersion": s.SchemaVersion,
		"TableName":     b.table.Ref(),
	}
	if b.mapping != nil {
		// The mapping's id ties the stamp to the aggregator in template.yaml,
		// where a DependsOn cannot name a resource under another condition.
		props["AggregatorMapping"] = b.mapping.Ref()
	}
	b.stamp = awscdk.NewCustomResource(b.scope(), jsii.String("VersionStamp"), &awscdk.CustomResourceProps{
		ServiceToken: b.provisioner.AttrArn(),
		ResourceType: jsii.String(VersionStampResourceType),
		Properties:   &props,
	})
	logicalID(b.stamp.Node().DefaultChild().(awscdk.CfnElement), "VersionStamp")
}
