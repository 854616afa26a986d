// Package faultproxy is a fault-injection HTTP proxy for tests. It sits in
// front of DynamoDB Local, forwards requests unchanged, and on rules keyed by
// operation, probability, count and request content answers the way DynamoDB
// does under trouble: ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded, 500 InternalServerError, 503,
// TransactionCanceledException with TransactionConflict reasons, a request
// that hangs, extra latency, or any of these after the request has taken
// effect (a lost acknowledgement).
//
// Fault answers are byte-faithful JSON 1.0 errors, so an AWS SDK client
// pointed at the proxy returns the same typed errors, and makes the same retry
// decisions, as against DynamoDB. The proxy serves the DynamoDB Streams API
// too (same endpoint, X-Amz-Target DynamoDBStreams_20120810.*).
//
// A Proxy has no package-level state: probabilistic rules draw from the
// proxy's own seeded source, so a test that sends requests one at a time sees
// the same faults on every run.
package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// DefaultSeed seeds the source of probabilistic rules when no option picks one.
const DefaultSeed uint64 = 1

// RequestIDPrefix starts the x-amzn-RequestId of every answer the proxy makes
// up, which tells an injected fault from a real DynamoDB Local answer.
const RequestIDPrefix = "FAULTPROXY"

// OpStats counts the requests of one operation.
type OpStats struct {
	// Requests is every request the proxy received.
	Requests int
	// Forwarded is the requests sent on to DynamoDB Local: the calls that
	// reached the database (including AfterForward and Delay faults).
	Forwarded int
	// Injected is the requests a rule fired on.
	Injected int
	// Succeeded is the forwarded requests DynamoDB Local answered with a 2xx
	// status: the calls that took effect and consumed capacity, whatever
	// the client was finally told.
	Succeeded int
}

// Option configures New.
type Option func(*config)

type config struct {
	rng *rand.Rand
}

// WithSeed seeds the source probabilistic rules draw from.
func WithSeed(seed uint64) Option {
	return func(c *config) { c.rng = rand.New(rand.NewPCG(seed, seed)) }
}

// WithRand makes probabilistic rules draw from r, which the proxy then owns:
// it calls r only under its lock, and nothing else may use r.
func WithRand(r *rand.Rand) Option {
	return func(c *config) { c.rng = r }
}

// Proxy is a running fault-injection proxy on a loopback port.
type Proxy struct {
	url       string
	upstream  *url.URL
	listener  net.Listener
	srv       *http.Server
	transport *http.Transport
	rp        *httputil.ReverseProxy
	served    chan struct{} // closed when Serve returns
	done      chan struct{} // closed by Close: releases hung and delayed requests
	closeOnce sync.Once
	requestID atomic.Uint64

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // handlers running; Add only under mu while !closed
	rng      *rand.Rand
	rules    []*ruleState
	byID     map[RuleID]*ruleState
	nextID   RuleID
	stats    map[string]*OpStats
}

// New starts a proxy on 127.0.0.1 in front of upstream, a DynamoDB Local
// endpoint such as "http://127.0.0.1:8000". Close it when done.
func New(upstream string, opts ...Option) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", upstream, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream %q is not an http(s) URL with a host", upstream)
	}
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.rng == nil {
		WithSeed(DefaultSeed)(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		url:      "http://" + ln.Addr().String(),
		upstream: u,
		listener: ln,
		transport: &http.Transport{
			Proxy:               nil, // talk to the emulator directly, whatever the environment says
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			// Never add Accept-Encoding: gzip ourselves, so the answer's
			// bytes (and its x-amz-crc32) reach the client as sent.
			DisableCompression: true,
		},
		served: make(chan struct{}),
		done:   make(chan struct{}),
		rng:    cfg.rng,
		byID:   make(map[RuleID]*ruleState),
		stats:  make(map[string]*OpStats),
	}
	discard := log.New(io.Discard, "", 0)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.upstream)
			pr.Out.Host = pr.In.Host // the Host the client signed
		},
		Transport:      p.transport,
		ModifyResponse: p.countResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       discard,
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          discard,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// Start is New for tests: it fails tb on error and closes the proxy when the
// test ends.
func Start(tb testing.TB, upstream string, opts ...Option) *Proxy {
	tb.Helper()
	p, err := New(upstream, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// URL is the proxy's endpoint, e.g. "http://127.0.0.1:41234".
func (p *Proxy) URL() string { return p.url }

// DynamoDB returns a DynamoDB client for the emulator reached through the proxy.
func (p *Proxy) DynamoDB(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return ddblocal.DynamoDB(p.url, optFns...)
}

// Streams returns a DynamoDB Streams client for the emulator reached through
// the proxy.
func (p *Proxy) Streams(optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	return ddblocal.Streams(p.url, optFns...)
}

// Close stops the proxy: hung and delayed requests are released (their
// connections dropped), open connections are closed, and Close returns once
// every request handler has finished. Later requests are refused. Close is
// idempotent.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.done)
		_ = p.srv.Close()
		_ = p.listener.Close() // in case Serve has not started yet
		<-p.served
		p.inflight.Wait()
		p.transport.CloseIdleConnections()
	})
}

// Add installs a rule and returns its id. An invalid rule (zero Fault, Rate
// outside [0, 1], negative Count or After) panics.
func (p *Proxy) Add(r Rule) RuleID {
	if err := r.validate(); err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	rs := &ruleState{id: p.nextID, rule: r}
	p.rules = append(p.rules, rs)
	p.byID[rs.id] = rs
	return rs.id
}

// Remove uninstalls a rule; it reports whether the rule was installed. Fired
// still reports a removed rule's count until Reset.
func (p *Proxy) Remove(id RuleID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, rs := range p.rules {
		if rs.id == id {
			rs.removed = true
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Fired reports how many times a rule has fired.
func (p *Proxy) Fired(id RuleID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rs, ok := p.byID[id]; ok {
		return rs.fired
	}
	return 0
}

// Reset removes every rule and zeroes the counters: the proxy forwards
// everything again, as when new. The random source is not reseeded.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rs := range p.rules {
		rs.removed = true
	}
	p.rules = nil
	p.byID = make(map[RuleID]*ruleState)
	p.stats = make(map[string]*OpStats)
}

// ResetStats zeroes the per-operation counters and keeps the rules.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = make(map[string]*OpStats)
}

// Stats returns the counters of every operation seen, keyed by bare operation
// name ("PutItem", "GetRecords"; "" for requests without X-Amz-Target).
func (p *Proxy) Stats() map[string]OpStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]OpStats, len(p.stats))
	for op, s := range p.stats {
		out[op] = *s
	}
	return out
}

// Writes names the write calls forwarded to DynamoDB since the counters were
// last reset, as "PutItem 2, UpdateItem 1" by operation name ("" for none):
// what a test asserts when it means "this wrote nothing" or "this wrote
// exactly that".
func (p *Proxy) Writes() string {
	stats := p.Stats()
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(stats)) {
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
			if n := stats[op].Forwarded; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", op, n))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// StatsFor returns the counters of one operation.
func (p *Proxy) StatsFor(op string) OpStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.stats[op]; ok {
		return *s
	}
	return OpStats{}
}

// opStats returns op's counters; p.mu must be held.
func (p *Proxy) opStats(op string) *OpStats {
	s, ok := p.stats[op]
	if !ok {
		s = &OpStats{}
		p.stats[op] = s
	}
	return s
}

// serveHTTP is the proxy's handler.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	defer p.inflight.Done()

	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler) // the client went away mid-body
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	target := r.Header.Get("X-Amz-Target")
	op := operationOf(target)
	rule, fired := p.decide(op, target, body)
	if !fired {
		p.forward(w, r, op)
		return
	}
	p.inject(w, r, op, body, rule)
}

// decide counts the request and picks the rule that fires on it, if any.
func (p *Proxy) decide(op, target string, body []byte) (Rule, bool) {
	p.mu.Lock()
	p.opStats(op).Requests++
	candidates := make([]*ruleState, 0, len(p.rules))
	for _, rs := range p.rules {
		if rs.rule.matchesOp(op, target) {
			candidates = append(candidates, rs)
		}
	}
	p.mu.Unlock()

	// Match runs unlocked: it is the caller's code and may be slow.
	matched := candidates[:0]
	for _, rs := range candidates {
		if rs.rule.Match == nil || rs.rule.Match(op, body) {
			matched = append(matched, rs)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	var winner *ruleState
	for _, rs := range matched {
		if rs.removed {
			continue
		}
		rs.seen++
		if winner != nil || rs.seen <= rs.rule.After {
			continue
		}
		if rs.rule.Count > 0 && rs.fired >= rs.rule.Count {
			continue
		}
		if rate := rs.rule.Rate; rate > 0 && rate < 1 && p.rng.Float64() >= rate {
			continue
		}
		rs.fired++
		winner = rs
	}
	if winner == nil {
		return Rule{}, false
	}
	p.opStats(op).Injected++
	return winner.rule, true
}

// inject applies a fired rule's fault.
func (p *Proxy) inject(w http.ResponseWriter, r *http.Request, op string, body []byte, rule Rule) {
	f := rule.Fault
	var rec *recorder
	if f.forward {
		rec = newRecorder()
		p.forward(rec, r, op)
		if r.Context().Err() != nil {
			return // the client gave up while DynamoDB Local was answering
		}
	}
	if rule.OnFire != nil {
		rule.OnFire(op)
	}
	switch f.kind {
	case kindHang:
		p.wait(r.Context(), nil)
	case kindDelay:
		t := time.NewTimer(f.delay)
		defer t.Stop()
		if !p.wait(r.Context(), t.C) {
			return
		}
		if rec != nil {
			rec.replay(w)
		} else {
			p.forward(w, r, op)
		}
	default:
		status, code, payload := f.errorResponse(body)
		writeError(w, status, code, payload, p.newRequestID())
	}
}

// wait blocks until timer fires (true), the request's context ends (false),
// or the proxy closes, which drops the connection. A nil timer never fires.
func (p *Proxy) wait(ctx context.Context, timer <-chan time.Time) bool {
	select {
	case <-timer:
		return true
	case <-ctx.Done():
		return false
	case <-p.done:
		panic(http.ErrAbortHandler)
	}
}

// forward sends the request on to DynamoDB Local and copies the answer to w.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, op string) {
	p.mu.Lock()
	p.opStats(op).Forwarded++
	p.mu.Unlock()
	p.rp.ServeHTTP(w, r)
}

// countResponse counts DynamoDB Local's 2xx answers.
func (p *Proxy) countResponse(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		op := operationOf(resp.Request.Header.Get("X-Amz-Target"))
		p.mu.Lock()
		p.opStats(op).Succeeded++
		p.mu.Unlock()
	}
	return nil
}

// upstreamError answers a request DynamoDB Local could not be asked: nothing
// for a client that has gone, else 502 Bad Gateway.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	msg := strings.ReplaceAll(err.Error(), `"`, `'`)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("x-amzn-RequestId", p.newRequestID())
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, "faultproxy: upstream: "+msg)
}

// newRequestID makes a 52-character request id, the length DynamoDB uses.
func (p *Proxy) newRequestID() string {
	return fmt.Sprintf("%s%0*d", RequestIDPrefix, 52-len(RequestIDPrefix), p.requestID.Add(1))
}

// recorder buffers an answer from DynamoDB Local for AfterForward faults.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: make(http.Header)} }

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(b)
}

// Flush is a no-op: the whole answer is buffered.
func (rec *recorder) Flush() {}

// replay writes the recorded answer to w.
func (rec *recorder) replay(w http.ResponseWriter) {
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rec.body.Bytes())
}
