package construct

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
)

// alarmSpec is one CloudWatch alarm and the output that exports its name.
type alarmSpec struct {
	id, output, export, suffix, description string
	namespace, metric, statistic            string
	comparison                              string
	threshold                               float64
	periods                                 int
	dimension                               string
	value                                   *string
}

// createdAlarm is an alarm added to the stack and its name.
type createdAlarm struct {
	alarmSpec
	ref *string
}

const (
	alarmPeriod = 300
	greater     = "GreaterThanThreshold"
	greaterOrEq = "GreaterThanOrEqualToThreshold"
)

// buildAlarms adds the alarms of docs/design.md §13: the table's throttles
// (alarms on), the aggregator's DLQ, errors, duration and stream lag (with
// the aggregator deployed) and the provisioner's errors (with the
// provisioner deployed).
func (b *builder) buildAlarms() {
	s := b.s
	if !s.alarms {
		return
	}
	var specs []alarmSpec
	if s.aggregatorAlarms {
		fn := b.aggregator.Ref()
		specs = append(specs,
			alarmSpec{"AggregatorDLQAlarm", "AggregatorDLQAlarmName", "-DLQAlarmName", "-aggregator-dlq-alarm",
				"Stream batches the aggregator gave up on are in its dead-letter queue",
				"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Sum", greaterOrEq, 1, 1, "QueueName", b.l.DLQ.QueueName()},
			alarmSpec{"LambdaErrorRateAlarm", "LambdaErrorRateAlarmName", "-LambdaErrorRateAlarmName", "-aggregator-error-rate",
				"The aggregator fails invocations",
				"AWS/Lambda", "Errors", "Sum", greater, 1, 2, "FunctionName", fn},
			alarmSpec{"LambdaDurationAlarm", "LambdaDurationAlarmName", "-LambdaDurationAlarmName", "-aggregator-duration",
				fmt.Sprintf("The aggregator's average duration is above %d ms", s.LambdaDurationThresholdMs),
				"AWS/Lambda", "Duration", "Average", greater, float64(s.LambdaDurationThresholdMs), 2, "FunctionName", fn},
			alarmSpec{"StreamIteratorAgeAlarm", "StreamIteratorAgeAlarmName", "-StreamIteratorAgeAlarmName", "-stream-iterator-age",
				"The aggregator is more than 30 s behind the table's stream",
				"AWS/Lambda", "IteratorAge", "Maximum", greater, 30000, 2, "FunctionName", fn},
		)
	}
	table := b.table.Ref()
	specs = append(specs,
		alarmSpec{"DynamoDBReadThrottleAlarm", "DynamoDBReadThrottleAlarmName", "-ReadThrottleAlarmName", "-read-throttle",
			"Reads of the rate-limit table are throttled",
			"AWS/DynamoDB", "ReadThrottleEvents", "Sum", greater, 1, 2, "TableName", table},
		alarmSpec{"DynamoDBWriteThrottleAlarm", "DynamoDBWriteThrottleAlarmName", "-WriteThrottleAlarmName", "-write-throttle",
			"Writes to the rate-limit table are throttled",
			"AWS/DynamoDB", "WriteThrottleEvents", "Sum", greater, 1, 2, "TableName", table},
	)
	if s.provisioner {
		specs = append(specs, alarmSpec{"ProvisionerErrorAlarm", "ProvisionerErrorAlarmName", "-ProvisionerErrorAlarmName", "-provisioner-errors",
			"The provisioner failed an invocation (a stack update or a limits apply)",
			"AWS/Lambda", "Errors", "Sum", greaterOrEq, 1, 1, "FunctionName", b.provisioner.Ref()})
	}
	for _, a := range specs {
		props := &awscloudwatch.CfnAlarmProps{
			AlarmName:          named(a.suffix),
			AlarmDescription:   jsii.String(a.description),
			Namespace:          jsii.String(a.namespace),
			MetricName:         jsii.String(a.metric),
			Statistic:          jsii.String(a.statistic),
			Period:             jsii.Number(alarmPeriod),
			EvaluationPeriods:  jsii.Number(a.periods),
			Threshold:          jsii.Number(a.threshold),
			ComparisonOperator: jsii.String(a.comparison),
			TreatMissingData:   jsii.String("notBreaching"),
			Dimensions: []any{&awscloudwatch.CfnAlarm_DimensionProperty{
				Name: jsii.String(a.dimension), Value: a.value,
			}},
		}
		if s.AlarmSNSTopicArn != "" {
			props.AlarmActions = &[]any{jsii.String(s.AlarmSNSTopicArn)}
		}
		al := awscloudwatch.NewCfnAlarm(b.scope(), jsii.String(a.id), props)
		logicalID(al, a.id)
		b.alarms = append(b.alarms, createdAlarm{a, al.Ref()})
	}
}

// DashboardMetric is one line of the dashboard: a metric and the statistic
// shown.
type DashboardMetric struct {
	Namespace, Name, Statistic string
}

// DashboardWidget is one graph of the dashboard.
type DashboardWidget struct {
	Title   string
	Metrics []DashboardMetric
}

// DashboardWidgets are the dashboard's graphs: every metric the aggregator
// emits (core/aggregator's EMF names), its Lambda's errors, lag and DLQ,
// and the table's throttles and consumed capacity.
func DashboardWidgets() []DashboardWidget {
	emf := func(stat string, names ...string) []DashboardMetric {
		var ms []DashboardMetric
		for _, n := range names {
			ms = append(ms, DashboardMetric{aggregator.MetricsNamespace, n, stat})
		}
		return ms
	}
	return []DashboardWidget{
		{"Aggregator: records", emf("Sum", aggregator.MetricRecords, aggregator.MetricSkippedRecords, aggregator.MetricPoisonRecords)},
		{"Aggregator: writes", emf("Sum", aggregator.MetricSnapshotsWritten, aggregator.MetricRefills, aggregator.MetricDoublings, aggregator.MetricClones)},
		{"Aggregator: failures", append(emf("Sum", aggregator.MetricFailures),
			DashboardMetric{"AWS/Lambda", "Errors", "Sum"},
			DashboardMetric{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum"})},
		{"Aggregator: lag (ms)", append(emf("Maximum", aggregator.MetricStreamLagMs),
			DashboardMetric{"AWS/Lambda", "IteratorAge", "Maximum"})},
		{"Table: throttled requests", []DashboardMetric{
			{"AWS/DynamoDB", "ReadThrottleEvents", "Sum"}, {"AWS/DynamoDB", "WriteThrottleEvents", "Sum"}}},
		{"Table: consumed capacity", []DashboardMetric{
			{"AWS/DynamoDB", "ConsumedReadCapacityUnits", "Sum"}, {"AWS/DynamoDB", "ConsumedWriteCapacityUnits", "Sum"}}},
	}
}

// DashboardBody renders DashboardWidgets as the body of a CloudFormation
// Fn::Sub: the region, the table, the function and the queue are
// ${AWS::Region}, ${RateLimitsTable}, ${AggregatorFunction} and
// ${AggregatorDLQ.QueueName}.
func DashboardBody() string {
	dims := map[string][]string{
		aggregator.MetricsNamespace: {aggregator.DimensionTable, "${RateLimitsTable}"},
		"AWS/DynamoDB":              {"TableName", "${RateLimitsTable}"},
		"AWS/Lambda":                {"FunctionName", "${AggregatorFunction}"},
		"AWS/SQS":                   {"QueueName", "${AggregatorDLQ.QueueName}"},
	}
	var widgets []any
	for i, w := range DashboardWidgets() {
		var metrics []any
		for _, m := range w.Metrics {
			d := dims[m.Namespace]
			metrics = append(metrics, []any{m.Namespace, m.Name, d[0], d[1], map[string]string{"stat": m.Statistic}})
		}
		widgets = append(widgets, map[string]any{
			"type": "metric", "x": 12 * (i % 2), "y": 6 * (i / 2), "width": 12, "height": 6,
			"properties": map[string]any{
				"title": w.Title, "region": "${AWS::Region}", "view": "timeSeries",
				"period": alarmPeriod, "metrics": metrics,
			},
		})
	}
	body, err := json.Marshal(map[string]any{"widgets": widgets})
	if err != nil {
		panic(fmt.Sprintf("construct: dashboard: %v", err)) // plain maps, strings and numbers always marshal
	}
	return string(body)
}

// buildDashboard adds the dashboard {stack}-limiter (with the aggregator).
func (b *builder) buildDashboard() {
	if !b.s.dashboard {
		return
	}
	d := awscloudwatch.NewCfnDashboard(b.scope(), jsii.String("Dashboard"), &awscloudwatch.CfnDashboardProps{
		DashboardName: named("-limiter"),
		DashboardBody: awscdk.Fn_Sub(jsii.String(DashboardBody()), nil),
	})
	logicalID(d, "Dashboard")
	b.dashboard = d.Ref()
}
