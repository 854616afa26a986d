package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
)

// run runs zl in process with its streams injected; vars is its
// environment.
func run(t *testing.T, stdin string, terminal bool, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		StdinTerminal: terminal, StdoutTerminal: terminal,
		Getenv: func(k string) string { return vars[k] },
		Clock:  func() time.Time { return time.Date(2028, 2, 29, 23, 59, 0, 0, time.UTC) },
	}
	code = Run(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

// TestExitCodes: 0 done, 1 failed, 2 called wrongly — each usage error
// says what to do, on stderr, with nothing on stdout.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("namespace: x\nresources: {r: {limits: {rpm: {capacity: -1}}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--output", "xml", "version"}, 2, "pass --output table, json or yaml"},
		{[]string{"namespace", "list"}, 2, "no table given: pass --table or set ZAEL_TABLE"},
		{[]string{"limits", "plan"}, 2, "no manifest: pass -f FILE"},
		{[]string{"limits", "cfn-template", "-f", bad}, 2, "resources.r.limits.rpm.capacity"},
		{[]string{"limits", "apply", "-f", dir + "/none.yaml"}, 2, "read the manifest"},
		{[]string{"namespace", "show", "a", "b"}, 2, "takes at most 1 argument"},
		{[]string{"namespace", "register", "--bogus", "x"}, 2, "unknown flag: --bogus: zl namespace register --help lists its flags"},
		{[]string{"status", "-o"}, 2, "flag needs an argument"},
	} {
		code, stdout, stderr := run(t, "", false, nil, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("zl %v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
		if code != 0 && stdout != "" {
			t.Errorf("zl %v failed and wrote %q to stdout", c.args, stdout)
		}
	}
	// A bare zl, and a bare group, show their help.
	if code, stdout, _ := run(t, "", false, nil); code != 0 || !strings.Contains(stdout, "Available Commands") {
		t.Errorf("bare zl: %d %q", code, stdout)
	}
	if code, stdout, _ := run(t, "", false, nil, "limits"); code != 0 || !strings.Contains(stdout, "cfn-template") {
		t.Errorf("bare zl limits: %d %q", code, stdout)
	}
}

// TestBuildVersion: the module version of `go install …@vX`, else (devel).
func TestBuildVersion(t *testing.T) {
	for _, c := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/zae-limiter/zae-limiter-go", Version: "v0.18.0"}}, true, "v0.18.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(devel)"},
		{&debug.BuildInfo{}, true, "(devel)"},
		{nil, false, "(devel)"},
	} {
		v := buildVersion(func() (*debug.BuildInfo, bool) { return c.bi, c.ok })
		if v.Version != c.want || v.SchemaVersion != config.SchemaVersion || v.ClientVersion != config.BuildVersion {
			t.Errorf("%+v: %+v, want version %q", c.bi, v, c.want)
		}
	}
}

// TestVersionGates: what client_min_version keeps out and what the
// deployed readers let writers store.
func TestVersionGates(t *testing.T) {
	for _, c := range []struct {
		min, lambda, gate string
		allowed           bool
		writable          int
	}{
		{"0.0.0", "0.15.0", "every client may open the table", true, 0},
		{"0.16.0", "0.16.2", "clients below 0.16.0 are refused: the table may hold cascade policies", true, 1},
		{"0.17.0", "0.17.0", "clients below 0.17.0 are refused: the table may hold cascade policies, soft limits and bypass, quota top-ups", true, 3},
		{"0.99.0", "", "clients below 0.99.0 are refused: the table may hold cascade policies, soft limits and bypass, quota top-ups", false, 0},
		{"garbage", "garbage", "every client may open the table", true, 0},
	} {
		v := viewVersion(config.VersionRecord{ClientMinVersion: c.min, LambdaVersion: c.lambda})
		if v.ClientGate != c.gate || v.ClientAllowed != c.allowed || len(v.Writable) != c.writable {
			t.Errorf("min %s lambda %s: %+v", c.min, c.lambda, v)
		}
	}
}

// TestErrorsSayWhatToDo: the errors a command does not explain itself get
// what to do, and keep their cause for errors.As.
func TestErrorsSayWhatToDo(t *testing.T) {
	a := &App{flags: globalFlags{table: "t1", endpoint: "http://127.0.0.1:1"}}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&types.ResourceNotFoundException{}, `table "t1" not found at http://127.0.0.1:1: pass --table or set ZAEL_TABLE`},
		{&config.NamespaceNotFoundError{Name: "x"}, "zl namespace register x"},
		{&config.NamespaceStateError{Name: "x", State: config.NamespaceDeleted}, "zl namespace recover x"},
		{&config.MissingVersionError{Table: "t1"}, "deploy the stack's version stamp, or run zl table create"},
		{&config.VersionMismatchError{Gate: true, LambdaVersion: "0.15.0", ClientMinVersion: "0.17.0"}, "deploy the stack at 0.17.0 or later first"},
		{&config.VersionMismatchError{ClientVersion: "0.17.0", ClientMinVersion: "0.18.0"}, "install a newer zl"},
		{&smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}, "{stack}-full policy"},
		{&smithy.GenericAPIError{Code: "UnrecognizedClientException"}, "credentials are not valid here"},
		{fmt.Errorf("op: %w", dial), "cannot reach DynamoDB at http://127.0.0.1:1"},
		{errors.New("operation error DynamoDB: Query, failed to retrieve credentials: none"), "no AWS credentials: pass --profile"},
	} {
		got := explain(c.err, a)
		if !strings.Contains(got.Error(), c.want) {
			t.Errorf("%T: %q, want it to say %q", c.err, got, c.want)
		}
		if !errors.Is(got, c.err) && !strings.Contains(c.err.Error(), "credentials") && !errors.As(got, new(*net.OpError)) {
			t.Errorf("%T: the cause is lost", c.err)
		}
	}
}

// TestFanoutCounts: a fan-out's counts as a result shows them (found,
// brought in line, already in line, vanished, failed), and a fan-out that
// stopped part way fails with how far it got and what to do, its cause
// kept; off a terminal no bar is drawn.
func TestFanoutCounts(t *testing.T) {
	var errOut bytes.Buffer
	a := &App{env: Env{Stderr: &errOut}}
	c, err := a.fanout("resource r", func() (control.Progress, error) {
		a.fanoutProgress(control.Scope{Resource: "r"}, control.Progress{Buckets: 5, Stamped: 1})
		return control.Progress{Buckets: 5, Stamped: 2, Unchanged: 2, Vanished: 1}, nil
	})
	if err != nil || c != (bucketCounts{Found: 5, BroughtInLine: 2, AlreadyInLine: 2, Vanished: 1}) || errOut.Len() != 0 {
		t.Fatalf("counts %+v, %v; stderr %q", c, err, errOut.String())
	}
	if got := c.caption(); got != "Buckets in use: 5 found: 2 brought in line, 2 already in line, 1 vanished, 0 failed." {
		t.Errorf("caption %q", got)
	}
	cause := errors.New("throttled")
	inc := &control.FanoutIncompleteError{Scope: control.Scope{Resource: "r"}, Progress: control.Progress{Buckets: 4, Stamped: 2, Unchanged: 1, Failed: 1}, Err: cause}
	c, err = a.fanout("resource r", func() (control.Progress, error) { return inc.Progress, inc })
	want := "the change is stored, but 1 of 4 buckets in use could not be brought in line (2 brought in line, 1 already in line, 0 vanished): throttled: run the same command again to finish"
	if err == nil || err.Error() != want || !errors.Is(err, cause) || c.Failed != 1 || isUsage(err) {
		t.Fatalf("incomplete: %v (%+v), want %q", err, c, want)
	}
}
