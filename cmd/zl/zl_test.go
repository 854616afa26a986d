package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/cli"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// testNow is the clock of every zl run in the scripts (ZL_TEST_NOW): a
// leap day a minute before midnight, so that no golden output depends on
// today's date.
const testNow = "2028-02-29T23:59:00Z"

// TestMain makes this test binary zl too: testscript runs it under that
// name for every `zl` of a script, with the real command tree in process.
// The DynamoDB Local the tests share is stopped after the last one.
func TestMain(m *testing.M) {
	testscript.Main(harness{m}, map[string]func(){"zl": zlMain})
}

type harness struct{ m *testing.M }

func (h harness) Run() int { return ddbtest.Run(h.m) }

// zlMain is zl as a script runs it: the process's streams, terminals and
// signals (cli.MainEnv, as the shipped command), the clock of ZL_TEST_NOW.
func zlMain() {
	env := cli.ProcessEnv()
	if s := os.Getenv("ZL_TEST_NOW"); s != "" {
		now, err := time.Parse(time.RFC3339, s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ZL_TEST_NOW:", err)
			os.Exit(3)
		}
		env.Clock = func() time.Time { return now }
	}
	os.Exit(cli.MainEnv(env))
}

// TestScripts runs cmd/zl/testdata/script/*.txtar: zl driven as a user
// would, each script on a fresh, stamped table of DynamoDB Local, with
// golden outputs for every command and format.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Setup:               setupScript,
		RequireExplicitExec: true,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"code":       cmdCode,
			"nsid":       cmdNamespaceID,
			"snapshot":   cmdSnapshot,
			"redact":     cmdRedact,
			"seed-usage": cmdSeedUsage,
			"acquire":    cmdAcquire,
			"jsonget":    cmdJSONGet,
		},
		// ZL_UPDATE_GOLDEN=1 rewrites the goldens a cmp finds different.
		UpdateScripts: os.Getenv("ZL_UPDATE_GOLDEN") != "",
	})
}

// setupScript gives a script its own table, stamped as the project's
// tooling stamps a table it creates (config.Store.StampVersion) at the
// scripts' clock, and the environment that points zl at it.
func setupScript(env *testscript.Env) error {
	tb, ok := env.T().(testing.TB)
	if !ok {
		return errors.New("testscript's T is not a testing.TB")
	}
	tbl := ddbtest.NewBareTable(tb, ddbtest.WithStream())
	now, _ := time.Parse(time.RFC3339, testNow)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := config.NewStore(tbl.DB, tbl.Name, config.WithClock(func() time.Time { return now })).StampVersion(ctx, "ddbtest"); err != nil {
		return err
	}
	// The tables a script creates with `zl table create` are
	// $ZAEL_TABLE_MADE, -2 and -3.
	env.Defer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, made := range []string{"-made", "-made-2", "-made-3"} {
			_, _ = tbl.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tbl.Name + made)})
		}
	})
	for k, v := range map[string]string{
		"ZAEL_TABLE":                  tbl.Name,
		"ZAEL_TABLE_BASE":             tbl.Name,
		"ZAEL_TABLE_MADE":             tbl.Name + "-made",
		"AWS_ENDPOINT_URL_DYNAMODB":   tbl.Endpoint,
		"AWS_REGION":                  ddblocal.Region,
		"AWS_ACCESS_KEY_ID":           ddblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":       ddblocal.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"ZL_TEST_NOW":                 testNow,
		"USER":                        "tester",
		"GORACE":                      childGORACE(),
	} {
		env.Setenv(k, v)
	}
	return setupLocal(env)
}

// setupLocal gives a script what `zl local` needs: its own local home, a
// free port, the emulator the tests use; a stack the script left running
// is stopped by its pid.
func setupLocal(env *testscript.Env) error {
	emu := os.Getenv("ZL_DYNAMODB_LOCAL_DIR")
	if emu == "" {
		d, err := ddblocal.DefaultDir()
		if err != nil {
			return err
		}
		emu = d
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	home := filepath.Join(env.WorkDir, "local-home")
	env.Setenv("ZL_LOCAL_HOME", home)
	env.Setenv("ZL_LOCAL_PORT", strconv.Itoa(port))
	env.Setenv("ZL_DYNAMODB_LOCAL_DIR", emu)
	env.Defer(func() {
		b, err := os.ReadFile(filepath.Join(home, "state.json"))
		if err != nil {
			return
		}
		var st struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &st) == nil && st.PID > 1 {
			_ = syscall.Kill(st.PID, syscall.SIGTERM)
		}
	})
	return nil
}

// childGORACE is GORACE for the zl processes a test starts: under -race,
// a process sleeps a second at exit by default (atexit_sleep_ms) for
// goroutines still running to report races; zl's have all ended by then,
// and a hundred runs would sleep a hundred seconds.
func childGORACE() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

// cmdCode runs a command and checks its exit code: `code 2 zl limits
// plan`. Its stdout and stderr are then what stdout and stderr match.
func cmdCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: code N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("code: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("code: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdNamespaceID sets VAR to the id of namespace NAME (its live
// registration, else its latest): `nsid tenant-alpha NSID`. Ids are
// random, so goldens say $NSID and are compared with cmpenv.
func cmdNamespaceID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: nsid NAME VAR")
	}
	st := config.NewStore(ddblocal.DynamoDB(ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB")), ts.Getenv("ZAEL_TABLE"))
	all, err := st.ListNamespaces(context.Background())
	if err != nil {
		ts.Fatalf("nsid: %v", err)
	}
	id := ""
	for _, n := range all {
		if n.Name == args[0] && (id == "" || n.Status == config.NamespaceActive) {
			id = n.ID
		}
	}
	if id == "" {
		ts.Fatalf("nsid: no namespace %q", args[0])
	}
	ts.Setenv(args[1], id)
}

// cmdSnapshot writes every item of the script's table, one a line in key
// order, to FILE: `snapshot before` … `snapshot after` then `cmp before
// after` asserts that a command wrote nothing.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: snapshot FILE")
	}
	db := ddblocal.DynamoDB(ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	var lines []string
	var start map[string]types.AttributeValue
	for {
		out, err := db.Scan(context.Background(), &dynamodb.ScanInput{
			TableName: aws.String(ts.Getenv("ZAEL_TABLE")), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
		})
		if err != nil {
			ts.Fatalf("snapshot: %v", err)
		}
		for _, it := range out.Items {
			names := make([]string, 0, len(it))
			for k := range it {
				names = append(names, k)
			}
			sort.Strings(names)
			var b strings.Builder
			for _, k := range names {
				b.WriteString(k + "=" + ddbtest.Render(it[k]) + " ")
			}
			lines = append(lines, b.String())
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	sort.Strings(lines)
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		ts.Fatalf("snapshot: %v", err)
	}
}

// cmdRedact writes the last command's stdout (or stderr) to FILE with what
// differs between runs spelled as placeholders: each namespace id as its
// name, padded with dots or cut to the id's 11 characters, after @ (~ for a
// deleted one), so that tables keep their widths; the script's table as
// <table> padded with dots to its length, the endpoint as <endpoint>, each
// ULID (audit event ids, minted operation ids) as <ulid> padded to 26.
// `redact stdout got.json` then `cmp got.json want.json`.
func cmdRedact(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "stdout" && args[0] != "stderr") {
		ts.Fatalf("usage: redact stdout|stderr FILE")
	}
	text := ts.ReadFile(args[0])
	st := config.NewStore(ddblocal.DynamoDB(ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB")), ts.Getenv("ZAEL_TABLE"))
	all, err := st.ListNamespaces(context.Background())
	if err != nil {
		ts.Fatalf("redact: %v", err)
	}
	for _, n := range all {
		mark := "@"
		if n.Status == config.NamespaceDeleted {
			mark = "~"
		}
		text = strings.ReplaceAll(text, n.ID, (mark + n.Name + strings.Repeat(".", len(n.ID)))[:len(n.ID)])
	}
	text = strings.ReplaceAll(text, ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "<endpoint>")
	// Audit event and minted operation ids (ULIDs): their random part
	// differs between runs.
	text = ulidPattern.ReplaceAllString(text, "<ulid>"+strings.Repeat(".", 26-len("<ulid>")))
	if table := ts.Getenv("ZAEL_TABLE"); table != "" {
		text = strings.ReplaceAll(text, table, "<table>"+strings.Repeat(".", max(len(table)-len("<table>"), 0)))
	}
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o644); err != nil {
		ts.Fatalf("redact: %v", err)
	}
}

// ulidPattern matches a ULID: 26 characters of Crockford base32 whose
// first is 0-7, alone.
var ulidPattern = regexp.MustCompile(`\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b`)

// cmdAcquire acquires as a service would, so that buckets exist for
// fan-outs, resets and top-ups to reach: `acquire NAMESPACE ENTITY
// RESOURCE LIMIT=N...`, at the scripts' clock (ZL_TEST_NOW). With !, the
// acquire must be refused.
func cmdAcquire(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 {
		ts.Fatalf("usage: acquire NAMESPACE ENTITY RESOURCE LIMIT=N...")
	}
	now, err := time.Parse(time.RFC3339, ts.Getenv("ZL_TEST_NOW"))
	if err != nil {
		ts.Fatalf("acquire: ZL_TEST_NOW: %v", err)
	}
	ctx := context.Background()
	lim, err := limiter.Open(ctx, ddblocal.DynamoDB(ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB")), ts.Getenv("ZAEL_TABLE"), args[0],
		limiter.Options{Clock: func() time.Time { return now }, Rand: func(int) int { return 0 }})
	if err != nil {
		ts.Fatalf("acquire: %v", err)
	}
	want := limiter.Consume{}
	for _, kv := range args[3:] {
		name, n, _ := strings.Cut(kv, "=")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			ts.Fatalf("acquire: %q: %v", kv, err)
		}
		want[name] = v
	}
	_, err = lim.Acquire(ctx, args[1], args[2], want)
	switch {
	case neg && err == nil:
		ts.Fatalf("acquire %v was admitted", args)
	case !neg && err != nil:
		ts.Fatalf("acquire %v: %v", args, err)
	}
}

// cmdJSONGet sets VAR to the top-level field FIELD of the last command's
// stdout, a JSON object: `jsonget next_page PAGE`.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonget FIELD VAR")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &doc); err != nil {
		ts.Fatalf("jsonget: %v", err)
	}
	v, ok := doc[args[0]].(string)
	if !ok {
		ts.Fatalf("jsonget: no string field %q", args[0])
	}
	ts.Setenv(args[1], v)
}
