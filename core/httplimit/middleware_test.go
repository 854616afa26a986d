package httplimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/httplimit"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// start is the instant every test's clock reads: 12:00 UTC, so a daily
// quota resets in 12 hours whatever the day the tests run.
var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// env is one test's table, namespace, limiter and operator controls on one
// manual clock.
type env struct {
	t   *testing.T
	tbl *ddbtest.Table
	clk *clock.Manual
	ns  string
	lim *limiter.Limiter
	ops *control.Controls
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, tbl: ddbtest.NewTable(t), clk: clock.NewManual(start), ctx: context.Background()}
	var err error
	if e.ns, err = control.New(e.tbl.DB, e.tbl.Name, control.Options{Clock: e.clk.Now}).RegisterNamespace(e.ctx, "http", "test"); err != nil {
		t.Fatal(err)
	}
	if e.lim, err = limiter.Open(e.ctx, e.tbl.DB, e.tbl.Name, "http", limiter.Options{Clock: e.clk.Now}); err != nil {
		t.Fatal(err)
	}
	e.ops = control.New(e.tbl.DB, e.tbl.Name, control.Options{Clock: e.clk.Now, Caches: []control.Cache{e.lim}})
	return e
}

// limits sets the limits of resource.
func (e *env) limits(resource string, ls ...limit.Limit) {
	e.t.Helper()
	if _, err := e.ops.SetResourceLimits(e.ctx, e.ns, resource, ls, "test"); err != nil {
		e.t.Fatal(err)
	}
}

// middleware builds the middleware on e's limiter with o's clock and a
// logger into logs (when given).
func (e *env) middleware(o httplimit.Options, logs *bytes.Buffer) func(http.Handler) http.Handler {
	e.t.Helper()
	if o.Clock == nil {
		o.Clock = e.clk.Now
	}
	if logs != nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	mw, err := httplimit.New(e.lim, o)
	if err != nil {
		e.t.Fatal(err)
	}
	return mw
}

// remaining is what a limit has left for entity on resource: an acquire of
// 0 (checked, not debited).
func (e *env) remaining(entity, resource, name string) int64 {
	e.t.Helper()
	lease, err := e.lim.Acquire(e.ctx, entity, resource, limiter.Consume{name: 0})
	if err != nil {
		e.t.Fatal(err)
	}
	n, _ := lease.Remaining(name)
	if err := lease.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// serve starts a loopback server for h and returns a client call.
func serve(t *testing.T, h http.Handler) func(method, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a handler's panic is logged here
	srv.Start()
	t.Cleanup(srv.Close)
	return func(method, path string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
}

// fields is resp's header less Date (the server's clock).
func fields(resp *http.Response) http.Header {
	h := resp.Header.Clone()
	h.Del("Date")
	return h
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

func tenant(id string) http.Header { return http.Header{"X-Tenant": {id}} }

// TestAdmitThen429 pins every field of two admissions and the 429 after
// them, and the 429's problem body: rpm 2 a minute is the tightest limit of
// rpm 1 + tpm 100 per request; the third request finds rpm exhausted, 30.001 s
// from a token.
func TestAdmitThen429(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 2), limit.PerMinute("tpm", 1000))
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"),
		Consume: limiter.Consume{"rpm": 1, "tpm": 100}, LegacyHeaders: true,
	}, nil)
	call := serve(t, mw(http.HandlerFunc(ok)))
	unix := start.Unix()
	for i, want := range []http.Header{
		{
			"Content-Length": {"3"}, "Content-Type": {"text/plain; charset=utf-8"},
			"Ratelimit-Policy": {`"rpm";q=2;w=60`}, "Ratelimit": {`"rpm";r=1;t=30`},
			"X-Ratelimit-Limit": {"2"}, "X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {itoa(unix + 30)},
		},
		{
			"Content-Length": {"3"}, "Content-Type": {"text/plain; charset=utf-8"},
			"Ratelimit-Policy": {`"rpm";q=2;w=60`}, "Ratelimit": {`"rpm";r=0;t=60`},
			"X-Ratelimit-Limit": {"2"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {itoa(unix + 60)},
		},
	} {
		resp, body := call(http.MethodPost, "/v1/chat", tenant("acme"))
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("request %d: %s %q", i+1, resp.Status, body)
		}
		if got := fields(resp); !reflect.DeepEqual(got, want) {
			t.Errorf("request %d fields:\n got %v\nwant %v", i+1, got, want)
		}
	}
	resp, body := call(http.MethodPost, "/v1/chat", tenant("acme"))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request 3: %s %s", resp.Status, body)
	}
	want := http.Header{
		"Content-Length": {itoa(int64(len(body)))}, "Content-Type": {"application/problem+json"},
		"X-Content-Type-Options": {"nosniff"},
		"Retry-After":            {"31"},
		"Ratelimit-Policy":       {`"rpm";q=2;w=60, "tpm";q=1000;w=60`},
		"Ratelimit":              {`"rpm";r=0;t=31, "tpm";r=800;t=12`},
		"X-Ratelimit-Limit":      {"2"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {itoa(unix + 31)},
	}
	if got := fields(resp); !reflect.DeepEqual(got, want) {
		t.Errorf("429 fields:\n got %v\nwant %v", got, want)
	}
	var p httplimit.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	wantProblem := httplimit.Problem{
		Type:  httplimit.QuotaExceededType,
		Title: "Request cannot be satisfied as assigned quota has been exceeded", Status: 429,
		Detail:           "rpm exhausted; retry after 31 s",
		ViolatedPolicies: []string{"rpm"},
		Limits: []httplimit.ProblemLimit{
			{Name: "rpm", Limit: 2, WindowSeconds: ptr(60), Remaining: 0, Requested: 1, Exceeded: true, RetryAfterSeconds: json.RawMessage("31")},
			{Name: "tpm", Limit: 1000, WindowSeconds: ptr(60), Remaining: 800, Requested: 100},
		},
	}
	if !reflect.DeepEqual(p, wantProblem) {
		t.Errorf("problem:\n got %+v\nwant %+v\n%s", p, wantProblem, body)
	}
	// Another entity has its own buckets.
	if resp, _ := call(http.MethodPost, "/v1/chat", tenant("other")); resp.StatusCode != http.StatusOK {
		t.Errorf("another entity: %s", resp.Status)
	}
	// Past the retry-after, the entity is admitted again.
	e.clk.Advance(31 * time.Second)
	if resp, _ := call(http.MethodPost, "/v1/chat", tenant("acme")); resp.StatusCode != http.StatusOK {
		t.Errorf("after the retry-after: %s", resp.Status)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ptr(n int64) *int64 { return &n }

// problemOf decodes a problem body and checks the media type and status.
func problemOf(t *testing.T, resp *http.Response, body []byte, status int) httplimit.Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s, want %d: %s", resp.Status, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != httplimit.ProblemContentType {
		t.Errorf("Content-Type %q, want %s", ct, httplimit.ProblemContentType)
	}
	var p httplimit.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != status || p.Type != "about:blank" || p.Title != http.StatusText(status) || p.Detail == "" {
		t.Errorf("problem %+v, want about:blank, %d %s and a detail", p, status, http.StatusText(status))
	}
	if resp.Header.Get("Ratelimit") != "" || resp.Header.Get("Retry-After") != "" {
		t.Errorf("a %d carries rate-limit fields: %v", status, resp.Header)
	}
	return p
}

// TestDisabledResource: an operator disables the resource (core/control):
// 403 with a problem body; the handler never runs.
func TestDisabledResource(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10))
	if _, err := e.ops.SetAccess(e.ctx, e.ns, "", "chat", config.AccessDisabled, "test"); err != nil {
		t.Fatal(err)
	}
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpm": 1},
	}, nil)
	call := serve(t, mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })))
	resp, body := call(http.MethodGet, "/", tenant("acme"))
	problemOf(t, resp, body, http.StatusForbidden)
}

// closedEndpoint is the URL of a loopback port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// TestUnavailable: a limiter whose table cannot be reached (a closed
// port) answers as on_unavailable says: allow runs the handler with no
// RateLimit fields (a no-op lease), block is a 503 with a problem body.
func TestUnavailable(t *testing.T) {
	db := ddblocal.DynamoDB(closedEndpoint(t), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	for _, c := range []struct {
		on     config.OnUnavailable
		status int
	}{{config.OnUnavailableAllow, http.StatusOK}, {config.OnUnavailableBlock, http.StatusServiceUnavailable}} {
		t.Run(string(c.on), func(t *testing.T) {
			lim, err := limiter.New(db, "gone", "nsIdNsIdNsI", limiter.Options{OnUnavailable: c.on, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			mw, err := httplimit.New(lim, httplimit.Options{
				Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpm": 1},
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			call := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true; ok(w, r) })))
			resp, body := call(http.MethodGet, "/", tenant("acme"))
			if c.status == http.StatusOK {
				if resp.StatusCode != http.StatusOK || !ran || resp.Header.Get("Ratelimit") != "" || resp.Header.Get("Ratelimit-Policy") != "" {
					t.Errorf("allow: %s, handler ran %v, fields %v", resp.Status, ran, resp.Header)
				}
				return
			}
			problemOf(t, resp, body, http.StatusServiceUnavailable)
			if ran {
				t.Error("block: the handler ran")
			}
			if !strings.Contains(logs.String(), "on_unavailable is block") || strings.Contains(logs.String(), "acme") {
				t.Errorf("block: the log should say why and never name the entity:\n%s", logs.String())
			}
		})
	}
}

// TestUsageAdjustsTheLease: the handler reports the tokens it really used
// in a header; the lease is adjusted from the estimate and committed, so
// the bucket holds the real consumption.
func TestUsageAdjustsTheLease(t *testing.T) {
	e := newEnv(t)
	e.limits("llm", limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 10_000))
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("llm"),
		Consume: limiter.Consume{"rpm": 1, "tpm": 2000}, // the estimate
		Usage:   httplimit.UsageFromHeader("X-Tokens-Used", "tpm"),
	}, nil)
	used := "1200"
	call := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Tokens-Used", used)
		ok(w, r)
	})))
	resp, _ := call(http.MethodPost, "/", tenant("acme"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Ratelimit") != `"tpm";r=8000;t=12` {
		t.Fatalf("%s, RateLimit %q", resp.Status, resp.Header.Get("Ratelimit"))
	}
	if got := e.remaining("acme", "llm", "tpm"); got != 10_000-1200 {
		t.Errorf("tpm left %d after a request that used 1200, want %d", got, 10_000-1200)
	}
	// A usage above the estimate debits the rest; a bad header keeps the estimate.
	used = "2500"
	call(http.MethodPost, "/", tenant("acme"))
	used = "many"
	call(http.MethodPost, "/", tenant("acme"))
	if got, want := e.remaining("acme", "llm", "tpm"), int64(10_000-1200-2500-2000); got != want {
		t.Errorf("tpm left %d, want %d", got, want)
	}
	if got := e.remaining("acme", "llm", "rpm"); got != 7 {
		t.Errorf("rpm left %d, want 7", got)
	}
}

// TestRollback: a handler that panics or answers 5xx gets its admission
// back (the tokens are in the bucket again); the panic still reaches the
// server. A 4xx is an answer: it keeps the admission.
func TestRollback(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000))
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"),
		Consume: limiter.Consume{"rpm": 1, "tpm": 300},
	}, nil)
	errBoom := errors.New("boom")
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic(errBoom)
		case "/503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/404":
			http.NotFound(w, r)
		}
	}))

	func() {
		defer func() {
			if p := recover(); p != errBoom { //nolint:errorlint // the very value panicked
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		r := httptest.NewRequest(http.MethodGet, "/panic", nil)
		r.Header = tenant("acme")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	if rpm, tpm := e.remaining("acme", "chat", "rpm"), e.remaining("acme", "chat", "tpm"); rpm != 10 || tpm != 1000 {
		t.Errorf("after a panic: rpm %d, tpm %d left, want 10 and 1000 (rolled back)", rpm, tpm)
	}
	call := serve(t, h)
	resp, _ := call(http.MethodGet, "/503", tenant("acme"))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s, want the handler's 503", resp.Status)
	}
	if rpm, tpm := e.remaining("acme", "chat", "rpm"), e.remaining("acme", "chat", "tpm"); rpm != 10 || tpm != 1000 {
		t.Errorf("after a 503: rpm %d, tpm %d left, want 10 and 1000 (rolled back)", rpm, tpm)
	}
	resp, _ = call(http.MethodGet, "/404", tenant("acme"))
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("%s, want the handler's 404", resp.Status)
	}
	if rpm, tpm := e.remaining("acme", "chat", "rpm"), e.remaining("acme", "chat", "tpm"); rpm != 9 || tpm != 700 {
		t.Errorf("after a 404: rpm %d, tpm %d left, want 9 and 700 (kept)", rpm, tpm)
	}
}

// TestPanicReachesTheServer: through a real server, a handler's panic is
// net/http's to recover (the connection is dropped), after the rollback.
func TestPanicReachesTheServer(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10))
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpm": 1},
	}, nil)
	srv := httptest.NewUnstartedServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	var serverLog bytes.Buffer
	srv.Config.ErrorLog = log.New(&serverLog, "", 0)
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header = tenant("acme")
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("%s, want the connection dropped by the server's recovery", resp.Status)
	}
	srv.Close() // waits for the handler, its rollback and the server's log
	if !strings.Contains(serverLog.String(), "panic serving") || !strings.Contains(serverLog.String(), "boom") {
		t.Errorf("the server did not recover the panic:\n%s", serverLog.String())
	}
	if rpm := e.remaining("acme", "chat", "rpm"); rpm != 10 {
		t.Errorf("rpm %d left, want 10 (rolled back)", rpm)
	}
}

// TestClientIPEntities: every address of an IPv6 /64 shares one bucket;
// behind a trusted proxy the client is read from X-Forwarded-For, and a
// spoofed leftmost address changes nothing.
func TestClientIPEntities(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 1))
	entity, err := httplimit.EntityFromClientIP(httplimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.middleware(httplimit.Options{Entity: entity, Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpm": 1}}, nil)(http.HandlerFunc(ok))
	status := func(remote, xff string) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, c := range []struct {
		remote, xff string
		want        int
	}{
		{"[2001:db8:1:2::5]:4000", "", 200},
		{"[2001:db8:1:2:aaaa::9]:4001", "", 429}, // the same /64
		{"[2001:db8:1:3::5]:4000", "", 200},      // the next /64
		{"10.0.0.7:80", "198.51.100.1", 200},
		{"10.0.0.7:80", "6.6.6.6, 198.51.100.1", 429},         // spoofed leftmost: the same client
		{"203.0.113.9:80", "198.51.100.2", 200},               // untrusted peer: the peer is the client
		{"203.0.113.9:80", "198.51.100.3", 429},               // ... whatever it forwards
		{"10.0.0.7:80", "garbage", 400},                       // unreadable: no entity
		{"[2001:db8:1:2::ffff]:1", "198.51.100.9", 429},       // untrusted IPv6 peer, the first /64 again
		{"10.0.0.8:80", "10.0.0.9, 2001:db8:1:3:1::1", 429},   // through two proxies: the second /64
		{"10.0.0.8:80", "2001:db8:1:4::1, 10.0.0.9", 200},     // and a new /64
		{"10.0.0.8:80", "::ffff:198.51.100.1, 10.0.0.9", 429}, // IPv4-mapped: the IPv4 client
	} {
		if got := status(c.remote, c.xff); got != c.want {
			t.Errorf("request %d from %s (X-Forwarded-For %q): %d, want %d", i+1, c.remote, c.xff, got, c.want)
		}
	}
}

// TestNoEntity: a request with no entity (or one the table refuses as an
// entity id) is 400 with a problem body by default, or what OnNoEntity
// answers; nothing is acquired.
func TestNoEntity(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10))
	o := httplimit.Options{Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpm": 1}}
	call := serve(t, e.middleware(o, nil)(http.HandlerFunc(ok)))
	for _, h := range []http.Header{{}, tenant("a#b"), tenant(strings.Repeat("x", 300))} {
		resp, body := call(http.MethodGet, "/", h)
		problemOf(t, resp, body, http.StatusBadRequest)
	}
	o.OnNoEntity = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	call = serve(t, e.middleware(o, nil)(http.HandlerFunc(ok)))
	resp, _ := call(http.MethodGet, "/", http.Header{})
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("OnNoEntity: %s %v", resp.Status, resp.Header)
	}
}

// TestBadConfiguration: a consumption the pair does not configure is a
// configuration error on the server's side (docs/decisions.md P58): 500
// with a problem body that names the limit, logged at error level with
// what to fix — the limits named, the level the pair's limits come from
// and what that level gives — without the entity id; a ConsumeFunc's
// error is the client's: 400.
func TestBadConfiguration(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10))
	var logs bytes.Buffer
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"),
		ConsumeFunc: func(r *http.Request) (limiter.Consume, error) {
			if r.URL.Query().Get("n") == "bad" {
				return nil, errors.New("no estimate")
			}
			return limiter.Consume{"rpd": 1}, nil
		},
	}, &logs)
	call := serve(t, mw(http.HandlerFunc(ok)))
	resp, body := call(http.MethodGet, "/", tenant("acme-corp"))
	if p := problemOf(t, resp, body, http.StatusInternalServerError); !strings.Contains(p.Detail, "do not include rpd") {
		t.Errorf("detail %q does not name the limit the caller lacks", p.Detail)
	}
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "acme-corp") {
			t.Errorf("an error line names the entity: %s", line)
		}
	}
	for _, want := range []string{"level=ERROR", "limits=rpd", "limits_from=resource", "configured=rpm"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the 500 is not logged with %s:\n%s", want, logs.String())
		}
	}
	resp, body = call(http.MethodGet, "/?n=bad", tenant("acme-corp"))
	problemOf(t, resp, body, http.StatusBadRequest)
}

// TestEntityLimitsThatDropALimit: an entity's own limits replace its
// resource's (first level wins); a service whose cost names a limit they
// leave out gets, for that entity only, the 500 that says so — the log
// naming the entity level and what it gives — while other entities go on
// (docs/design.md §7, §17).
func TestEntityLimitsThatDropALimit(t *testing.T) {
	e := newEnv(t)
	e.limits("chat", limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000))
	if _, err := e.ops.SetEntityLimits(e.ctx, e.ns, "frank", "chat", []limit.Limit{limit.PerMinute("rpm", 100)}, "ops"); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"),
		Consume: limiter.Consume{"rpm": 1, "tpm": 100},
	}, &logs)
	call := serve(t, mw(http.HandlerFunc(ok)))
	resp, body := call(http.MethodGet, "/", tenant("frank"))
	if p := problemOf(t, resp, body, http.StatusInternalServerError); !strings.Contains(p.Detail, "do not include tpm") {
		t.Errorf("detail %q", p.Detail)
	}
	for _, want := range []string{"limits=tpm", "limits_from=entity", "configured=rpm"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
	if resp, _ := call(http.MethodGet, "/", tenant("acme-corp")); resp.StatusCode != http.StatusOK {
		t.Errorf("another entity: %s", resp.Status)
	}
}

// TestPatternResource: through a ServeMux the resource is named after the
// route's pattern; wrapping the mux instead (no pattern yet) is a 500.
func TestPatternResource(t *testing.T) {
	e := newEnv(t)
	e.limits("GET/v1/items/_id", limit.PerMinute("rpm", 1))
	var logs bytes.Buffer
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.PatternResource(), Consume: limiter.Consume{"rpm": 1},
	}, &logs)
	mux := http.NewServeMux()
	mux.Handle("GET /v1/items/{id}", mw(http.HandlerFunc(ok)))
	call := serve(t, mux)
	for i, want := range []int{200, 429} {
		if resp, _ := call(http.MethodGet, "/v1/items/"+itoa(int64(i)), tenant("acme")); resp.StatusCode != want {
			t.Errorf("request %d: %s, want %d", i+1, resp.Status, want)
		}
	}
	outer := http.NewServeMux()
	outer.HandleFunc("GET /v1/items/{id}", ok)
	call = serve(t, mw(outer))
	resp, body := call(http.MethodGet, "/v1/items/1", tenant("acme"))
	problemOf(t, resp, body, http.StatusInternalServerError)
	if !strings.Contains(logs.String(), "wrap the route's handler") {
		t.Errorf("the 500 does not say how to fix it:\n%s", logs.String())
	}
}

// TestCalendarQuotaFields: a daily quota's window is its reset period and
// t the time to its next reset, read through the limiter's config cache;
// with the clock at noon UTC, 12 hours.
func TestCalendarQuotaFields(t *testing.T) {
	e := newEnv(t)
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	e.limits("chat", limit.Quota("rpd", 2, daily, ""))
	mw := e.middleware(httplimit.Options{
		Entity: httplimit.EntityFromHeader("X-Tenant"), Resource: httplimit.FixedResource("chat"), Consume: limiter.Consume{"rpd": 1},
	}, nil)
	call := serve(t, mw(http.HandlerFunc(ok)))
	resp, _ := call(http.MethodGet, "/", tenant("acme"))
	if got := [2]string{resp.Header.Get("Ratelimit-Policy"), resp.Header.Get("Ratelimit")}; got != [2]string{`"rpd";q=2;w=86400`, `"rpd";r=1;t=43200`} {
		t.Errorf("admitted: %q", got)
	}
	call(http.MethodGet, "/", tenant("acme"))
	resp, _ = call(http.MethodGet, "/", tenant("acme"))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "43200" ||
		resp.Header.Get("Ratelimit") != `"rpd";r=0;t=43200` || resp.Header.Get("Ratelimit-Policy") != `"rpd";q=2;w=86400` {
		t.Errorf("exhausted: %s %v", resp.Status, resp.Header)
	}
}

// TestOptions: New refuses options it cannot work with, with an
// *OptionsError, and keeps its own copy of Consume.
func TestOptions(t *testing.T) {
	e := newEnv(t)
	entity, resource := httplimit.EntityFromHeader("X-Tenant"), httplimit.FixedResource("chat")
	for name, o := range map[string]httplimit.Options{
		"no entity":     {Resource: resource, Consume: limiter.Consume{"rpm": 1}},
		"no resource":   {Entity: entity, Consume: limiter.Consume{"rpm": 1}},
		"no consume":    {Entity: entity, Resource: resource},
		"both consumes": {Entity: entity, Resource: resource, Consume: limiter.Consume{"rpm": 1}, ConsumeFunc: func(*http.Request) (limiter.Consume, error) { return nil, nil }},
		"empty consume": {Entity: entity, Resource: resource, Consume: limiter.Consume{}},
		"bad name":      {Entity: entity, Resource: resource, Consume: limiter.Consume{"wcu": 1}},
		"negative":      {Entity: entity, Resource: resource, Consume: limiter.Consume{"rpm": -1}},
	} {
		_, err := httplimit.New(e.lim, o)
		var oe *httplimit.OptionsError
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *OptionsError", name, err)
		}
	}
	if _, err := httplimit.New(nil, httplimit.Options{Entity: entity, Resource: resource, Consume: limiter.Consume{"rpm": 1}}); err == nil {
		t.Error("a nil limiter was accepted")
	}
	e.limits("chat", limit.PerMinute("rpm", 1))
	consume := limiter.Consume{"rpm": 1}
	mw := e.middleware(httplimit.Options{Entity: entity, Resource: resource, Consume: consume}, nil)
	consume["rpm"] = 5 // after New: changes nothing
	call := serve(t, mw(http.HandlerFunc(ok)))
	if resp, _ := call(http.MethodGet, "/", tenant("acme")); resp.StatusCode != http.StatusOK {
		t.Errorf("%s: New did not keep its own Consume", resp.Status)
	}
}
