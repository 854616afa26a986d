package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/version"
)

// statusCommand is `zl status`: the version record, the namespaces, and
// the table as DynamoDB describes it.
func (a *App) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the table: its version record, namespaces, stream and indexes",
		Long: `Show the state of the limiter's table: the version record (the schema version,
the deployed Lambdas' version, the oldest client allowed and what that gates),
the namespaces, and what DynamoDB says of the table (status, item count,
billing mode), its stream and its indexes. Reads only.`,
		Example: `  zl status
  zl status --table my-limiter -o yaml`,
		Args: noArgs,
		RunE: a.Bind(a.status),
	}
}

// statusView is `zl status`.
type statusView struct {
	Table      tableView       `json:"table"`
	Version    *versionView    `json:"version"`
	Namespaces []namespaceView `json:"namespaces"`
}

// versionView is the version record (R3, docs/design.md §2) and what it
// means for clients and writers.
type versionView struct {
	SchemaVersion    string `json:"schema_version"`
	LambdaVersion    string `json:"lambda_version"`
	ClientMinVersion string `json:"client_min_version"`
	UpdatedAt        string `json:"updated_at"`
	UpdatedBy        string `json:"updated_by"`
	// ClientGate says what client_min_version keeps out.
	ClientGate string `json:"client_gate"`
	// ClientVersion is this build's client version; ClientAllowed whether
	// limiter.Open lets it on the table.
	ClientVersion string `json:"client_version"`
	ClientAllowed bool   `json:"client_allowed"`
	// Writable lists the gated features the deployed readers understand,
	// which writers may therefore store.
	Writable []string `json:"writable_features"`
}

// tableView is the table as DescribeTable gives it.
type tableView struct {
	Name        string      `json:"name"`
	Status      string      `json:"status"`
	ItemCount   int64       `json:"item_count"`
	SizeBytes   int64       `json:"size_bytes"`
	BillingMode string      `json:"billing_mode"`
	Stream      streamView  `json:"stream"`
	Indexes     []indexView `json:"indexes"`
}

type streamView struct {
	Enabled  bool   `json:"enabled"`
	ViewType string `json:"view_type"`
}

type indexView struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	PartitionKey string `json:"partition_key"`
	SortKey      string `json:"sort_key"`
	Projection   string `json:"projection"`
	Status       string `json:"status"`
}

// gates are the reader versions of docs/design.md §2's writer gate, each
// with what it guards.
func gates() []struct{ version, feature string } {
	return []struct{ version, feature string }{
		{config.CascadePolicyVersion, "cascade policies"},
		{config.SoftBypassVersion, "soft limits and bypass"},
		{config.QuotaTopUpVersion, "quota top-ups"},
	}
}

func (a *App) status(ctx context.Context, _ *cobra.Command, _ []string) error {
	table, err := a.Table()
	if err != nil {
		return err
	}
	db, err := a.DB(ctx)
	if err != nil {
		return err
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return err
	}
	out := statusView{Table: viewTable(desc.Table), Namespaces: []namespaceView{}}
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	rec, found, err := ctl.Store().ReadVersion(ctx)
	if err != nil {
		return err
	}
	if found {
		out.Version = viewVersion(rec)
	}
	all, err := ctl.Store().ListNamespaces(ctx)
	if err != nil {
		return err
	}
	for _, n := range all {
		if n.Status == config.NamespaceActive {
			out.Namespaces = append(out.Namespaces, viewNamespace(n))
		}
	}
	return a.Render(out)
}

func viewVersion(rec config.VersionRecord) *versionView {
	v := &versionView{
		SchemaVersion: rec.SchemaVersion, LambdaVersion: rec.LambdaVersion, ClientMinVersion: rec.ClientMinVersion,
		UpdatedAt: rec.UpdatedAt, UpdatedBy: rec.UpdatedBy, ClientVersion: config.BuildVersion, Writable: []string{},
	}
	own, _ := version.Parse(config.BuildVersion)
	min, err := version.Parse(rec.ClientMinVersion)
	if err != nil {
		min, _ = version.Parse("0.0.0")
	}
	v.ClientAllowed = own.Compare(min) >= 0
	var guarded []string
	for _, g := range gates() {
		gv, _ := version.Parse(g.version)
		if min.Compare(gv) >= 0 && !slices.Contains(guarded, g.feature) {
			guarded = append(guarded, g.feature)
		}
	}
	switch {
	case min.Compare(version.Version{}) == 0:
		v.ClientGate = "every client may open the table"
	case len(guarded) == 0:
		v.ClientGate = "clients below " + min.String() + " are refused"
	default:
		v.ClientGate = "clients below " + min.String() + " are refused: the table may hold " + strings.Join(guarded, ", ")
	}
	lv, lerr := version.Parse(rec.LambdaVersion)
	for _, g := range gates() {
		gv, _ := version.Parse(g.version)
		if rec.LambdaVersion == config.BuildVersion || (lerr == nil && lv.Compare(gv) >= 0) {
			v.Writable = append(v.Writable, g.feature+" ("+g.version+")")
		}
	}
	return v
}

func viewTable(t *types.TableDescription) tableView {
	v := tableView{
		Name: aws.ToString(t.TableName), Status: string(t.TableStatus),
		ItemCount: aws.ToInt64(t.ItemCount), SizeBytes: aws.ToInt64(t.TableSizeBytes),
		BillingMode: string(types.BillingModeProvisioned), Indexes: []indexView{},
	}
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode != "" {
		v.BillingMode = string(t.BillingModeSummary.BillingMode)
	}
	if s := t.StreamSpecification; s != nil {
		v.Stream = streamView{Enabled: aws.ToBool(s.StreamEnabled), ViewType: string(s.StreamViewType)}
	}
	keys := func(ks []types.KeySchemaElement) (pk, sk string) {
		for _, k := range ks {
			if k.KeyType == types.KeyTypeHash {
				pk = aws.ToString(k.AttributeName)
			} else {
				sk = aws.ToString(k.AttributeName)
			}
		}
		return pk, sk
	}
	projection := func(p *types.Projection) string {
		if p == nil {
			return ""
		}
		s := string(p.ProjectionType)
		if len(p.NonKeyAttributes) > 0 {
			s += " " + strings.Join(p.NonKeyAttributes, ",")
		}
		return s
	}
	for _, g := range t.GlobalSecondaryIndexes {
		pk, sk := keys(g.KeySchema)
		v.Indexes = append(v.Indexes, indexView{Name: aws.ToString(g.IndexName), Kind: "global", PartitionKey: pk, SortKey: sk,
			Projection: projection(g.Projection), Status: string(g.IndexStatus)})
	}
	for _, l := range t.LocalSecondaryIndexes {
		pk, sk := keys(l.KeySchema)
		v.Indexes = append(v.Indexes, indexView{Name: aws.ToString(l.IndexName), Kind: "local", PartitionKey: pk, SortKey: sk,
			Projection: projection(l.Projection), Status: string(t.TableStatus)})
	}
	slices.SortFunc(v.Indexes, func(x, y indexView) int { return strings.Compare(x.Name, y.Name) })
	return v
}

func (s statusView) Tables() []output.Table {
	tbl := output.Table{Title: "Table", Columns: []string{"FIELD", "VALUE"}, Rows: [][]string{
		{"name", s.Table.Name}, {"status", s.Table.Status}, {"items", strconv.FormatInt(s.Table.ItemCount, 10)},
		{"size", strconv.FormatInt(s.Table.SizeBytes, 10) + " bytes"}, {"billing", s.Table.BillingMode},
		{"stream", streamText(s.Table.Stream)},
	}}
	ver := output.Table{Title: "Version record", Columns: []string{"FIELD", "VALUE"}}
	if v := s.Version; v != nil {
		allowed := "yes"
		if !v.ClientAllowed {
			allowed = "no"
		}
		ver.Rows = [][]string{
			{"schema_version", v.SchemaVersion}, {"lambda_version", orText(v.LambdaVersion, "none")},
			{"client_min_version", v.ClientMinVersion}, {"gates", v.ClientGate},
			{"this client", v.ClientVersion + ", allowed: " + allowed},
			{"writable features", orText(strings.Join(v.Writable, ", "), "none gated")},
			{"updated_at", v.UpdatedAt}, {"updated_by", orText(v.UpdatedBy, "-")},
		}
	} else {
		ver.Caption = "No version record: limiters refuse the table until the stack's version stamp (or zl table create) writes one."
	}
	ns := namespaceList{Namespaces: s.Namespaces}.Tables()[0]
	ns.Title = "Namespaces"
	idx := output.Table{Title: "Indexes", Columns: []string{"NAME", "KIND", "PARTITION KEY", "SORT KEY", "PROJECTION", "STATUS"}}
	for _, i := range s.Table.Indexes {
		idx.Rows = append(idx.Rows, []string{i.Name, i.Kind, i.PartitionKey, dash(i.SortKey), i.Projection, i.Status})
	}
	return []output.Table{ver, ns, tbl, idx}
}

func streamText(s streamView) string {
	if !s.Enabled {
		return "disabled"
	}
	return fmt.Sprintf("enabled, %s", s.ViewType)
}
