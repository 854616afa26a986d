package cli

import (
	"context"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// versionCommand is `zl version`.
func (a *App) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print zl's version and the schema version it speaks",
		Long: `Print zl's version — the module version when installed with
go install github.com/zae-limiter/zae-limiter-go/cmd/zl@vX.Y.Z, (devel) for a
build from a checkout — the client version limiter.Open checks against a
table's client_min_version, and the table schema version it reads and writes.
No table is read.`,
		Example: `  zl version
  zl version -o json`,
		Args: noArgs,
		RunE: a.Bind(func(context.Context, *cobra.Command, []string) error {
			return a.Render(buildVersion(a.env.BuildInfo))
		}),
	}
}

// versionInfo is `zl version`.
type versionInfo struct {
	Version       string `json:"version"`
	ClientVersion string `json:"client_version"`
	SchemaVersion string `json:"schema_version"`
	Go            string `json:"go"`
}

// buildVersion reads the binary's version from its build information: the
// main module's version, "(devel)" when there is none.
func buildVersion(read func() (*debug.BuildInfo, bool)) versionInfo {
	v := versionInfo{Version: "(devel)", ClientVersion: config.BuildVersion, SchemaVersion: config.SchemaVersion, Go: runtime.Version()}
	if bi, ok := read(); ok && bi != nil {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
	}
	return v
}

func (v versionInfo) Tables() []output.Table {
	return []output.Table{{Columns: []string{"FIELD", "VALUE"}, Rows: [][]string{
		{"zl", v.Version}, {"client version", v.ClientVersion}, {"schema version", v.SchemaVersion}, {"go", v.Go},
	}}}
}
