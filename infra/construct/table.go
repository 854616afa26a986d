package construct

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TableTag is the tag every stack's table carries.
const (
	TableTagKey   = "Application"
	TableTagValue = "zae-limiter"
)

// TableDefinition returns the table layout the stack deploys for props:
// core/schema's definition, with GSI2 projecting ALL when asked
// (docs/design.md §2).
func TableDefinition(p Props) schema.Table {
	if p.GSI2ProjectAll {
		return schema.Definition(schema.WithGSI2Projection(types.ProjectionTypeAll))
	}
	return schema.Definition()
}

// buildTable renders TableDefinition as an awsdynamodb.Table named after the
// stack: keys, GSI1–GSI4, LSI1–LSI5, TTL, the stream, on-demand billing,
// PITR, deletion protection and the tag; retained on delete by default.
func (b *builder) buildTable() {
	def := TableDefinition(b.s.Props)
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	pitr := &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}
	if d := b.s.PITRRecoveryPeriodDays; d != 0 {
		pitr.RecoveryPeriodInDays = jsii.Number(d)
	}
	removal := b.s.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	t := awsdynamodb.NewTable(b.scope(), jsii.String("RateLimitsTable"), &awsdynamodb.TableProps{
		TableName:                        awscdk.Aws_STACK_NAME(),
		PartitionKey:                     str(def.PartitionKey),
		SortKey:                          str(def.SortKey),
		BillingMode:                      awsdynamodb.BillingMode(def.BillingMode),
		Stream:                           awsdynamodb.StreamViewType(def.StreamView),
		TimeToLiveAttribute:              jsii.String(def.TTLAttribute),
		PointInTimeRecoverySpecification: pitr,
		DeletionProtection:               jsii.Bool(b.s.EnableDeletionProtection),
		RemovalPolicy:                    removal,
	})
	for _, ix := range def.GlobalIndexes {
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   str(ix.PartitionKey),
			SortKey:        str(ix.SortKey),
			ProjectionType: awsdynamodb.ProjectionType(ix.Projection),
		})
	}
	for _, ix := range def.LocalIndexes {
		t.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			SortKey:        str(ix.SortKey),
			ProjectionType: awsdynamodb.ProjectionType(ix.Projection),
		})
	}
	awscdk.Tags_Of(t).Add(jsii.String(TableTagKey), jsii.String(TableTagValue), nil)
	b.table = t.Node().DefaultChild().(awsdynamodb.CfnTable)
	logicalID(b.table, "RateLimitsTable")
	b.l.Table = t
}

// tableArn, indexArns and streamArn are the table's ARNs as CloudFormation
// strings.
func (b *builder) tableArn() *string  { return b.table.AttrArn() }
func (b *builder) indexArns() *string { return jsii.String(*b.table.AttrArn() + "/index/*") }
func (b *builder) streamArn() *string { return b.table.AttrStreamArn() }
