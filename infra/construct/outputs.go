package construct

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// output adds a stack output exported as {stack}{export}.
func (b *builder) output(id, export, description string, value *string) {
	o := awscdk.NewCfnOutput(b.scope(), jsii.String(id), &awscdk.CfnOutputProps{
		Value:       value,
		Description: jsii.String(description),
		ExportName:  named(export),
	})
	logicalID(o, id)
}

// buildOutputs adds the outputs and exports of docs/design.md §13; each is
// present exactly when what it names is. Tenant stacks import
// {stack}-ProvisionerArn as the ServiceToken of their limits.
func (b *builder) buildOutputs() {
	s := b.s
	b.output("TableName", "-TableName", "Rate-limit table name", b.table.Ref())
	b.output("TableArn", "-TableArn", "Rate-limit table ARN", b.tableArn())
	b.output("StreamArn", "-StreamArn", "Rate-limit table stream ARN", b.streamArn())
	if b.aggregator != nil {
		b.output("AggregatorFunctionArn", "-AggregatorArn", "Aggregator Lambda ARN", b.aggregator.AttrArn())
		b.output("AggregatorFunctionName", "-AggregatorName", "Aggregator Lambda name", b.aggregator.Ref())
	}
	if b.l.DLQ != nil {
		b.output("AggregatorDLQUrl", "-DLQUrl", "Aggregator dead-letter queue URL", b.l.DLQ.QueueUrl())
		b.output("AggregatorDLQArn", "-DLQArn", "Aggregator dead-letter queue ARN", b.l.DLQ.QueueArn())
	}
	for _, a := range b.alarms {
		b.output(a.output, a.export, "Alarm: "+strings.TrimPrefix(a.suffix, "-"), a.ref)
	}
	if s.iam {
		l := b.l
		for _, p := range []struct {
			id  string
			arn *string
		}{
			{"AcquireOnlyPolicy", l.AcquireOnlyPolicy}, {"FullAccessPolicy", l.FullAccessPolicy}, {"ReadOnlyPolicy", l.ReadOnlyPolicy},
			{"NamespaceAcquirePolicy", l.NamespaceAcquirePolicy}, {"NamespaceFullAccessPolicy", l.NamespaceFullAccessPolicy},
			{"NamespaceReadOnlyPolicy", l.NamespaceReadOnlyPolicy},
		} {
			b.output(p.id+"Arn", "-"+p.id+"Arn", "Managed policy ARN: "+p.id, p.arn)
		}
	}
	for _, r := range b.roles {
		if r.id == "AggregatorRole" || r.id == "ProvisionerRole" {
			continue
		}
		b.output(r.id+"Arn", "-"+r.id+"Arn", "IAM role ARN: "+r.id, r.role.AttrArn())
		b.output(r.id+"Name", "-"+r.id+"Name", "IAM role name: "+r.id, r.role.Ref())
	}
	if pb := b.permissionBoundary(); pb != nil {
		b.output("PermissionBoundaryArn", "-PermissionBoundaryArn", "Permissions boundary of the stack's roles", pb)
	}
	if s.RoleNameFormat != "" {
		b.output("RoleNameFormat", "-RoleNameFormat", "Format of the stack's role names", jsii.String(s.RoleNameFormat))
	}
	if b.provisioner != nil {
		b.output("ProvisionerArn", "-ProvisionerArn", "Provisioner Lambda ARN: the ServiceToken of Custom::ZaeLimiterLimits", b.provisioner.AttrArn())
		b.output("ProvisionerName", "-ProvisionerName", "Provisioner Lambda name", b.provisioner.Ref())
	}
	if b.dashboard != nil {
		b.output("DashboardName", "-DashboardName", "CloudWatch dashboard name", b.dashboard)
	}
}
