package limiter_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// cannedServeEnv, set in this test binary's environment, makes the
// process the canned endpoint on loopback HTTP (serveCanned) instead of
// running tests: BenchmarkTelemetryCost's over-http cases start it so
// that an acquire pays the transport a service's acquire pays (the SDK's
// HTTP client, a kept-alive TCP connection, its syscalls) while the
// server's work is another process's CPU, not the benchmark's.
const cannedServeEnv = "ZAEL_TEST_CANNED_SERVE"

func init() {
	if os.Getenv(cannedServeEnv) != "" {
		os.Exit(serveCanned(os.Stdin, os.Stdout, os.Stderr))
	}
}

// cannedCallsPath is the server's one path that is not DynamoDB's: a GET
// answers how many requests it has answered as DynamoDB.
const cannedCallsPath = "/zael-canned-calls"

// serveCanned answers every request on a loopback port as cannedDynamoDB
// does, prints the address on stdout and serves until stdin ends (the
// benchmark closes it, or exits).
func serveCanned(stdin io.Reader, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "canned server:", err)
		return 1
	}
	canned := newCannedDynamoDB()
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == cannedCallsPath {
				fmt.Fprint(w, canned.calls.Load())
				return
			}
			resp, err := canned.RoundTrip(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		}))
	}()
	fmt.Fprintln(stdout, ln.Addr())
	_, _ = io.Copy(io.Discard, stdin)
	return 0
}

// cannedServer is a serveCanned process this test binary started.
type cannedServer struct{ endpoint string }

// startCannedServer starts this test binary as a canned server; it stops
// when tb ends.
func startCannedServer(tb testing.TB) *cannedServer {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), cannedServeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the canned server printed no address: %v", err)
	}
	return &cannedServer{endpoint: "http://" + strings.TrimSpace(addr)}
}

// calls is how many requests the server has answered as DynamoDB, read
// over a connection of its own.
func (s *cannedServer) calls(tb testing.TB) int64 {
	tb.Helper()
	resp, err := http.Get(s.endpoint + cannedCallsPath)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		tb.Fatalf("the canned server's count %q: %v", b, err)
	}
	return n
}

// acquireWith is cannedAcquireWith over HTTP to s, by a client configured
// as every client of the project is (ddblocal.DynamoDB) with the SDK's
// own HTTP client.
func (s *cannedServer) acquireWith(tb testing.TB, o limiter.Options) func() error {
	tb.Helper()
	return acquireOn(tb, ddblocal.DynamoDB(s.endpoint), o)
}
