package construct_test

import (
	"sort"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

// scenario is one setting of the stack: the construct's props, the same
// setting as template.yaml parameters, and the logical ids of the
// resources it must hold (docs/design.md §13: what is off is absent).
type scenario struct {
	name   string
	props  construct.Props
	params map[string]string
	want   []string
}

func ids(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	sort.Strings(out)
	return out
}

func without(all []string, drop ...[]string) []string {
	gone := map[string]bool{}
	for _, g := range drop {
		for _, id := range g {
			gone[id] = true
		}
	}
	var out []string
	for _, id := range all {
		if !gone[id] {
			out = append(out, id)
		}
	}
	return out
}

const externalRole = "arn:aws:iam::123456789012:role/own-aggregator"

// scenarios covers every switch of docs/design.md §13 and every parameter
// with a non-default value in at least one scenario.
func scenarios() []scenario {
	// Resource groups, by what switches them.
	tableIDs := []string{"RateLimitsTable"}
	policyIDs := []string{"AcquireOnlyPolicy", "FullAccessPolicy", "ReadOnlyPolicy", "NamespaceAcquirePolicy", "NamespaceFullAccessPolicy", "NamespaceReadOnlyPolicy"}
	aggBaseIDs := []string{"AggregatorDLQ", "AggregatorLogGroup"}
	aggRoleIDs := []string{"AggregatorRole"}
	aggLambdaIDs := []string{"AggregatorFunction", "AggregatorEventSourceMapping"}
	provIDs := []string{"ProvisionerLogGroup", "ProvisionerRole", "ProvisionerFunction", "VersionStamp"}
	tableAlarmIDs := []string{"DynamoDBReadThrottleAlarm", "DynamoDBWriteThrottleAlarm"}
	aggAlarmIDs := []string{"AggregatorDLQAlarm", "LambdaErrorRateAlarm", "LambdaDurationAlarm", "StreamIteratorAgeAlarm"}
	provAlarmIDs := []string{"ProvisionerErrorAlarm"}
	dashboardIDs := []string{"Dashboard"}
	accessRolesIDs := []string{"AppRole", "AdminRole", "ReadOnlyRole"}
	all := ids(tableIDs, policyIDs, aggBaseIDs, aggRoleIDs, aggLambdaIDs, provIDs, tableAlarmIDs, aggAlarmIDs, provAlarmIDs, dashboardIDs)
	return []scenario{
		{name: "defaults", want: all},
		{
			name: "everything on",
			props: construct.Props{
				GSI2ProjectAll: true, PITRRecoveryPeriodDays: 7, EnableDeletionProtection: true,
				SnapshotWindows: "hourly,daily,monthly", SnapshotRetentionDays: 30,
				LambdaMemorySize: 512, LambdaTimeoutSeconds: 120, LambdaDurationThresholdMs: 96000,
				EnableTracing: true, StampTTLSeconds: 30, LambdaVersion: "0.18.0", SchemaVersion: "0.10.1",
				AlarmSNSTopicArn: "arn:aws:sns:eu-west-1:123456789012:alerts", LogRetentionDays: 7,
				EnableIAMRoles: true, PermissionBoundary: "Boundary", RoleNameFormat: "PB-{}",
			},
			params: map[string]string{
				"GSI2Projection": "ALL", "PITRRecoveryPeriodDays": "7", "EnableDeletionProtection": "true",
				"SnapshotWindows": "hourly,daily,monthly", "SnapshotRetentionDays": "30",
				"LambdaMemorySize": "512", "LambdaTimeout": "120", "LambdaDurationThreshold": "96000",
				"EnableTracing": "true", "StampTtlSeconds": "30", "LambdaVersion": "0.18.0", "SchemaVersion": "0.10.1",
				"AlarmSNSTopicArn": "arn:aws:sns:eu-west-1:123456789012:alerts", "LogRetentionDays": "7",
				"EnableIAMRoles": "true", "PermissionBoundary": "Boundary", "RoleNameFormat": "PB-{}",
			},
			want: ids(all, accessRolesIDs),
		},
		{
			name: "custom names, boundary ARN",
			props: construct.Props{
				EnableIAMRoles: true, PermissionBoundary: "arn:aws:iam::123456789012:policy/pb",
				AggregatorRoleName: "a-role", ProvisionerRoleName: "p-role", AppRoleName: "app-role",
				AdminRoleName: "admin-role", ReadOnlyRoleName: "ro-role",
				AcquireOnlyPolicyName: "acq", FullAccessPolicyName: "full", ReadOnlyPolicyName: "read",
				NamespaceAcquirePolicyName: "ns-acq", NamespaceFullAccessPolicyName: "ns-full", NamespaceReadOnlyPolicyName: "ns-read",
			},
			params: map[string]string{
				"EnableIAMRoles": "true", "PermissionBoundary": "arn:aws:iam::123456789012:policy/pb",
				"AggregatorRoleName": "a-role", "ProvisionerRoleName": "p-role", "AppRoleName": "app-role",
				"AdminRoleName": "admin-role", "ReadOnlyRoleName": "ro-role",
				"AcquireOnlyPolicyName": "acq", "FullAccessPolicyName": "full", "ReadOnlyPolicyName": "read",
				"NamespaceAcquirePolicyName": "ns-acq", "NamespaceFullAccessPolicyName": "ns-full", "NamespaceReadOnlyPolicyName": "ns-read",
			},
			want: ids(all, accessRolesIDs),
		},
		{
			name:   "no aggregator",
			props:  construct.Props{DisableAggregator: true},
			params: map[string]string{"EnableAggregator": "false"},
			want:   ids(tableIDs, policyIDs, provIDs, tableAlarmIDs, provAlarmIDs),
		},
		{
			name:   "no IAM",
			props:  construct.Props{DisableIAM: true, EnableIAMRoles: true},
			params: map[string]string{"EnableIAM": "false", "EnableIAMRoles": "true"},
			want:   ids(tableIDs, aggBaseIDs, tableAlarmIDs),
		},
		{
			name:   "no IAM, external aggregator role",
			props:  construct.Props{DisableIAM: true, AggregatorRoleArn: externalRole},
			params: map[string]string{"EnableIAM": "false", "AggregatorRoleArn": externalRole},
			want:   ids(tableIDs, aggBaseIDs, aggLambdaIDs, tableAlarmIDs, aggAlarmIDs, dashboardIDs),
		},
		{
			name:   "external aggregator role",
			props:  construct.Props{AggregatorRoleArn: externalRole},
			params: map[string]string{"AggregatorRoleArn": externalRole},
			want:   without(all, aggRoleIDs),
		},
		{
			name:   "no provisioner",
			props:  construct.Props{DisableProvisioner: true},
			params: map[string]string{"EnableProvisioner": "false"},
			want:   without(all, provIDs, provAlarmIDs),
		},
		{
			name:   "no alarms, no dashboard",
			props:  construct.Props{DisableAlarms: true, DisableDashboard: true, AlarmSNSTopicArn: "arn:aws:sns:eu-west-1:123456789012:alerts"},
			params: map[string]string{"EnableAlarms": "false", "EnableDashboard": "false", "AlarmSNSTopicArn": "arn:aws:sns:eu-west-1:123456789012:alerts"},
			want:   without(all, tableAlarmIDs, aggAlarmIDs, provAlarmIDs, dashboardIDs),
		},
	}
}
