package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// terminal is a zl run on a pseudo-terminal: stdin, stdout and stderr are
// the terminal, as when an operator types the command.
type terminal struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	seen chan struct{} // pinged on every read
	done chan struct{} // closed when the terminal has no more output
}

// startTerminal runs zl with args on a new pseudo-terminal, in env.
func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command("zl", args...)
	cmd.Env = env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatalf("start zl on a terminal: %v", err)
	}
	tm := &terminal{t: t, ptmx: ptmx, cmd: cmd, seen: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				tm.mu.Lock()
				tm.out.Write(buf[:n])
				tm.mu.Unlock()
				select {
				case tm.seen <- struct{}{}:
				default:
				}
			}
			if err != nil { // EIO once zl has exited and closed the terminal
				return
			}
		}
	}()
	t.Cleanup(func() { _ = ptmx.Close(); _ = cmd.Process.Kill() })
	return tm
}

func (tm *terminal) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits until the terminal shows text (at most a minute: a bound,
// not a pace).
func (tm *terminal) waitFor(text string) {
	tm.t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(tm.output(), text) {
		select {
		case <-tm.seen:
		case <-tm.done:
			if !strings.Contains(tm.output(), text) {
				tm.t.Fatalf("zl ended without showing %q; the terminal shows:\n%s", text, tm.output())
			}
		case <-deadline:
			tm.t.Fatalf("the terminal did not show %q in a minute; it shows:\n%s", text, tm.output())
		}
	}
}

// answer types a line.
func (tm *terminal) answer(line string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.ptmx, line+"\n"); err != nil {
		tm.t.Fatal(err)
	}
}

// exit waits for zl to end and returns its exit code and everything the
// terminal showed.
func (tm *terminal) exit() (int, string) {
	tm.t.Helper()
	err := tm.cmd.Wait()
	select {
	case <-tm.done:
	case <-time.After(time.Minute):
		tm.t.Fatal("the terminal stayed open after zl ended")
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), tm.output()
	case err != nil:
		tm.t.Fatal(err)
	}
	return 0, tm.output()
}

// scriptEnv is the environment setupScript gives a script, for tbl.
func scriptEnv(tbl *ddbtest.Table) []string {
	return append(os.Environ(),
		"ZAEL_TABLE="+tbl.Name, "AWS_ENDPOINT_URL_DYNAMODB="+tbl.Endpoint,
		"AWS_REGION="+ddblocal.Region, "AWS_ACCESS_KEY_ID="+ddblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+ddblocal.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"ZL_TEST_NOW="+testNow, "USER=tester", "TERM=dumb", "GORACE="+childGORACE(),
	)
}

// TestConfirmationOnATerminal: on a terminal, a destructive command asks;
// n writes nothing, y goes ahead; `limits apply` shows its plan before
// asking, and its result as a table (stdout is a terminal). Off a terminal,
// without --yes, the same commands refuse and write nothing.
func TestConfirmationOnATerminal(t *testing.T) {
	t.Parallel()
	tbl := ddbtest.NewTable(t)
	env := scriptEnv(tbl)
	ctx := context.Background()
	st := config.NewStore(tbl.DB, tbl.Name)
	manifest := t.TempDir() + "/limits.yaml"
	if err := os.WriteFile(manifest, []byte("namespace: tenant\nresources:\n  gpt-4:\n    limits:\n      rpm: {capacity: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Not a terminal (stdin a pipe), no --yes: refused, nothing written.
	refusedOffATerminal(t, env, "limits", "apply", "-f", manifest)
	if all, err := st.ListNamespaces(ctx); err != nil || len(all) != 0 {
		t.Fatalf("refused commands registered %v (%v)", all, err)
	}

	// apply on a terminal: the namespace is not registered; answer n to
	// registering it, and nothing is written.
	tm := startTerminal(t, env, "limits", "apply", "-f", manifest)
	tm.waitFor("Namespace tenant is not registered. Register it? [y/N] ")
	tm.answer("n")
	if code, out := tm.exit(); code != 1 || !strings.Contains(out, "not confirmed: nothing was written") {
		t.Fatalf("declined registration: exit %d\n%s", code, out)
	}
	if all, err := st.ListNamespaces(ctx); err != nil || len(all) != 0 {
		t.Fatalf("a declined apply registered %v (%v)", all, err)
	}

	// y to registering, then the plan is shown; n to applying: the
	// namespace is registered, no limits are written.
	tm = startTerminal(t, env, "limits", "apply", "-f", manifest)
	tm.waitFor("Register it? [y/N] ")
	tm.answer("y")
	tm.waitFor("Apply 1 change to namespace tenant? [y/N] ")
	if out := tm.output(); !strings.Contains(out, "Plan for namespace tenant (owner manifest:default): 1 to create, 0 to update, 0 to delete") ||
		!strings.Contains(out, "rpm: 100 per minute") {
		t.Fatalf("no plan before the question:\n%s", out)
	}
	tm.answer("no")
	if code, out := tm.exit(); code != 1 || !strings.Contains(out, "not confirmed: nothing was written") {
		t.Fatalf("declined apply: exit %d\n%s", code, out)
	}
	ns, err := st.ResolveNamespace(ctx, "tenant")
	if err != nil {
		t.Fatalf("registration answered y: %v", err)
	}
	if lims, err := st.GetResourceLimits(ctx, ns, "gpt-4"); err != nil || len(lims) != 0 {
		t.Fatalf("a declined apply wrote limits %v (%v)", lims, err)
	}

	// y: applied, and the result is a table on the terminal.
	tm = startTerminal(t, env, "limits", "apply", "-f", manifest)
	tm.waitFor("Apply 1 change to namespace tenant? [y/N] ")
	tm.answer("y")
	code, out := tm.exit()
	if code != 0 || !strings.Contains(out, "Applied to namespace tenant (owner manifest:default): 1 created, 0 updated, 0 deleted") || !strings.Contains(out, "│ ACTION │") {
		t.Fatalf("confirmed apply: exit %d\n%s", code, out)
	}
	if lims, err := st.GetResourceLimits(ctx, ns, "gpt-4"); err != nil || len(lims) != 1 || lims[0].Capacity != 100 {
		t.Fatalf("limits after the apply: %v (%v)", lims, err)
	}

	// namespace delete: refused off a terminal; n keeps it, y deletes it.
	refusedOffATerminal(t, env, "namespace", "delete", "tenant")
	if _, err := st.ResolveNamespace(ctx, "tenant"); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	tm = startTerminal(t, env, "namespace", "delete", "tenant")
	tm.waitFor("Delete namespace tenant (id " + ns + ")?")
	tm.waitFor("[y/N] ")
	tm.answer("n")
	if code, out := tm.exit(); code != 1 || !strings.Contains(out, "not confirmed: nothing was written") {
		t.Fatalf("declined delete: exit %d\n%s", code, out)
	}
	if _, err := st.ResolveNamespace(ctx, "tenant"); err != nil {
		t.Fatalf("a declined delete deleted: %v", err)
	}
	tm = startTerminal(t, env, "namespace", "delete", "tenant")
	tm.waitFor("[y/N] ")
	tm.answer("y")
	if code, out := tm.exit(); code != 0 || !strings.Contains(out, "│ tenant │ "+ns+" │ deleted │") {
		t.Fatalf("confirmed delete: exit %d\n%s", code, out)
	}
	if n, err := st.GetNamespace(ctx, ns); err != nil || n.Status != config.NamespaceDeleted {
		t.Fatalf("after a confirmed delete: %+v (%v)", n, err)
	}
}

// refusedOffATerminal runs zl with stdin a pipe that would answer y: it
// must refuse for want of --yes (exit 2).
func refusedOffATerminal(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("zl", args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("y\n")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "stdin is not a terminal: pass --yes to go ahead") {
		t.Fatalf("zl %v off a terminal: %v\n%s", args, err, out)
	}
}

// TestFanoutBarAndPromptOnATerminal: on a terminal, a fan-out shows a bar
// of the buckets it brings in line and ends with their counts; --quiet
// shows no bar; a destructive command asks, n keeps the entity and y
// deletes it.
func TestFanoutBarAndPromptOnATerminal(t *testing.T) {
	t.Parallel()
	tbl := ddbtest.NewTable(t)
	env := scriptEnv(tbl)
	ctx := context.Background()
	st := config.NewStore(tbl.DB, tbl.Name)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("zl", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("zl %v: %v\n%s", args, err, out)
		}
	}
	run("namespace", "register", "tenant")
	run("-N", "tenant", "resource", "set", "gpt-4", "rpm:100/min")
	run("-N", "tenant", "entity", "create", "key-0")
	now, _ := time.Parse(time.RFC3339, testNow)
	lim, err := limiter.Open(ctx, tbl.DB, tbl.Name, "tenant", limiter.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	const buckets = 24
	for i := range buckets {
		if _, err := lim.Acquire(ctx, fmt.Sprintf("key-%d", i), "gpt-4", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}

	tm := startTerminal(t, env, "-N", "tenant", "access", "disable", "--resource", "gpt-4")
	code, out := tm.exit()
	if code != 0 || !strings.Contains(out, "resource gpt-4") || !strings.Contains(out, fmt.Sprintf("| (0/%d)", buckets)) ||
		!strings.Contains(out, fmt.Sprintf("Buckets in use: %d found: %d brought in line, 0 already in line, 0 vanished, 0 failed.", buckets, buckets)) || !strings.Contains(out, "│ -      │ gpt-4    │ disabled │") {
		t.Fatalf("disable on a terminal: exit %d, want a bar of %d buckets and their counts:\n%s", code, buckets, out)
	}
	tm = startTerminal(t, env, "-N", "tenant", "--quiet", "access", "inherit", "--resource", "gpt-4")
	code, out = tm.exit()
	if code != 0 || strings.Contains(out, fmt.Sprintf("/%d", buckets)) || !strings.Contains(out, fmt.Sprintf("Buckets in use: %d found: %d brought in line", buckets, buckets)) {
		t.Fatalf("--quiet on a terminal: exit %d, want the counts and no bar:\n%s", code, out)
	}

	ns, err := st.ResolveNamespace(ctx, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	tm = startTerminal(t, env, "-N", "tenant", "entity", "delete", "key-0")
	tm.waitFor("Delete entity key-0 of namespace tenant with its config, buckets and usage? Its audit trail stays. [y/N] ")
	tm.answer("n")
	if code, out := tm.exit(); code != 1 || !strings.Contains(out, "not confirmed: nothing was written") {
		t.Fatalf("declined delete: exit %d\n%s", code, out)
	}
	if _, err := st.GetEntity(ctx, ns, "key-0"); err != nil {
		t.Fatalf("a declined delete deleted: %v", err)
	}
	tm = startTerminal(t, env, "-N", "tenant", "entity", "delete", "key-0")
	tm.waitFor("[y/N] ")
	tm.answer("y")
	if code, out := tm.exit(); code != 0 || !strings.Contains(out, "│ key-0  │ tenant    │ deleted │") {
		t.Fatalf("confirmed delete: exit %d\n%s", code, out)
	}
	var nf *config.EntityNotFoundError
	if _, err := st.GetEntity(ctx, ns, "key-0"); !errors.As(err, &nf) {
		t.Fatalf("after a confirmed delete: %v", err)
	}
}
