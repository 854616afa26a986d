package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// tableCommand is `zl table`: a table made outside a stack, for DynamoDB
// Local or a trial.
func (a *App) tableCommand() *cobra.Command {
	var gsi2All bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the limiter's table and stamp its version record",
		Long: `Create the table (--table or ZAEL_TABLE) with the layout every writer shares
(docs/design.md §2: keys, indexes, TTL, the stream), wait until it is active,
and stamp its version record as a deployment of this build does. For DynamoDB
Local and trials: a deployed stack creates and stamps its own table. GSI2
projects keys only; pass --gsi2-all for a table shared with Python clients.`,
		Example: `  zl table create --table demo --endpoint-url http://127.0.0.1:8000`,
		Args:    noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.tableCreate(ctx, gsi2All)
		}),
	}
	create.Flags().BoolVar(&gsi2All, "gsi2-all", false, "GSI2 projects every attribute (tables shared with Python clients)")
	return group("table", "Create a table outside a stack (DynamoDB Local, trials)",
		`A deployed stack creates and stamps its own table; this is for the others.`, create)
}

// tableCreated is what `zl table create` did.
type tableCreated struct {
	Name          string `json:"name"`
	Status        string `json:"status"`
	SchemaVersion string `json:"schema_version"`
	LambdaVersion string `json:"lambda_version"`
}

func (t tableCreated) Tables() []output.Table {
	return []output.Table{{Columns: []string{"TABLE", "STATUS", "SCHEMA VERSION", "LAMBDA VERSION"},
		Rows: [][]string{{t.Name, t.Status, t.SchemaVersion, t.LambdaVersion}}}}
}

func (a *App) tableCreate(ctx context.Context, gsi2All bool) error {
	table, err := a.Table()
	if err != nil {
		return err
	}
	db, err := a.DB(ctx)
	if err != nil {
		return err
	}
	var opts []schema.TableOption
	if gsi2All {
		opts = append(opts, schema.WithGSI2Projection(types.ProjectionTypeAll))
	}
	done := a.Progress("creating table " + table)
	desc, err := schema.Definition(opts...).CreateTable(ctx, db, table, 5*time.Minute)
	done.Done()
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return withHint(fmt.Errorf("table %q exists already", table), "zl status shows it")
	}
	if err != nil {
		return err
	}
	st := config.NewStore(db, table, config.WithClock(a.env.Clock))
	if err := st.StampVersion(ctx, a.Principal()); err != nil {
		return err
	}
	return a.Render(tableCreated{Name: table, Status: string(desc.TableStatus), SchemaVersion: config.SchemaVersion, LambdaVersion: config.BuildVersion})
}
