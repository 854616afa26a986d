package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
)

// groups are zl's command groups, in the order help lists them. A new
// group is a file with its builder, and a line here.
func groups() []func(*App) *cobra.Command {
	return []func(*App) *cobra.Command{
		(*App).namespaceCommand,
		(*App).limitsCommand,
		(*App).systemCommand,
		(*App).resourceCommand,
		(*App).entityCommand,
		(*App).accessCommand,
		(*App).resetCommand,
		(*App).topUpCommand,
		(*App).auditCommand,
		(*App).statusCommand,
		(*App).usageCommand,
		(*App).tableCommand,
		(*App).localCommand,
		(*App).versionCommand,
	}
}

// annotationCSV marks a command that takes --output csv: its result reads
// as one table (output.CSVTabler, or a single output.Table).
const annotationCSV = "zl:output-csv"

// rootCommand builds the command tree with its global flags.
func (a *App) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "zl",
		Short: "Operate a zae-limiter table: namespaces, limits, entities, access, audit",
		Long: `zl operates the DynamoDB table of a zae-limiter deployment: it registers and
deletes namespaces, plans and applies limits manifests (the same engine as the
stack's provisioner), sets the limits of the system, a resource or an entity,
records entities, changes access, resets and tops up buckets, reads the audit
trails and the usage the aggregator records (snapshots, sums, a chart, live
buckets, top consumers), and shows the table's version record and state.
Every write goes through the library's one audited operator door, so it is
recorded in the namespace's audit trail and reaches the buckets already in use
before the command returns.

The table comes from --table or ZAEL_TABLE; AWS credentials, region and profile
from the usual AWS configuration. Results go to stdout (a table on a terminal,
JSON otherwise; --output chooses), errors and questions to stderr. Exit codes:
0 done, 1 failed or declined, 2 called wrongly.`,
		Example: `  export ZAEL_TABLE=my-limiter
  zl status
  zl namespace register tenant-alpha
  zl limits plan -f limits.yaml
  zl limits apply -f limits.yaml`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// A bare `zl` shows the help.
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			f, err := output.ParseFormat(a.flags.output, output.FormatJSON)
			switch {
			case err != nil && cmd.Annotations[annotationCSV] != "":
				return &output.FormatError{Given: a.flags.output, Accepted: output.CSVFormats()}
			case err != nil:
				return err
			case f == output.FormatCSV && cmd.Annotations[annotationCSV] == "":
				return &output.FormatError{Given: a.flags.output}
			}
			a.flags.namespaceSet = cmd.Flags().Changed("namespace")
			a.flags.outputSet = cmd.Flags().Changed("output")
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%v: %s --help lists its flags", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.flags.table, "table", a.env.Getenv("ZAEL_TABLE"), "the limiter's table (env ZAEL_TABLE)")
	pf.StringVarP(&a.flags.namespace, "namespace", "N", "default", "the namespace to work in")
	pf.StringVar(&a.flags.region, "region", "", "AWS region (default: the AWS configuration's)")
	pf.StringVar(&a.flags.profile, "profile", "", "AWS shared config profile")
	pf.StringVar(&a.flags.endpoint, "endpoint-url", a.env.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "DynamoDB endpoint, e.g. DynamoDB Local's (env AWS_ENDPOINT_URL_DYNAMODB)")
	pf.StringVarP(&a.flags.output, "output", "o", "", "output format: table, json or yaml, csv where a command says so (default: table on a terminal, json otherwise)")
	pf.BoolVar(&a.flags.yes, "yes", false, "answer yes to every confirmation (needed for destructive commands off a terminal)")
	pf.BoolVarP(&a.flags.quiet, "quiet", "q", false, "no progress, notes or warnings on stderr")
	pf.StringVar(&a.flags.principal, "principal", "", "who the audit trail records for writes (default zl:$USER)")

	_ = root.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		if cmd.Annotations[annotationCSV] != "" {
			return output.CSVFormats(), cobra.ShellCompDirectiveNoFileComp
		}
		return output.Formats(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return a.completeNamespaces(cmd.Context(), prefix, false)
	})

	for _, g := range groups() {
		root.AddCommand(g(a))
	}
	return root
}

// group builds a command that only holds subcommands: bare, it shows its
// help; with an unknown subcommand, it is a usage error.
func group(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q: %s", args[0], cmd.CommandPath(), subcommandList(cmd))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	g.AddCommand(subs...)
	return g
}

func subcommandList(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return "its commands are " + strings.Join(names, ", ")
}

// noArgs refuses arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if !cmd.HasParent() {
			return usageErrorf("unknown command %q: zl --help lists the commands", args[0])
		}
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// exactArgs wants the arguments names (as help shows them: "NAME").
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usageErrorf("%s needs %s: %s", cmd.CommandPath(), strings.Join(names[len(args):], " "), cmd.UseLine())
		case len(args) > len(names):
			return usageErrorf("%s takes %d argument(s), got %d: %s", cmd.CommandPath(), len(names), len(args), cmd.UseLine())
		}
		return nil
	}
}

// maxArgs allows up to the arguments names.
func maxArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > len(names) {
			return usageErrorf("%s takes at most %d argument(s), got %d: %s", cmd.CommandPath(), len(names), len(args), cmd.UseLine())
		}
		return nil
	}
}

// completeNamespaces lists the names of live (or, with deleted, deleted)
// namespaces that start with prefix, for shell completion: one Query.
func (a *App) completeNamespaces(ctx context.Context, prefix string, deleted bool) ([]string, cobra.ShellCompDirective) {
	ctl, err := a.Controls(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := ctl.Store().ListNamespaces(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range all {
		if (n.Status == "deleted") == deleted && strings.HasPrefix(n.Name, prefix) {
			names = append(names, n.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
