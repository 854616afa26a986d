// Package cli is zl's command tree: the global flags, the helpers every
// command uses (the table and its clients, the namespace, rendering,
// confirmation, progress, errors that say what to do), and the command
// groups. A group is one file holding a function that builds its
// *cobra.Command from the App, plus one line in groups (root.go).
//
// Every operator write goes through core/control (or core/provision, the
// declarative form of the same writes), so each is audited and reaches the
// buckets already in use (docs/design.md §8, §12).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	xterm "golang.org/x/term"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/awsconf"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/progress"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/prompt"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
)

// Exit codes.
const (
	ExitOK    = 0 // the command did what it was asked
	ExitError = 1 // it failed, or the operator declined
	ExitUsage = 2 // it was called wrongly: an unknown flag, a missing argument, malformed input
)

// Env is the world a run of zl sees: its streams, whether they are
// terminals, its environment and its clock. Main fills it from the
// process; tests drive each part.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StdinTerminal, StdoutTerminal and StderrTerminal say which streams
	// are terminals: a terminal stdout gets tables by default, a terminal
	// stdin is asked to confirm destructive commands, a terminal stderr
	// shows progress.
	StdinTerminal, StdoutTerminal, StderrTerminal bool
	// TerminalWidth returns the stdout terminal's width in columns, 0 when
	// it cannot tell (nil: unknown). Charts fit it.
	TerminalWidth func() int
	// Getenv reads the environment (ZAEL_TABLE, AWS_ENDPOINT_URL_DYNAMODB,
	// USER).
	Getenv func(string) string
	// Clock is the wall clock of every write (default time.Now).
	Clock func() time.Time
	// BuildInfo reads the binary's build information (default
	// debug.ReadBuildInfo).
	BuildInfo func() (*debug.BuildInfo, bool)
}

// ProcessEnv is the Env of this process.
func ProcessEnv() Env {
	term := func(f *os.File) bool { return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()) }
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		StdinTerminal: term(os.Stdin), StdoutTerminal: term(os.Stdout), StderrTerminal: term(os.Stderr),
		Getenv: os.Getenv, Clock: time.Now, BuildInfo: debug.ReadBuildInfo,
		TerminalWidth: func() int {
			w, _, err := xterm.GetSize(int(os.Stdout.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
}

// Main runs zl on this process's arguments and environment, cancelled by
// an interrupt, and returns the exit code.
func Main() int { return MainEnv(ProcessEnv()) }

// MainEnv is Main in env: zl on this process's arguments, cancelled by an
// interrupt or SIGTERM (on which `zl local up` stops what it started, as
// `zl local down` asks), for a test binary that runs as zl with an env of
// its own (a fixed clock).
func MainEnv(env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, env, os.Args[1:])
}

// Run runs zl with args in env and returns the exit code. Results go to
// env.Stdout; errors, questions and progress to env.Stderr.
func Run(ctx context.Context, env Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Clock == nil {
		env.Clock = time.Now
	}
	if env.BuildInfo == nil {
		env.BuildInfo = debug.ReadBuildInfo
	}
	if env.Stdin == nil {
		env.Stdin = eofReader{}
	}
	a := &App{env: env}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	err = explain(err, a)
	fmt.Fprintln(env.Stderr, "zl: "+err.Error())
	if isUsage(err) {
		return ExitUsage
	}
	return ExitError
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// App is one run of zl: the environment, the global flags and the clients
// built from them on first use. Commands reach everything through it.
type App struct {
	env   Env
	flags globalFlags

	db   *dynamodb.Client
	conf *prompt.Confirmer
	// bar is the bar of the fan-out under way, which the controls'
	// progress reports fill (App.fanout).
	bar atomic.Pointer[progress.Fanout]
}

// globalFlags are the flags every command takes.
type globalFlags struct {
	table, namespace                  string
	region, profile, endpoint, output string
	principal                         string
	yes, quiet                        bool
	// namespaceSet and outputSet record flags given explicitly.
	namespaceSet, outputSet bool
}

// Env returns the run's environment.
func (a *App) Env() Env { return a.env }

// Now is the run's clock.
func (a *App) Now() time.Time { return a.env.Clock() }

// Table returns the table's name: --table, else ZAEL_TABLE.
func (a *App) Table() (string, error) {
	if a.flags.table != "" {
		return a.flags.table, nil
	}
	return "", usageErrorf("no table given: pass --table or set ZAEL_TABLE")
}

// DB returns the DynamoDB client of --region, --profile and
// --endpoint-url, built on first use.
func (a *App) DB(ctx context.Context) (*dynamodb.Client, error) {
	if a.db != nil {
		return a.db, nil
	}
	db, err := awsconf.DynamoDB(ctx, awsconf.Options{Region: a.flags.region, Profile: a.flags.profile, Endpoint: a.flags.endpoint})
	if err != nil {
		return nil, err
	}
	a.db = db
	return db, nil
}

// logger is what the core packages log through: warnings to stderr,
// nothing with --quiet.
func (a *App) logger() *slog.Logger {
	if a.flags.quiet {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// tableDB returns the table's name and the DynamoDB client.
func (a *App) tableDB(ctx context.Context) (string, *dynamodb.Client, error) {
	table, err := a.Table()
	if err != nil {
		return "", nil, err
	}
	db, err := a.DB(ctx)
	return table, db, err
}

// Controls returns the operator API of the table (core/control), the one
// door for operator writes.
func (a *App) Controls(ctx context.Context) (*control.Controls, error) {
	table, db, err := a.tableDB(ctx)
	if err != nil {
		return nil, err
	}
	return control.New(db, table, control.Options{Clock: a.env.Clock, Logger: a.logger(), OnProgress: a.fanoutProgress}), nil
}

// Namespace returns the controls and the id of the live namespace
// --namespace names, with what to do when it is not registered or is
// deleted.
func (a *App) Namespace(ctx context.Context) (*control.Controls, string, error) {
	ctl, err := a.Controls(ctx)
	if err != nil {
		return nil, "", err
	}
	ns, err := a.NamespaceID(ctx, ctl, a.flags.namespace)
	return ctl, ns, err
}

// fanoutProgress is the controls' progress report: it fills the bar of the
// fan-out under way, if any.
func (a *App) fanoutProgress(_ control.Scope, p control.Progress) {
	if b := a.bar.Load(); b != nil {
		b.Set(p.Buckets, p.Stamped+p.Unchanged+p.Vanished+p.Failed)
	}
}

// bucketCounts are what a fan-out did to the buckets already in use
// (docs/design.md §8): found, brought in line (written), already in line
// (they needed no write), vanished (gone before their write), failed.
type bucketCounts struct {
	Found         int `json:"found"`
	BroughtInLine int `json:"brought_in_line"`
	AlreadyInLine int `json:"already_in_line"`
	Vanished      int `json:"vanished"`
	Failed        int `json:"failed"`
}

func countsOf(p control.Progress) bucketCounts {
	return bucketCounts{Found: p.Buckets, BroughtInLine: p.Stamped, AlreadyInLine: p.Unchanged, Vanished: p.Vanished, Failed: p.Failed}
}

// caption says the counts in a sentence, under a result's table.
func (b bucketCounts) caption() string {
	return fmt.Sprintf("Buckets in use: %d found: %d brought in line, %d already in line, %d vanished, %d failed.",
		b.Found, b.BroughtInLine, b.AlreadyInLine, b.Vanished, b.Failed)
}

// fanout runs write, a control call that brings the buckets already in
// use in line, with a bar of its buckets on a terminal (nothing with
// --quiet or off one), and returns its counts. A fan-out that stopped part
// way says how far it got and to run the command again.
func (a *App) fanout(description string, write func() (control.Progress, error)) (bucketCounts, error) {
	bar := progress.StartFanout(a.env.Stderr, a.env.StderrTerminal && !a.flags.quiet, description)
	a.bar.Store(bar)
	p, err := write()
	a.bar.Store(nil)
	bar.Done()
	var inc *control.FanoutIncompleteError
	if errors.As(err, &inc) {
		c := countsOf(inc.Progress)
		return c, withHint(&restated{msg: fmt.Sprintf("the change is stored, but %d of %d buckets in use could not be brought in line (%d brought in line, %d already in line, %d vanished): %v",
			c.Failed, c.Found, c.BroughtInLine, c.AlreadyInLine, c.Vanished, inc.Err), err: err}, "run the same command again to finish")
	}
	return countsOf(p), err
}

// Provisioner returns the manifest engine of the table (core/provision),
// the code the provisioner Lambda runs.
func (a *App) Provisioner(ctx context.Context) (*provision.Provisioner, error) {
	table, db, err := a.tableDB(ctx)
	if err != nil {
		return nil, err
	}
	return provision.New(db, table, provision.Options{Clock: a.env.Clock, Logger: a.logger()}), nil
}

// Principal is who the audit trail records for this run's writes:
// --principal, else `zl:` and the login name.
func (a *App) Principal() string {
	if a.flags.principal != "" {
		return a.flags.principal
	}
	for _, k := range []string{"USER", "LOGNAME", "USERNAME"} {
		if u := a.env.Getenv(k); u != "" {
			return "zl:" + u
		}
	}
	return "zl"
}

// Format is the output format: --output, else a table on a terminal and
// JSON elsewhere.
func (a *App) Format() output.Format {
	def := output.FormatJSON
	if a.env.StdoutTerminal {
		def = output.FormatTable
	}
	f, err := output.ParseFormat(a.flags.output, def)
	if err != nil {
		return def // refused before any command runs (root's PersistentPreRunE)
	}
	return f
}

// Render writes a command's result to stdout in the run's format.
func (a *App) Render(v any) error {
	return output.Render(a.env.Stdout, a.Format(), v)
}

// Infof tells the operator something on stderr, unless --quiet.
func (a *App) Infof(format string, args ...any) {
	if !a.flags.quiet {
		fmt.Fprintf(a.env.Stderr, format+"\n", args...)
	}
}

// Confirm asks the operator to confirm action on a terminal, unless --yes;
// off a terminal without --yes it refuses with a *prompt.NeedYesError.
func (a *App) Confirm(action, question string) error {
	if a.conf == nil {
		a.conf = &prompt.Confirmer{In: a.env.Stdin, Out: a.env.Stderr, Terminal: a.env.StdinTerminal, Yes: a.flags.yes}
	}
	return a.conf.Confirm(action, question)
}

// Prompting reports whether Confirm will ask a person (a terminal, no
// --yes): a command shows what it is about to do first.
func (a *App) Prompting() bool { return a.env.StdinTerminal && !a.flags.yes }

// Progress shows description with a spinner on a terminal stderr while
// work runs, unless --quiet.
func (a *App) Progress(description string) progress.Indicator {
	return progress.Start(a.env.Stderr, a.env.StderrTerminal && !a.flags.quiet, description)
}

// Bind wires a command's RunE to the App: the command's context is
// passed on, and its errors come back to Run.
func (a *App) Bind(run func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return run(cmd.Context(), cmd, args)
	}
}
