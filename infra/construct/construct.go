// Package construct will hold the CDK construct for the limiter stack: the
// table, its indexes and stream, both functions and their alarms (docs/design.md §9).
//
// Until the infrastructure issue lands it holds only the table settings the
// construct must render, taken from core/schema so that the stack, the SAM
// template, the test harness and `make run` share one definition.
package construct

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TableProps are the options of the stack's table.
type TableProps struct {
	// GSI2ProjectAll projects every attribute into GSI2, for tables shared
	// with Python clients that read bucket attributes from it (docs/design.md §2).
	GSI2ProjectAll bool
}

// TableDefinition returns the table layout the stack deploys for props.
func TableDefinition(p TableProps) schema.Table {
	if p.GSI2ProjectAll {
		return schema.Definition(schema.WithGSI2Projection(types.ProjectionTypeAll))
	}
	return schema.Definition()
}
