package construct_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
)

type obj = map[string]any

func ref(id string) obj          { return obj{"Ref": id} }
func getAtt(id, attr string) obj { return obj{"Fn::GetAtt": []any{id, attr}} }
func stackNamed(suffix string) obj {
	return obj{"Fn::Join": []any{"", []any{ref("AWS::StackName"), suffix}}}
}
func joined(parts ...any) obj { return obj{"Fn::Join": []any{"", parts}} }
func hasProps(t *testing.T, tpl assertions.Template, typ string, props obj) {
	t.Helper()
	must(t, func() { tpl.HasResourceProperties(jsii.String(typ), props) })
}

// TestDefaultStack checks, with the CDK assertions package, every resource
// of the default stack and the properties docs/design.md §13 gives it.
func TestDefaultStack(t *testing.T) {
	tpl, _ := synth(t, construct.Props{})
	for typ, n := range map[string]int{
		"AWS::DynamoDB::Table": 1, "AWS::SQS::Queue": 1, "AWS::Logs::LogGroup": 2, "AWS::Lambda::Function": 2,
		"AWS::Lambda::EventSourceMapping": 1, "AWS::IAM::Role": 2, "AWS::IAM::ManagedPolicy": 6,
		"AWS::CloudWatch::Alarm": 7, "AWS::CloudWatch::Dashboard": 1, "Custom::ZaeLimiterVersion": 1,
		"Custom::ZaeLimiterLimits": 0, "AWS::IAM::Policy": 0, "AWS::S3::Bucket": 0,
	} {
		must(t, func() { tpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
	}
	must(t, func() {
		tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), obj{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
	hasProps(t, tpl, "AWS::DynamoDB::Table", obj{
		"TableName": ref("AWS::StackName"), "BillingMode": "PAY_PER_REQUEST", "DeletionProtectionEnabled": false,
		"StreamSpecification":              obj{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"TimeToLiveSpecification":          obj{"AttributeName": "ttl", "Enabled": true},
		"PointInTimeRecoverySpecification": obj{"PointInTimeRecoveryEnabled": true, "RecoveryPeriodInDays": assertions.Match_Absent()},
		"Tags":                             []any{obj{"Key": "Application", "Value": "zae-limiter"}},
	})
	hasProps(t, tpl, "AWS::SQS::Queue", obj{
		"QueueName": stackNamed("-aggregator-dlq"), "MessageRetentionPeriod": 1209600, "VisibilityTimeout": 300,
	})
	for _, suffix := range []string{"-aggregator", "-limits-provisioner"} {
		hasProps(t, tpl, "AWS::Logs::LogGroup", obj{
			"LogGroupName": joined("/aws/lambda/", ref("AWS::StackName"), suffix), "RetentionInDays": 30,
		})
	}
	hasProps(t, tpl, "AWS::Lambda::Function", obj{
		"FunctionName": stackNamed("-aggregator"), "Runtime": "provided.al2023", "Architectures": []any{"arm64"},
		"Handler": "bootstrap", "MemorySize": 256, "Timeout": 60, "TracingConfig": obj{"Mode": "PassThrough"},
		"Role": getAtt("AggregatorRole", "Arn"), "LoggingConfig": obj{"LogGroup": ref("AggregatorLogGroup")},
		"Environment": obj{"Variables": obj{"TABLE_NAME": ref("RateLimitsTable"), "SNAPSHOT_WINDOWS": "hourly,daily", "SNAPSHOT_TTL_DAYS": "90"}},
		"Code":        obj{"S3Bucket": assertions.Match_AnyValue(), "S3Key": assertions.Match_StringLikeRegexp(jsii.String(`\.zip$`))},
	})
	hasProps(t, tpl, "AWS::Lambda::Function", obj{
		"FunctionName": stackNamed("-limits-provisioner"), "Runtime": "provided.al2023", "Architectures": []any{"arm64"},
		"Handler": "bootstrap", "MemorySize": 256, "Timeout": 300, "TracingConfig": assertions.Match_Absent(),
		"Role": getAtt("ProvisionerRole", "Arn"), "LoggingConfig": obj{"LogGroup": ref("ProvisionerLogGroup")},
		"Environment": obj{"Variables": obj{"TABLE_NAME": ref("RateLimitsTable"), "ZAEL_STAMP_TTL_SECONDS": "60",
			"ZAEL_LAMBDA_VERSION": config.BuildVersion}},
	})
	filters := []any{}
	for _, f := range construct.MappingFilters() {
		filters = append(filters, obj{"Pattern": f})
	}
	hasProps(t, tpl, "AWS::Lambda::EventSourceMapping", obj{
		"EventSourceArn": getAtt("RateLimitsTable", "StreamArn"), "FunctionName": ref("AggregatorFunction"),
		"StartingPosition": "LATEST", "BatchSize": 100, "MaximumBatchingWindowInSeconds": 5, "MaximumRetryAttempts": 3,
		"MaximumRecordAgeInSeconds": 3600, "BisectBatchOnFunctionError": true, "ParallelizationFactor": 1,
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"DestinationConfig":     obj{"OnFailure": obj{"Destination": getAtt("AggregatorDLQ", "Arn")}},
		"FilterCriteria":        obj{"Filters": filters},
	})
	must(t, func() {
		tpl.HasResource(jsii.String("Custom::ZaeLimiterVersion"), obj{"Properties": obj{
			"ServiceToken": getAtt("ProvisionerFunction", "Arn"), "LambdaVersion": config.BuildVersion,
			"SchemaVersion": config.SchemaVersion, "TableName": ref("RateLimitsTable"),
			"AggregatorMapping": ref("AggregatorEventSourceMapping"),
		}})
	})
	for _, a := range []struct {
		name, ns, metric, stat, cmp string
		threshold, periods          float64
		dim                         obj
	}{
		{"-aggregator-dlq-alarm", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, obj{"Name": "QueueName", "Value": getAtt("AggregatorDLQ", "QueueName")}},
		{"-aggregator-error-rate", "AWS/Lambda", "Errors", "Sum", "GreaterThanThreshold", 1, 2, obj{"Name": "FunctionName", "Value": ref("AggregatorFunction")}},
		{"-aggregator-duration", "AWS/Lambda", "Duration", "Average", "GreaterThanThreshold", 48000, 2, obj{"Name": "FunctionName", "Value": ref("AggregatorFunction")}},
		{"-stream-iterator-age", "AWS/Lambda", "IteratorAge", "Maximum", "GreaterThanThreshold", 30000, 2, obj{"Name": "FunctionName", "Value": ref("AggregatorFunction")}},
		{"-read-throttle", "AWS/DynamoDB", "ReadThrottleEvents", "Sum", "GreaterThanThreshold", 1, 2, obj{"Name": "TableName", "Value": ref("RateLimitsTable")}},
		{"-write-throttle", "AWS/DynamoDB", "WriteThrottleEvents", "Sum", "GreaterThanThreshold", 1, 2, obj{"Name": "TableName", "Value": ref("RateLimitsTable")}},
		{"-provisioner-errors", "AWS/Lambda", "Errors", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, obj{"Name": "FunctionName", "Value": ref("ProvisionerFunction")}},
	} {
		hasProps(t, tpl, "AWS::CloudWatch::Alarm", obj{
			"AlarmName": stackNamed(a.name), "Namespace": a.ns, "MetricName": a.metric, "Statistic": a.stat,
			"ComparisonOperator": a.cmp, "Threshold": a.threshold, "EvaluationPeriods": a.periods, "Period": 300,
			"TreatMissingData": "notBreaching", "Dimensions": []any{a.dim}, "AlarmActions": assertions.Match_Absent(),
		})
	}
	hasProps(t, tpl, "AWS::CloudWatch::Dashboard", obj{
		"DashboardName": stackNamed("-limiter"), "DashboardBody": obj{"Fn::Sub": construct.DashboardBody()},
	})
	table := []any{getAtt("RateLimitsTable", "Arn")}
	indexes := []any{joined(getAtt("RateLimitsTable", "Arn"), "/index/*")}
	hasProps(t, tpl, "AWS::IAM::ManagedPolicy", obj{"ManagedPolicyName": stackNamed("-acq"), "PolicyDocument": obj{"Statement": []any{
		obj{"Sid": "AcquireAccess", "Effect": "Allow", "Action": construct.AcquireActions(), "Resource": table, "Condition": assertions.Match_Absent()},
	}}})
	for _, p := range []struct {
		suffix, sid string
		actions     []string
	}{
		{"-full", "FullAccess", construct.FullAccessActions()},
		{"-read", "ReadAccess", construct.ReadOnlyActions()},
	} {
		hasProps(t, tpl, "AWS::IAM::ManagedPolicy", obj{
			"ManagedPolicyName": stackNamed(p.suffix),
			"PolicyDocument": obj{"Statement": []any{
				obj{"Sid": p.sid, "Effect": "Allow", "Action": p.actions, "Resource": table, "Condition": assertions.Match_Absent()},
				obj{"Sid": p.sid + "Indexes", "Effect": "Allow", "Action": construct.IndexActions(), "Resource": indexes, "Condition": assertions.Match_Absent()},
			}},
		})
	}
	leading := func(keys ...string) obj {
		return obj{"ForAllValues:StringLike": obj{"dynamodb:LeadingKeys": keys}}
	}
	ns := "${aws:PrincipalTag/" + construct.NamespaceTag + "}/*"
	nsIndex := "${aws:PrincipalTag/" + construct.NamespaceTag + "}"
	shared := obj{"Sid": "SharedReadAccess", "Action": construct.SharedReadActions(), "Resource": table, "Condition": leading(construct.SharedPartition)}
	hasProps(t, tpl, "AWS::IAM::ManagedPolicy", obj{"ManagedPolicyName": stackNamed("-ns-acq"), "PolicyDocument": obj{"Statement": []any{
		obj{"Sid": "NamespaceAcquireAccess", "Action": construct.AcquireActions(), "Resource": table, "Condition": leading(ns)},
		shared,
	}}})
	hasProps(t, tpl, "AWS::IAM::ManagedPolicy", obj{"ManagedPolicyName": stackNamed("-ns-full"), "PolicyDocument": obj{"Statement": []any{
		obj{"Sid": "NamespaceFullAccess", "Action": construct.NamespaceFullAccessActions(), "Resource": table, "Condition": leading(ns)},
		obj{"Sid": "NamespaceFullAccessIndexes", "Action": []any{"dynamodb:Query"}, "Resource": indexes, "Condition": leading(ns, nsIndex)},
		shared,
	}}})
	hasProps(t, tpl, "AWS::IAM::ManagedPolicy", obj{"ManagedPolicyName": stackNamed("-ns-read"), "PolicyDocument": obj{"Statement": []any{
		obj{"Sid": "NamespaceReadAccess", "Action": construct.NamespaceReadOnlyActions(), "Resource": table, "Condition": leading(ns)},
		obj{"Sid": "NamespaceReadAccessIndexes", "Action": []any{"dynamodb:Query"}, "Resource": indexes, "Condition": leading(ns, nsIndex)},
		shared,
	}}})
	lambdaTrust := obj{"Statement": []any{obj{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": obj{"Service": "lambda.amazonaws.com"}}}}
	hasProps(t, tpl, "AWS::IAM::Role", obj{
		"RoleName": stackNamed("-aggr"), "AssumeRolePolicyDocument": lambdaTrust, "ManagedPolicyArns": assertions.Match_Absent(),
		"PermissionsBoundary": assertions.Match_Absent(),
		"Policies": []any{obj{"PolicyName": "Aggregator", "PolicyDocument": obj{"Statement": []any{
			obj{"Sid": "Logs", "Action": construct.LogActions(), "Resource": []any{getAtt("AggregatorLogGroup", "Arn")}},
			obj{"Sid": "TableWrites", "Action": construct.AggregatorTableActions(), "Resource": []any{getAtt("RateLimitsTable", "Arn")}},
			obj{"Sid": "StreamRead", "Action": construct.StreamReadActions(), "Resource": []any{getAtt("RateLimitsTable", "StreamArn")}},
			obj{"Sid": "StreamList", "Action": []any{"dynamodb:ListStreams"}, "Resource": []any{"*"}},
			obj{"Sid": "DeadLetters", "Action": []any{"sqs:SendMessage"}, "Resource": []any{getAtt("AggregatorDLQ", "Arn")}},
		}}}},
	})
	hasProps(t, tpl, "AWS::IAM::Role", obj{
		"RoleName": stackNamed("-prov"), "AssumeRolePolicyDocument": lambdaTrust, "ManagedPolicyArns": assertions.Match_Absent(),
		"Policies": []any{obj{"PolicyName": "Provisioner", "PolicyDocument": obj{"Statement": []any{
			obj{"Sid": "Logs", "Action": construct.LogActions(), "Resource": []any{getAtt("ProvisionerLogGroup", "Arn")}},
			obj{"Sid": "Table", "Action": construct.ProvisionerActions(), "Resource": table},
			obj{"Sid": "TableIndexes", "Action": []any{"dynamodb:Query"}, "Resource": indexes},
		}}}},
	})
}

// TestSwitchedStack checks what the switches add: tracing, the SNS action,
// the access roles, sizes and retention, a removal policy, the limits
// resource.
func TestSwitchedStack(t *testing.T) {
	topic := "arn:aws:sns:eu-west-1:123456789012:alerts"
	tpl, _ := synth(t, construct.Props{
		EnableTracing: true, AlarmSNSTopicArn: topic, EnableIAMRoles: true, LambdaMemorySize: 1024,
		LambdaTimeoutSeconds: 100, LogRetentionDays: 365, RemovalPolicy: awscdk.RemovalPolicy_DESTROY, RoleNameFormat: "PB-{}",
	})
	hasProps(t, tpl, "AWS::Lambda::Function", obj{"FunctionName": stackNamed("-aggregator"), "TracingConfig": obj{"Mode": "Active"},
		"MemorySize": 1024, "Timeout": 100})
	hasProps(t, tpl, "AWS::IAM::Role", obj{"RoleName": joined("PB-", ref("AWS::StackName"), "-aggr"), "Policies": []any{obj{"PolicyDocument": obj{
		"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&obj{
			"Sid": "Tracing", "Action": []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "Resource": []any{"*"}})}),
	}}}})
	hasProps(t, tpl, "AWS::CloudWatch::Alarm", obj{"AlarmName": stackNamed("-aggregator-duration"), "Threshold": 80000, "AlarmActions": []any{topic}})
	hasProps(t, tpl, "AWS::Logs::LogGroup", obj{"RetentionInDays": 365})
	must(t, func() {
		tpl.ResourcePropertiesCountIs(jsii.String("AWS::CloudWatch::Alarm"), obj{"AlarmActions": []any{topic}}, jsii.Number(7))
	})
	must(t, func() {
		tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), obj{"DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete"})
	})
	account := obj{"Statement": []any{obj{"Principal": obj{"AWS": joined("arn:", ref("AWS::Partition"), ":iam::", ref("AWS::AccountId"), ":root")}}}}
	for _, r := range []struct{ suffix, tag, policy string }{
		{"-app", "app", "AcquireOnlyPolicy"}, {"-admin", "admin", "FullAccessPolicy"}, {"-read", "readonly", "ReadOnlyPolicy"},
	} {
		hasProps(t, tpl, "AWS::IAM::Role", obj{
			"RoleName": joined("PB-", ref("AWS::StackName"), r.suffix), "AssumeRolePolicyDocument": account,
			"ManagedPolicyArns": []any{ref(r.policy)},
			"Tags":              []any{obj{"Key": "Application", "Value": "zae-limiter"}, obj{"Key": "Role", "Value": r.tag}},
		})
	}
}

// outputSource names, for each output, the resource it exists with ("" for
// always); the two optional settings are separate.
func outputSource() map[string]string {
	return map[string]string{
		"TableName": "", "TableArn": "", "StreamArn": "",
		"AggregatorFunctionArn": "AggregatorFunction", "AggregatorFunctionName": "AggregatorFunction",
		"AggregatorDLQUrl": "AggregatorDLQ", "AggregatorDLQArn": "AggregatorDLQ",
		"AggregatorDLQAlarmName": "AggregatorDLQAlarm", "LambdaErrorRateAlarmName": "LambdaErrorRateAlarm",
		"LambdaDurationAlarmName": "LambdaDurationAlarm", "StreamIteratorAgeAlarmName": "StreamIteratorAgeAlarm",
		"DynamoDBReadThrottleAlarmName": "DynamoDBReadThrottleAlarm", "DynamoDBWriteThrottleAlarmName": "DynamoDBWriteThrottleAlarm",
		"ProvisionerErrorAlarmName": "ProvisionerErrorAlarm",
		"AcquireOnlyPolicyArn":      "AcquireOnlyPolicy", "FullAccessPolicyArn": "FullAccessPolicy", "ReadOnlyPolicyArn": "ReadOnlyPolicy",
		"NamespaceAcquirePolicyArn": "NamespaceAcquirePolicy", "NamespaceFullAccessPolicyArn": "NamespaceFullAccessPolicy",
		"NamespaceReadOnlyPolicyArn": "NamespaceReadOnlyPolicy",
		"AppRoleArn":                 "AppRole", "AppRoleName": "AppRole", "AdminRoleArn": "AdminRole", "AdminRoleName": "AdminRole",
		"ReadOnlyRoleArn": "ReadOnlyRole", "ReadOnlyRoleName": "ReadOnlyRole",
		"ProvisionerArn": "ProvisionerFunction", "ProvisionerName": "ProvisionerFunction", "DashboardName": "Dashboard",
	}
}

// TestOutputs: in every scenario the outputs are exactly those whose
// resource exists, each exported as {stack}-{name}; tenant stacks import
// {stack}-ProvisionerArn.
func TestOutputs(t *testing.T) {
	exports := map[string]string{
		"AggregatorFunctionArn": "AggregatorArn", "AggregatorFunctionName": "AggregatorName",
		"AggregatorDLQUrl": "DLQUrl", "AggregatorDLQArn": "DLQArn", "AggregatorDLQAlarmName": "DLQAlarmName",
		"DynamoDBReadThrottleAlarmName": "ReadThrottleAlarmName", "DynamoDBWriteThrottleAlarmName": "WriteThrottleAlarmName",
	}
	for _, sc := range scenarios() {
		_, tpl := synth(t, sc.props)
		s := evaluate(t, tpl, nil)
		present := map[string]bool{"": true}
		for _, id := range sc.want {
			present[id] = true
		}
		var want []string
		for out, src := range outputSource() {
			if present[src] {
				want = append(want, out)
			}
		}
		if sc.props.PermissionBoundary != "" {
			want = append(want, "PermissionBoundaryArn")
		}
		if sc.props.RoleNameFormat != "" {
			want = append(want, "RoleNameFormat")
		}
		var got []string
		for id, o := range s.Outputs {
			got = append(got, id)
			export := exports[id]
			if export == "" {
				export = id
			}
			if o.Export != cfneval.StackName+"-"+export {
				t.Errorf("%s: output %s exported as %q", sc.name, id, o.Export)
			}
			if o.Value == "" {
				t.Errorf("%s: output %s has no value", sc.name, id)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: outputs\n got %v\nwant %v", sc.name, got, want)
		}
		if p, ok := s.Outputs["ProvisionerArn"]; ok && p.Value != "{ProvisionerFunction.Arn}" {
			t.Errorf("ProvisionerArn is %q", p.Value)
		}
	}
}

// TestPropsAreChecked: values out of range, or that the functions would
// refuse, fail New with an error naming them.
func TestPropsAreChecked(t *testing.T) {
	cases := map[string]construct.Props{
		"SnapshotRetentionDays":  {SnapshotRetentionDays: 4000},
		"LambdaMemorySize":       {LambdaMemorySize: 64},
		"LambdaTimeoutSeconds":   {LambdaTimeoutSeconds: 901},
		"StampTTLSeconds":        {StampTTLSeconds: 3601}, // above what the provisioner starts with
		"PITRRecoveryPeriodDays": {PITRRecoveryPeriodDays: 36},
		"LogRetentionDays":       {LogRetentionDays: 31},
		"SNAPSHOT_WINDOWS":       {SnapshotWindows: "hourly,weekly"},
		"LambdaVersion":          {LambdaVersion: "latest"},
		"RoleNameFormat":         {RoleNameFormat: "no-placeholder"},
		"need the provisioner":   {DisableProvisioner: true, Limits: &construct.Limits{ManifestFile: "x"}},
		"run `make lambdas`":     {BuildDir: t.TempDir()},
	}
	for want, p := range cases {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		stack := awscdk.NewStack(app, jsii.String("zl-test"), nil)
		if p.BuildDir == "" {
			p.BuildDir = fakeBuild(t)
		}
		_, err := construct.New(stack, "Limiter", p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one naming %q", p, err, want)
		}
	}
	for _, name := range []string{"1stack", "a_b", strings.Repeat("a", 56)} {
		if err := construct.ValidateStackName(name); err == nil {
			t.Errorf("stack name %q accepted", name)
		}
	}
	// CDK refuses the first two itself; the length is the construct's.
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("s"), &awscdk.StackProps{StackName: jsii.String(strings.Repeat("a", 56))})
	if _, err := construct.New(stack, "Limiter", construct.Props{BuildDir: fakeBuild(t)}); err == nil {
		t.Error("a 56-character stack name accepted")
	}
}
