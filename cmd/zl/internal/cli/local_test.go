package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// TestLocalEnvFormats pins the lines of each --format (golden).
func TestLocalEnvFormats(t *testing.T) {
	lines := localEnvLines("http://127.0.0.1:8000", "zae-limiter")
	want := map[string]string{
		"sh": `export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:8000
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=local
export AWS_SECRET_ACCESS_KEY=local
export ZAEL_TABLE=zae-limiter
`,
		"fish": `set -gx AWS_ENDPOINT_URL_DYNAMODB http://127.0.0.1:8000
set -gx AWS_ENDPOINT_URL_DYNAMODB_STREAMS http://127.0.0.1:8000
set -gx AWS_REGION us-east-1
set -gx AWS_DEFAULT_REGION us-east-1
set -gx AWS_ACCESS_KEY_ID local
set -gx AWS_SECRET_ACCESS_KEY local
set -gx ZAEL_TABLE zae-limiter
`,
		"powershell": `$env:AWS_ENDPOINT_URL_DYNAMODB = "http://127.0.0.1:8000"
$env:AWS_ENDPOINT_URL_DYNAMODB_STREAMS = "http://127.0.0.1:8000"
$env:AWS_REGION = "us-east-1"
$env:AWS_DEFAULT_REGION = "us-east-1"
$env:AWS_ACCESS_KEY_ID = "local"
$env:AWS_SECRET_ACCESS_KEY = "local"
$env:ZAEL_TABLE = "zae-limiter"
`,
		"dotenv": `AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000
AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:8000
AWS_REGION=us-east-1
AWS_DEFAULT_REGION=us-east-1
AWS_ACCESS_KEY_ID=local
AWS_SECRET_ACCESS_KEY=local
ZAEL_TABLE=zae-limiter
`,
	}
	for format, w := range want {
		var b bytes.Buffer
		if err := formatEnv(&b, format, lines); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if b.String() != w {
			t.Errorf("%s:\n%s\nwant:\n%s", format, b.String(), w)
		}
	}
	if err := formatEnv(&bytes.Buffer{}, "csh", lines); !isUsage(err) {
		t.Errorf("csh: %v, want a usage error", err)
	}
	// With no stack running, env points at the default port and table.
	code, out, _ := run(t, "", false, map[string]string{"ZL_LOCAL_HOME": t.TempDir()}, "local", "env", "--format", "dotenv")
	if code != 0 || out != want["dotenv"] {
		t.Errorf("zl local env: %d %q", code, out)
	}
}

// TestLocalStatusView pins status's tables and what it says with no stack.
func TestLocalStatusView(t *testing.T) {
	started := time.Date(2028, 2, 29, 23, 59, 0, 0, time.UTC)
	behind := maxBacklog
	v := localStatusView{Running: true, Endpoint: "http://127.0.0.1:8000", Table: "zae-limiter", PID: 10, JavaPID: 11,
		Manifests: "/m", Started: &started, Items: map[string]int{"STATE": 2, "CONFIG": 1},
		Aggregator: &aggregatorProgress{Records: 12, Batches: 3, Reported: 1, Position: "000042", LastBatch: &started},
		Behind:     &behind, BehindCapped: true,
		LastManifest: &manifestPass{At: started, Files: []string{"a.yaml"}, Changes: 3, Error: "a.yaml: bad\nb.yaml: worse"}}
	var b bytes.Buffer
	if err := output.Render(&b, output.FormatTable, v); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"http://127.0.0.1:8000", "zl 10, DynamoDB Local 11", "in memory", "2028-02-29T23:59:00Z: 1 file(s), 3 change(s); problems: a.yaml: bad; b.yaml: worse", "CONFIG", "STATE",
		"12 record(s) in 3 batch(es), 1 failure(s) reported; last batch 2028-02-29T23:59:00Z, position 000042; 10000 record(s) or more behind"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("status table lacks %q:\n%s", w, b.String())
		}
	}
	if strings.Index(b.String(), "CONFIG") > strings.Index(b.String(), "STATE") {
		t.Errorf("item kinds not sorted:\n%s", b.String())
	}
	code, out, _ := run(t, "", false, map[string]string{"ZL_LOCAL_HOME": t.TempDir()}, "local", "status", "-o", "json")
	if code != 0 || strings.TrimSpace(out) != `{"running": false}` && strings.TrimSpace(out) != "{\n  \"running\": false\n}" {
		t.Errorf("status with no stack: %d %q", code, out)
	}
}

// lockedBuffer is a bytes.Buffer written by a running command and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// localStack is one `zl local up` running in process.
type localStack struct {
	cancel context.CancelFunc
	code   chan int
	stderr *lockedBuffer
}

func startLocal(t *testing.T, vars map[string]string, args ...string) *localStack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &localStack{cancel: cancel, code: make(chan int, 1), stderr: &lockedBuffer{}}
	env := Env{Stdout: &lockedBuffer{}, Stderr: s.stderr, Getenv: func(k string) string { return vars[k] }, Clock: time.Now}
	go func() { s.code <- Run(ctx, env, append([]string{"local", "up"}, args...)) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop interrupts the stack (Ctrl-C) and waits for it to exit 0.
func (s *localStack) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case code := <-s.code:
		if code != 0 {
			t.Errorf("zl local up exited %d: %s", code, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("zl local up did not stop: %s", s.stderr.String())
	}
}

// eventually polls cond every 50 ms until it holds or the deadline passes.
func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeManifest(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLocalUp runs the whole stack the way a developer does: `zl local up`
// on a data folder and a manifest folder, acquires from a client with
// other credentials and region (-sharedDb), snapshots from the in-process
// aggregator, a bad manifest that changes nothing, an edited one that
// takes effect, a second up refused, Ctrl-C that leaves no Java process,
// and a restart that finds the data.
func TestLocalUp(t *testing.T) {
	ctx := context.Background()
	emu := os.Getenv("ZL_DYNAMODB_LOCAL_DIR")
	if emu == "" {
		d, err := ddblocal.InstallDefault(ctx)
		if err != nil {
			t.Fatal(err)
		}
		emu = d
	}
	home, data, mdir := t.TempDir(), t.TempDir(), t.TempDir()
	vars := map[string]string{"ZL_LOCAL_HOME": home, "ZL_DYNAMODB_LOCAL_DIR": emu, "USER": "dev"}
	port := freeLocalPort(t)
	manifestPath := filepath.Join(mdir, "alpha.yaml")
	writeManifest(t, manifestPath, "namespace: tenant-alpha\nresources:\n  gpt-4:\n    limits:\n      rpm: {capacity: 5, refill_amount: 5, refill_period: 3600}\n")
	args := []string{"--port", strconv.Itoa(port), "--data", data, "--manifests", mdir}

	stack := startLocal(t, vars, args...)
	state := func() localState {
		st, _, _ := readState(home)
		return st
	}
	eventually(t, "stack ready with the manifest applied", 90*time.Second, func() bool {
		st := state()
		return st.Ready && st.LastManifest != nil
	})
	st := state()
	if st.LastManifest.Error != "" || st.LastManifest.Changes == 0 {
		t.Fatalf("first manifest pass: %+v", st.LastManifest)
	}
	javaPID := st.JavaPID

	// A client with other credentials and another region sees the table.
	db := dynamodb.NewFromConfig(aws.Config{Region: "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSOMEONEELSE", "secret", "")},
		func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(st.Endpoint)
			o.DisableValidateResponseChecksum = true
		})
	open := func() *limiter.Limiter {
		lim, err := limiter.Open(ctx, db, "zae-limiter", "tenant-alpha", limiter.Options{})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return lim
	}
	admitted := func(lim *limiter.Limiter, entity string, n int) int {
		ok := 0
		for range n {
			_, err := lim.Acquire(ctx, entity, "gpt-4", limiter.Consume{"rpm": 1})
			var rle *limiter.RateLimitExceeded
			switch {
			case err == nil:
				ok++
			case errors.As(err, &rle):
			default:
				t.Fatalf("acquire: %v", err)
			}
		}
		return ok
	}
	if got := admitted(open(), "user-1", 7); got != 5 {
		t.Errorf("capacity 5: %d of 7 admitted", got)
	}
	// user-0's bucket stays in use with 4 of 5 left, on the fast path.
	if got := admitted(open(), "user-0", 1); got != 1 {
		t.Errorf("capacity 5: %d of 1 admitted", got)
	}
	eventually(t, "usage snapshots from the aggregator", 15*time.Second, func() bool {
		k, err := itemKinds(ctx, db, "zae-limiter")
		return err == nil && k["USAGE"] > 0
	})
	eventually(t, "the aggregator's progress in the state", 15*time.Second, func() bool {
		g := state().Aggregator
		return g != nil && g.Records > 0 && g.Position != "" && g.Reported == 0
	})
	// Status counts the records behind the aggregator: none once it has
	// caught up.
	eventually(t, "status: the aggregator caught up", 15*time.Second, func() bool {
		code, out, _ := run(t, "", false, vars, "local", "status", "-o", "json")
		return code == 0 && strings.Contains(out, `"records_behind": 0`)
	})

	// A bad manifest prints every problem with its path, and changes nothing.
	before := state().LastManifest.At
	writeManifest(t, manifestPath, "namespace: tenant-alpha\nresources:\n  gpt-4:\n    limits:\n      rpm: {capacity: -1}\n      tpm: {capacity: -2}\n")
	eventually(t, "the bad manifest seen", 15*time.Second, func() bool {
		lm := state().LastManifest
		return lm != nil && lm.At.After(before) && lm.Error != ""
	})
	for _, w := range []string{"alpha.yaml", "resources.gpt-4.limits.rpm.capacity", "resources.gpt-4.limits.tpm.capacity"} {
		if e := state().LastManifest.Error; !strings.Contains(e, w) {
			t.Errorf("bad manifest problems lack %q: %s", w, e)
		}
	}
	if !strings.Contains(stack.stderr.String(), "resources.gpt-4.limits.rpm.capacity") {
		t.Errorf("the problems are not in the log: %s", stack.stderr.String())
	}
	if got := admitted(open(), "user-2", 6); got != 5 {
		t.Errorf("after a bad manifest, still capacity 5: %d of 6 admitted", got)
	}

	// The edited manifest is applied: a new pair gets the new limit, and a
	// bucket in use is brought in line before the pass ends (4 left clamped
	// to the new capacity 2; design §8 "Limits reach the buckets in use").
	before = state().LastManifest.At
	writeManifest(t, manifestPath, "namespace: tenant-alpha\nresources:\n  gpt-4:\n    limits:\n      rpm: {capacity: 2, refill_amount: 2, refill_period: 3600}\n")
	eventually(t, "the edited manifest applied", 15*time.Second, func() bool {
		lm := state().LastManifest
		return lm != nil && lm.At.After(before) && lm.Error == "" && lm.Changes > 0
	})
	if got := admitted(open(), "user-3", 4); got != 2 {
		t.Errorf("capacity 2: %d of 4 admitted", got)
	}
	if got := admitted(open(), "user-0", 4); got != 2 {
		t.Errorf("a bucket in use after capacity 5 → 2: %d of 4 admitted, want 2", got)
	}

	// A second up is refused while this one runs.
	code, _, errOut := run(t, "", false, vars, append([]string{"local", "up"}, args...)...)
	if code != ExitError || !strings.Contains(errOut, "already running") {
		t.Errorf("second up: %d %s", code, errOut)
	}
	// Another home on the same port: the port is in use.
	other := map[string]string{"ZL_LOCAL_HOME": t.TempDir(), "ZL_DYNAMODB_LOCAL_DIR": emu}
	code, _, errOut = run(t, "", false, other, "local", "up", "--port", strconv.Itoa(port), "--in-memory")
	if code != ExitError || !strings.Contains(errOut, "port "+strconv.Itoa(port)+" is in use") {
		t.Errorf("up on a port in use: %d %s", code, errOut)
	}

	// Ctrl-C stops everything: no Java process is left, no state.
	stack.stop(t)
	if err := syscall.Kill(javaPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("DynamoDB Local (pid %d) still there after Ctrl-C: %v", javaPID, err)
	}
	if _, err := os.Stat(statePath(home)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state left after Ctrl-C: %v", err)
	}

	// The aggregator's checkpoint is in the data folder.
	var saved streampoll.Checkpoint
	if b, err := os.ReadFile(filepath.Join(data, checkpointFile)); err != nil {
		t.Fatalf("no checkpoint saved: %v", err)
	} else if err := json.Unmarshal(b, &saved); err != nil || len(saved.Shards) == 0 {
		t.Fatalf("checkpoint %s: %v", b, err)
	}
	// The furthest position saved: AFTER_SEQUENCE_NUMBER when every
	// record up to it was done, AT_SEQUENCE_NUMBER when the stop came as
	// a batch failed from that record (its writes cut short), which then
	// waits for re-delivery (streampoll.ShardCheckpoint).
	var savedAt streampoll.ShardCheckpoint
	for _, c := range saved.Shards {
		if c.Sequence != "" && (savedAt.Sequence == "" || seqBefore(savedAt.Sequence, c.Sequence)) {
			savedAt = c
		}
	}
	if savedAt.Sequence == "" {
		t.Fatalf("the checkpoint has no position: %+v", saved)
	}

	// A restart on the same data finds the buckets, snapshots and limits.
	stack = startLocal(t, vars, args...)
	eventually(t, "restarted stack ready", 90*time.Second, func() bool {
		st := state()
		return st.Ready && st.LastManifest != nil
	})
	if lm := state().LastManifest; lm.Error != "" || lm.Changes != 0 {
		t.Errorf("restart: the manifest should be in place already: %+v", lm)
	}
	k, err := itemKinds(ctx, db, "zae-limiter")
	if err != nil {
		t.Fatal(err)
	}
	if k["USAGE"] == 0 || k["STATE"] == 0 {
		t.Errorf("restart lost data: %v", k)
	}
	if got := admitted(open(), "user-1", 1); got != 0 {
		t.Errorf("user-1's bucket was empty before the restart and admits %d now", got)
	}
	// The aggregator goes on from its checkpoint: the first record it
	// delivers after the restart is one written after the last it had
	// done before (or, from an AT_SEQUENCE_NUMBER position, the record
	// that waited), and the new pair's snapshot appears.
	if got := admitted(open(), "user-4", 1); got != 1 {
		t.Fatalf("user-4 after the restart: %d of 1 admitted", got)
	}
	eventually(t, "the aggregator delivers after the restart", 15*time.Second, func() bool {
		g := state().Aggregator
		return g != nil && g.First != ""
	})
	if g := state().Aggregator; !g.Resumed || !resumesAt(savedAt, g.First) {
		t.Errorf("after the restart the aggregator resumed=%v and first delivered %s; the checkpoint was %s %s (%+v)",
			g.Resumed, g.First, savedAt.Position, savedAt.Sequence, saved)
	}
	eventually(t, "user-4's snapshot", 15*time.Second, func() bool {
		n, err := usageItems(ctx, db, "zae-limiter", "user-4")
		return err == nil && n > 0
	})
	code, out, _ := run(t, "", false, vars, "local", "status", "-o", "json")
	if code != 0 || !strings.Contains(out, `"running": true`) || !strings.Contains(out, `"USAGE"`) {
		t.Errorf("status: %d %s", code, out)
	}
	stack.stop(t)
}

// resumesAt reports whether first may be the first record a poller
// resuming from c delivers: one after c's sequence number, or from an
// AT_SEQUENCE_NUMBER position that record itself.
func resumesAt(c streampoll.ShardCheckpoint, first string) bool {
	if c.Position == string(streamtypes.ShardIteratorTypeAtSequenceNumber) && first == c.Sequence {
		return true
	}
	return seqBefore(c.Sequence, first)
}

// seqBefore orders stream sequence numbers: decimal strings whose length
// varies.
func seqBefore(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// usageItems counts the usage snapshots of entity in table.
func usageItems(ctx context.Context, db *dynamodb.Client, table, entity string) (int, error) {
	n := 0
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table),
		FilterExpression:          aws.String("begins_with(#sk, :usage) AND #e = :e"),
		ExpressionAttributeNames:  map[string]string{"#sk": schema.AttrSK, "#e": schema.AttrEntityID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":usage": &types.AttributeValueMemberS{Value: "#USAGE"}, ":e": &types.AttributeValueMemberS{Value: entity}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += len(page.Items)
	}
	return n, nil
}
