package emulator

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestStartRefusesPortInUse: a port with a listener is refused before any
// Java process starts.
func TestStartRefusesPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if !PortTaken(port) {
		t.Fatalf("port %d has a listener, PortTaken says free", port)
	}
	dir := t.TempDir()
	for _, name := range []string{jarName, markerName} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Start(context.Background(), Options{Dir: dir, Port: port, LogFile: filepath.Join(t.TempDir(), "log")})
	if !errors.Is(err, ErrPortInUse) {
		t.Errorf("Start on a port in use: %v, want ErrPortInUse", err)
	}
}

// TestInstalled: a folder is an installation only with its jar and the
// marker Install writes last.
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

// TestStopPIDRefusesInit: never signal pid 0 or 1.
func TestStopPIDRefusesInit(t *testing.T) {
	for _, pid := range []int{0, 1, -5} {
		if err := StopPID(pid, 0); err == nil {
			t.Errorf("StopPID(%d) signalled", pid)
		}
	}
}
