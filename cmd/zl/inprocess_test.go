package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/cli"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// runInProcess runs the command tree in this process with its streams,
// terminals and environment injected (cli.Env).
func runInProcess(t *testing.T, stdin string, terminal bool, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		StdinTerminal: terminal, StdoutTerminal: terminal,
		Getenv: func(k string) string { return vars[k] },
		Clock:  func() time.Time { return time.Date(2028, 2, 29, 23, 59, 0, 0, time.UTC) },
	}
	code = cli.Run(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

// TestInjectedTerminal: the prompt reads the injected stdin when it is a
// terminal — n writes nothing, y deletes — and a terminal stdout gets a
// table by default, any other JSON.
func TestInjectedTerminal(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	t.Setenv("AWS_ACCESS_KEY_ID", ddblocal.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", ddblocal.SecretAccessKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	vars := map[string]string{"ZAEL_TABLE": tbl.Name, "AWS_ENDPOINT_URL_DYNAMODB": tbl.Endpoint, "USER": "tester"}
	region := "--region=" + ddblocal.Region

	if code, stdout, stderr := runInProcess(t, "", false, vars, region, "namespace", "register", "t1"); code != 0 || !strings.HasPrefix(stdout, "{\n  \"name\": \"t1\"") {
		t.Fatalf("register off a terminal: %d %q %q", code, stdout, stderr)
	}
	code, _, stderr := runInProcess(t, "n\n", true, vars, region, "namespace", "delete", "t1")
	if code != 1 || !strings.Contains(stderr, "[y/N] ") || !strings.Contains(stderr, "not confirmed: nothing was written") {
		t.Fatalf("declined: %d %q", code, stderr)
	}
	st := config.NewStore(tbl.DB, tbl.Name)
	id, err := st.ResolveNamespace(context.Background(), "t1")
	if err != nil {
		t.Fatalf("declined delete deleted: %v", err)
	}
	code, stdout, stderr := runInProcess(t, "y\n", true, vars, region, "namespace", "delete", "t1")
	if code != 0 || !strings.Contains(stdout, "│ t1   │ "+id+" │ deleted │") {
		t.Fatalf("confirmed: %d %q %q", code, stdout, stderr)
	}
	var nf *config.NamespaceNotFoundError
	if _, err := st.ResolveNamespace(context.Background(), "t1"); !errors.As(err, &nf) {
		t.Fatalf("after delete: %v", err)
	}
	// The audit trail records who: --principal, else zl:$USER.
	vars["USER"] = "ana"
	if code, _, stderr := runInProcess(t, "", false, vars, region, "namespace", "recover", "t1"); code != 0 {
		t.Fatalf("recover: %q", stderr)
	}
	ctl := control.New(tbl.DB, tbl.Name, control.Options{})
	evs, err := ctl.AuditEvents(context.Background(), id, control.SystemTrail)
	// (Every run reads one fixed instant, so the trail's order is the
	// event ids' random part: compare who did what.)
	who := map[string]string{}
	for _, ev := range evs {
		who[ev.Action] = ev.Principal
	}
	if err != nil || len(evs) != 3 || who["namespace_registered"] != "zl:tester" || who["namespace_deleted"] != "zl:tester" || who["namespace_recovered"] != "zl:ana" {
		t.Fatalf("audit trail %+v (%v)", evs, err)
	}
}
