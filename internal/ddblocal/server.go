package ddblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// Credentials and region every local client uses. DynamoDB Local keeps data
// per access key and region, and accepts only letters and digits in the key
// id (docs/design.md §1), so all clients of one emulator must share these.
const (
	Region          = "us-east-1"
	AccessKeyID     = "AKIAZAELIMITERLOCAL"
	SecretAccessKey = "local"
)

// ErrPortInUse reports that the requested port already has a listener.
var ErrPortInUse = errors.New("ddblocal: port already in use")

// Options configure Start.
type Options struct {
	// Dir is the installation folder (see Install). Empty means DefaultDir.
	Dir string
	// Port is the loopback port; 0 picks a free one.
	Port int
	// LogFile receives the emulator's output; empty means a file in os.TempDir.
	LogFile string
	// Detach leaves the emulator running after this process exits (the CLI's
	// start command). Otherwise the kernel kills it when this process dies.
	Detach bool
	// ReadyTimeout bounds the wait for the first ListTables answer (default 60 s).
	ReadyTimeout time.Duration
}

// Server is a running emulator.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Port     int
	PID      int
	LogFile  string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// JVMArgs are the flags of docs/design.md §1: a small heap, C1 only and the serial
// collector, which start fastest and are plenty for tests.
var jvmArgs = []string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// Start runs DynamoDB Local in memory on a loopback port and waits until it
// answers ListTables. A port that already has a listener is refused with
// ErrPortInUse.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		o.Dir = d
	}
	if !Installed(o.Dir) {
		return nil, fmt.Errorf("%w in %s (run: go run ./scripts/ddblocal install)", ErrNotInstalled, o.Dir)
	}
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if portTaken(port) {
		return nil, fmt.Errorf("%w: 127.0.0.1:%d", ErrPortInUse, port)
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(os.TempDir(), fmt.Sprintf("dynamodb-local-%d.log", port))
	}
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: log: %w", err)
	}
	defer logf.Close()

	args := append([]string{}, jvmArgs...)
	args = append(args,
		"-Djava.library.path="+filepath.Join(o.Dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(o.Dir, jarName),
		"-inMemory", "-port", strconv.Itoa(port), "-disableTelemetry")
	// Not CommandContext: the emulator's life is managed by Stop, not by ctx.
	cmd := exec.Command(java, args...)
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !o.Detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ddblocal: start java: %w", err)
	}
	s := &Server{
		Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port),
		Port:     port, PID: cmd.Process.Pid, LogFile: o.LogFile,
		cmd: cmd, exited: make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()

	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls ListTables until it answers 200.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if Ping(ctx, s.Endpoint) == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("ddblocal: emulator exited during start-up; see %s: %s", s.LogFile, tail(s.LogFile))
		case <-ctx.Done():
			return fmt.Errorf("ddblocal: emulator not ready after %s; see %s: %w", timeout, s.LogFile, ctx.Err())
		case <-tick.C:
		}
	}
}

// Ping sends one unsigned-but-well-formed ListTables call to endpoint and
// returns nil when it answers 200.
func Ping(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte(`{"Limit":1}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+AccessKeyID+"/20260101/"+Region+
		"/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ddblocal: ListTables answered %s", resp.Status)
	}
	return nil
}

// Stop terminates the emulator (SIGTERM, then SIGKILL after 5 s) and waits
// for it to exit.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	_ = syscall.Kill(-s.PID, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	<-s.exited
	return nil
}

// StopPID stops an emulator started detached by another process, by the
// process group id that Start recorded. A pid that no longer exists is not an error.
func StopPID(pid int) error {
	if pid <= 1 {
		return fmt.Errorf("ddblocal: refusing to signal pid %d", pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("ddblocal: stop %d: %w", pid, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return nil
}

func javaBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("ddblocal: Java 17 or later is needed to run DynamoDB Local: %w", err)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("ddblocal: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portTaken(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
		return true
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// StartDefault installs DynamoDB Local into DefaultDir when it is not there
// yet and starts it on a free port: what `make run` and `make soak` do when
// no endpoint is given.
func StartDefault(ctx context.Context) (*Server, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	if err := Install(ctx, dir); err != nil {
		return nil, err
	}
	return Start(ctx, Options{Dir: dir})
}
