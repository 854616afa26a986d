package dynamodblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// ErrPortInUse reports that the requested port already has a listener.
var ErrPortInUse = errors.New("dynamodblocal: port already in use")

// DefaultMaxHeapMB is the Java heap a server gets unless Options says
// otherwise: plenty for tests and a developer's tables.
const DefaultMaxHeapMB = 256

// Options configure Start.
type Options struct {
	// Dir is the installation folder (see Install). Required.
	Dir string
	// Port is the port to listen on; 0 picks a free one.
	Port int
	// DataDir holds the database file, which persists across restarts;
	// empty runs in memory (-inMemory).
	DataDir string
	// SharedDB makes every client see the same tables whatever its
	// credentials and region (-sharedDb). Without it, DynamoDB Local keeps
	// one database per access key id and region.
	SharedDB bool
	// LogFile receives the emulator's output (truncated at start); empty
	// means a file in os.TempDir named after the port, which Stop removes
	// when it ends a running emulator; one that failed to start, or that
	// had exited by itself before Stop, keeps its log for reading.
	LogFile string
	// Detach leaves the emulator running after this process exits.
	// Otherwise the kernel kills it when this process dies.
	Detach bool
	// MaxHeapMB is the Java heap limit (default DefaultMaxHeapMB).
	MaxHeapMB int
	// ReadyTimeout bounds the wait for the first answer (default 60 s).
	ReadyTimeout time.Duration
	// QuickJIT stops the JVM's JIT at its first tier (C1 alone,
	// -XX:TieredStopAtLevel=1). The emulator then starts on about a third
	// less CPU and spends far less compiling while it serves, which an
	// emulator that lives for seconds or a minute gains; under minutes of
	// sustained load it serves each request more slowly on C1's code than
	// with both tiers (docs/design.md §1).
	QuickJIT bool
}

// Server is a running emulator started by this process.
type Server struct {
	// Endpoint is the loopback URL clients use: http://127.0.0.1:PORT.
	Endpoint string
	Port     int
	// PID is the Java process's, which leads its own process group.
	PID     int
	LogFile string
	cmd     *exec.Cmd
	exited  chan struct{}
	// removeLog: LogFile is the default one and the emulator started, so
	// Stop removes it when it ends the process.
	removeLog bool
}

// Start runs DynamoDB Local and waits until it answers ListTables. A port
// that already has a listener is refused with ErrPortInUse, before any
// Java process starts. The JVM flags are docs/design.md §1's: a small heap
// and the serial collector, with both JIT tiers unless QuickJIT.
func Start(ctx context.Context, o Options) (*Server, error) {
	if !Installed(o.Dir) {
		return nil, fmt.Errorf("%w in %q", ErrNotInstalled, o.Dir)
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if PortTaken(port) {
		return nil, fmt.Errorf("%w: %d", ErrPortInUse, port)
	}
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	defaultLog := o.LogFile == ""
	if defaultLog {
		o.LogFile = filepath.Join(os.TempDir(), fmt.Sprintf("dynamodb-local-%d.log", port))
	}
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dynamodblocal: log: %w", err)
	}
	defer logf.Close()
	if o.DataDir != "" {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("dynamodblocal: %w", err)
		}
	}
	args := o.javaArgs(port)
	// Not CommandContext: the emulator's life is managed by Stop, not by ctx.
	cmd := exec.Command(java, args...)
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !o.Detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dynamodblocal: start java: %w", err)
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
		_ = s.Stop() // the log stays: the error points at it
		return nil, err
	}
	s.removeLog = defaultLog
	return s, nil
}

// javaArgs is the java command line of an emulator on port.
func (o Options) javaArgs(port int) []string {
	heap := o.MaxHeapMB
	if heap <= 0 {
		heap = DefaultMaxHeapMB
	}
	args := []string{fmt.Sprintf("-Xmx%dm", heap), "-XX:+UseSerialGC"}
	if o.QuickJIT {
		args = append(args, "-XX:TieredStopAtLevel=1")
	}
	args = append(args, "-Djava.library.path="+filepath.Join(o.Dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(o.Dir, jarName),
		"-port", strconv.Itoa(port), "-disableTelemetry")
	if o.SharedDB {
		args = append(args, "-sharedDb")
	}
	if o.DataDir == "" {
		args = append(args, "-inMemory")
	} else {
		args = append(args, "-dbPath", o.DataDir)
	}
	return args
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
			return fmt.Errorf("dynamodblocal: emulator exited during start-up; see %s: %s", s.LogFile, tail(s.LogFile))
		case <-ctx.Done():
			return fmt.Errorf("dynamodblocal: emulator not ready after %s; see %s: %w", timeout, s.LogFile, ctx.Err())
		case <-tick.C:
		}
	}
}

// Exited is closed when the emulator has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop terminates the emulator's process group (SIGTERM, then SIGKILL after
// 5 s) and waits for it to exit. When it ended a running emulator whose log
// is the default one (Options.LogFile unset), it removes the log, so that
// test runs leave no file behind.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil // exited by itself (or stopped before): its log stays
	default:
	}
	_ = syscall.Kill(-s.PID, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.PID, syscall.SIGKILL)
		<-s.exited
	}
	if s.removeLog {
		if err := os.Remove(s.LogFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dynamodblocal: remove log: %w", err)
		}
	}
	return nil
}

// StopPID stops an emulator that another process started, by the pid Start
// gave it (its process group): SIGTERM, then SIGKILL after 5 s. A pid that
// no longer exists is not an error; pids 0 and 1 are refused.
func StopPID(pid int) error {
	if pid <= 1 {
		return fmt.Errorf("dynamodblocal: refusing to signal pid %d", pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("dynamodblocal: stop %d: %w", pid, err)
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

// Ping sends one unsigned-but-well-formed ListTables call to endpoint and
// returns nil when it answers 200.
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
		return fmt.Errorf("dynamodblocal: ListTables answered %s", resp.Status)
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, fmt.Errorf("dynamodblocal: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func javaBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("dynamodblocal: running DynamoDB Local needs Java 17 or later: %w", err)
	}
	return p, nil
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
