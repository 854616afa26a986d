package customresource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
)

// receiver is CloudFormation's side: it records every PUT and answers with
// the next status of its script (200 when the script is spent).
type receiver struct {
	mu       sync.Mutex
	statuses []int
	puts     []put
	srv      *httptest.Server
}

type put struct {
	method, contentType string
	hasContentType      bool
	body                []byte
	resp                cfn.Response
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		p := put{method: req.Method, body: body}
		p.contentType = req.Header.Get("Content-Type")
		_, p.hasContentType = req.Header["Content-Type"]
		_ = json.Unmarshal(body, &p.resp)
		r.mu.Lock()
		r.puts = append(r.puts, p)
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []put {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]put(nil), r.puts...)
}

func fixture(t *testing.T, name, url string) cfn.Event {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev cfn.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ev.ResponseURL = url
	return ev
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var fast = customresource.Options{Backoff: time.Millisecond}

func opts(o customresource.Options) customresource.Options {
	if o.Logger == nil {
		o.Logger = quiet()
	}
	if o.Backoff == 0 {
		o.Backoff = fast.Backoff
	}
	return o
}

func TestSuccess(t *testing.T) {
	rc := newReceiver(t)
	ev := fixture(t, "create.json", rc.srv.URL+"/resp?X-Amz-Signature=x")
	h := func(_ context.Context, ev cfn.Event) (string, map[string]string, error) {
		return "tbl/ns/limits-provisioner", map[string]string{"Created": "1"}, nil
	}
	resp, err := customresource.Run(context.Background(), ev, h, opts(customresource.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	puts := rc.got()
	if len(puts) != 1 {
		t.Fatalf("%d PUTs", len(puts))
	}
	p := puts[0]
	if p.method != http.MethodPut || !p.hasContentType || p.contentType != "" {
		t.Fatalf("method %s content type %q (%v)", p.method, p.contentType, p.hasContentType)
	}
	want := cfn.Response{Status: cfn.StatusSuccess, RequestID: ev.RequestID, LogicalResourceID: "TenantLimits",
		StackID: ev.StackID, PhysicalResourceID: "tbl/ns/limits-provisioner", Data: map[string]any{"Created": "1"}}
	if p.resp.Status != want.Status || p.resp.RequestID != want.RequestID || p.resp.StackID != want.StackID ||
		p.resp.LogicalResourceID != want.LogicalResourceID || p.resp.PhysicalResourceID != want.PhysicalResourceID ||
		p.resp.Data["Created"] != "1" || resp.Status != cfn.StatusSuccess {
		t.Fatalf("response %+v", p.resp)
	}
}

func TestPanicBecomesFailed(t *testing.T) {
	rc := newReceiver(t)
	ev := fixture(t, "create.json", rc.srv.URL)
	var logs bytes.Buffer
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { panic("boom") }
	resp, err := customresource.Run(context.Background(), ev, h, opts(customresource.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	p := rc.got()[0].resp
	if p.Status != cfn.StatusFailed || p.Reason != "panic: boom" || p.PhysicalResourceID != customresource.FailedPhysicalID || resp.Status != cfn.StatusFailed {
		t.Fatalf("response %+v", p)
	}
	if !strings.Contains(logs.String(), "panicked") || !strings.Contains(logs.String(), "goroutine") {
		t.Fatalf("panic not logged with its stack: %s", logs.String())
	}
}

// A handler's error of megabytes (it repeats input) becomes a Reason that
// the response, the log line and the returned response all carry cut to
// MaxBody bytes, marked.
func TestLongErrorIsCut(t *testing.T) {
	rc := newReceiver(t)
	ev := fixture(t, "create.json", rc.srv.URL)
	var logs bytes.Buffer
	long := strings.Repeat("bad value ", 500_000)
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { return "", nil, errors.New(long) }
	resp, err := customresource.Run(context.Background(), ev, h, opts(customresource.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Reason) > customresource.MaxBody+50 || !strings.HasPrefix(resp.Reason, "bad value bad value") || !strings.Contains(resp.Reason, "…[cut") {
		t.Fatalf("returned reason: %d bytes, %.100q", len(resp.Reason), resp.Reason)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) > 2*customresource.MaxBody {
			t.Fatalf("a log line of %d bytes", len(line))
		}
	}
	if p := rc.got()[0].resp; p.Status != cfn.StatusFailed {
		t.Fatalf("response %+v", p)
	}
}

// The physical id: the handler's; else the incoming one; else, on failure,
// "failed", on success the logical id (outside Lambda).
func TestPhysicalIDFallback(t *testing.T) {
	rc := newReceiver(t)
	cases := []struct {
		file, handlerID string
		err             error
		want            string
	}{
		{"update.json", "", nil, "limits/Ab3dEf6hIjk/limits-provisioner"},
		{"update.json", "", errors.New("refused"), "limits/Ab3dEf6hIjk/limits-provisioner"},
		{"create.json", "", errors.New("refused"), customresource.FailedPhysicalID},
		{"create.json", "t/n/limits-provisioner", errors.New("wrote, then failed"), "t/n/limits-provisioner"},
		{"create.json", "", nil, "TenantLimits"},
	}
	for _, c := range cases {
		ev := fixture(t, c.file, rc.srv.URL)
		h := func(context.Context, cfn.Event) (string, map[string]string, error) { return c.handlerID, nil, c.err }
		resp, err := customresource.Run(context.Background(), ev, h, opts(customresource.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.PhysicalResourceID != c.want {
			t.Errorf("%s %v: %q want %q", c.file, c.err, resp.PhysicalResourceID, c.want)
		}
	}
}

// A handler still running when the deadline less the margin comes is
// answered FAILED, and the answer arrives before the deadline itself.
func TestDeadlineAnswersFailedInTime(t *testing.T) {
	rc := newReceiver(t)
	ev := fixture(t, "create.json", rc.srv.URL)
	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// A handler that runs past the deadline, its context notwithstanding.
	// (One that returned at the margin would race the answer; this one
	// cannot.)
	release := make(chan struct{})
	defer close(release)
	h := func(context.Context, cfn.Event) (string, map[string]string, error) {
		<-release
		return "", nil, nil
	}
	resp, err := customresource.Run(ctx, ev, h, opts(customresource.Options{Margin: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if !time.Now().Before(deadline) {
		t.Fatal("answered after the deadline")
	}
	if resp.Status != cfn.StatusFailed || resp.Reason != customresource.ErrDeadline.Error() {
		t.Fatalf("response %+v", resp)
	}
	if got := rc.got(); len(got) != 1 || got[0].resp.Status != cfn.StatusFailed {
		t.Fatalf("puts %+v", got)
	}
}

// 5xx answers are retried; a send that never succeeds is logged and
// returned (Lambda retries the invocation); a 4xx is not retried.
func TestSendRetriesAndFailures(t *testing.T) {
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { return "id", nil, nil }

	rc := newReceiver(t, 503, 500)
	if _, err := customresource.Run(context.Background(), fixture(t, "create.json", rc.srv.URL), h, opts(customresource.Options{})); err != nil {
		t.Fatalf("retried send: %v", err)
	}
	if n := len(rc.got()); n != 3 {
		t.Fatalf("%d PUTs, want 3", n)
	}

	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rc = newReceiver(t, 500, 500, 500)
	_, err := customresource.Run(context.Background(), fixture(t, "create.json", rc.srv.URL), h, opts(customresource.Options{Attempts: 3, Logger: log}))
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(logs.String(), "response not sent") {
		t.Fatalf("failed send not logged: %s", logs.String())
	}

	rc = newReceiver(t, 403)
	if _, err := customresource.Run(context.Background(), fixture(t, "create.json", rc.srv.URL), h, opts(customresource.Options{})); err == nil {
		t.Fatal("a 403 was taken for success")
	}
	if n := len(rc.got()); n != 1 {
		t.Fatalf("a 403 was retried: %d PUTs", n)
	}

	// A network error (nothing listens) is retried, then returned.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/"
	l.Close()
	if _, err := customresource.Run(context.Background(), fixture(t, "create.json", url), h, opts(customresource.Options{Attempts: 2})); err == nil {
		t.Fatal("a refused connection was taken for success")
	}

	// Wrap fails the invocation when the send fails.
	rc = newReceiver(t, 500, 500, 500, 500)
	if err := customresource.Wrap(h, opts(customresource.Options{}))(context.Background(), fixture(t, "create.json", rc.srv.URL)); err == nil {
		t.Fatal("Wrap hid a failed send")
	}
}

// The body stays within 4,096 bytes however long the reason, and cuts it
// on a rune boundary.
func TestBodyFits(t *testing.T) {
	long := strings.Repeat("Entities.key-ü.Resources.gpt-4.Limits.tpm.Capacity: \"lots\" is not an integer; <&> ", 200)
	r := cfn.Response{Status: cfn.StatusFailed, RequestID: "r", LogicalResourceID: "L", StackID: "s", PhysicalResourceID: "p", Reason: long}
	b, err := customresource.Body(r)
	if err != nil {
		t.Fatal(err)
	}
	var back cfn.Response
	if len(b) > customresource.MaxBody || json.Unmarshal(b, &back) != nil {
		t.Fatalf("%d bytes", len(b))
	}
	if !strings.HasSuffix(back.Reason, "[truncated]") || !strings.HasPrefix(long, strings.TrimSuffix(back.Reason, " …[truncated]")) {
		t.Fatalf("reason %q", back.Reason)
	}
	short := r
	short.Reason = "fine"
	if b, _ := customresource.Body(short); !strings.Contains(string(b), `"Reason":"fine"`) {
		t.Fatalf("short reason changed: %s", b)
	}
}

// A cut Reason keeps the longest start of the message that fits with the
// marker, however much JSON escaping adds: problems full of `"` and `<`
// (`<` is six bytes escaped), control characters, U+2028.
func TestBodyCutKeepsTheStart(t *testing.T) {
	var problems strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&problems, "Entities.key-%04d.Resources.gpt-4.Limits.rpm.Capacity: \"<lots>\" is not an integer; ", i)
	}
	var controls strings.Builder
	for i := range 3000 {
		controls.WriteByte(byte(i%31 + 1))
	}
	for name, reason := range map[string]string{
		"quotes and angles": problems.String(),
		"control":           controls.String(),
		"line separators":   strings.Repeat("\u2028\u2029<&>", 2000),
	} {
		for _, data := range []map[string]any{nil, {"Status": strings.Repeat("x", 1000)}} {
			r := cfn.Response{Status: cfn.StatusFailed, RequestID: "r", LogicalResourceID: "L", StackID: "s", PhysicalResourceID: "p", Reason: reason, Data: data}
			b, err := customresource.Body(r)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var back cfn.Response
			if len(b) > customresource.MaxBody || json.Unmarshal(b, &back) != nil {
				t.Fatalf("%s: %d bytes", name, len(b))
			}
			kept, ok := strings.CutSuffix(back.Reason, " …[truncated]")
			if !ok || !strings.HasPrefix(kept, reason[:100]) || !strings.HasPrefix(reason, kept) {
				t.Fatalf("%s: reason %q", name, back.Reason)
			}
			if back.Data["Status"] != data["Status"] {
				t.Fatalf("%s: data %v", name, back.Data)
			}
			// The longest: one more rune does not fit.
			_, size := utf8.DecodeRuneInString(reason[len(kept):])
			r.Reason = reason[:len(kept)+size] + " …[truncated]"
			if longer, _ := json.Marshal(r); len(longer) <= customresource.MaxBody {
				t.Fatalf("%s: kept %d bytes, %d fit", name, len(kept), len(kept)+size)
			}
		}
	}
}

// FuzzBody: a body fits, is JSON, and its Reason is the reason (as JSON
// carries it: invalid UTF-8 becomes U+FFFD) or a prefix of it with the
// marker.
func FuzzBody(f *testing.F) {
	f.Add("reason", "key", "value")
	f.Add(strings.Repeat("\u00e9<", 3000), "k", strings.Repeat("v", 100))
	f.Add(strings.Repeat("\x01\"\\", 2000), "k", "v")
	f.Add(strings.Repeat("a\xffb\xe2\x82", 1500), "k", strings.Repeat("\x00", 700))
	f.Fuzz(func(t *testing.T, reason, k, v string) {
		r := cfn.Response{Status: cfn.StatusFailed, Reason: reason, Data: map[string]any{k: v}}
		b, err := customresource.Body(r)
		if err != nil {
			return // a Data that cannot fit is refused, never sent oversize
		}
		if len(b) > customresource.MaxBody || !json.Valid(b) {
			t.Fatalf("%d bytes, valid %v", len(b), json.Valid(b))
		}
		var back cfn.Response
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		var want string
		j, _ := json.Marshal(reason)
		_ = json.Unmarshal(j, &want)
		if back.Reason == want {
			return
		}
		kept, ok := strings.CutSuffix(back.Reason, " …[truncated]")
		if !ok || !strings.HasPrefix(want, kept) {
			t.Fatalf("reason %q is not a prefix of %q with the marker", back.Reason, want)
		}
	})
}

// transport is a client's network: it records each request and answers
// 200 without connecting anywhere.
type transport struct {
	mu   sync.Mutex
	urls []string
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tr.urls = append(tr.urls, req.URL.String())
	tr.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: http.NoBody, Request: req}, nil
}

func (tr *transport) requests() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.urls)
}

// secret stands for a pre-signed URL's signature: no log line or error may
// show it.
const secret = "5ecre7519na7ure0fthe9re5i9nedur1"

// Only https is sent to, and http to a loopback host for local runs; any
// other ResponseURL is refused with a *URLError before a request is made,
// and the refusal shows no query.
func TestResponseURLSchemes(t *testing.T) {
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { return "id", nil, nil }
	q := "?X-Amz-Signature=" + secret
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn%3Aaws%3Acloudformation/r" + q, true},
		{"HTTPS://example.com/r" + q, true},
		{"http://127.0.0.1:8080/r" + q, true},
		{"http://127.255.3.4/r" + q, true},
		{"http://[::1]:8080/r" + q, true},
		{"http://localhost/r" + q, true},
		{"http://LocalHost:9/r" + q, true},
		{"http://example.com/r" + q, false},
		{"http://10.0.0.1/r" + q, false},
		{"http://128.0.0.1/r" + q, false},
		{"http://[::2]/r" + q, false},
		{"http://localhost.example.com/r" + q, false},
		{"http://user:" + secret + "@example.com/r", false},
		{"file:///etc/passwd" + q, false},
		{"file://localhost/etc/passwd" + q, false},
		{"ftp://127.0.0.1/r" + q, false},
		{"ws://127.0.0.1/r" + q, false},
		{"https:///r" + q, false},
		{"https:opaque" + q, false},
		{"127.0.0.1:8080/r" + q, false},
		{"http://[::1/r" + q, false},
		{"http://user:" + secret + "@[::1/r" + q, false},
		{"http://user:" + secret + "@[::1", false},
		{"", false},
	} {
		tr := &transport{}
		var logs bytes.Buffer
		o := opts(customresource.Options{Client: &http.Client{Transport: tr}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		_, err := customresource.Run(context.Background(), fixture(t, "create.json", c.url), h, o)
		if c.ok {
			if err != nil || tr.requests() != 1 {
				t.Errorf("%s: %v after %d requests", c.url, err, tr.requests())
			}
			continue
		}
		var ue *customresource.URLError
		if !errors.As(err, &ue) || tr.requests() != 0 {
			t.Errorf("%s: %v after %d requests", c.url, err, tr.requests())
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("%s: the refusal shows the secret: %v\n%s", c.url, err, logs.String())
		}
		if !strings.Contains(logs.String(), "response not sent") {
			t.Errorf("%s: not logged: %s", c.url, logs.String())
		}
	}
}

// A redirect is never followed: a 3xx is a failed send, not retried, and
// the client the caller supplied is not changed.
func TestRedirectIsNotFollowed(t *testing.T) {
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { return "id", nil, nil }
	for _, status := range []int{301, 302, 303, 307, 308} {
		elsewhere := newReceiver(t)
		var mu sync.Mutex
		asked := 0
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked++
			mu.Unlock()
			http.Redirect(w, r, elsewhere.srv.URL+"/elsewhere", status)
		}))
		t.Cleanup(redirector.Close)
		client := &http.Client{Timeout: time.Minute}
		_, err := customresource.Run(context.Background(), fixture(t, "create.json", redirector.URL+"/r"), h, opts(customresource.Options{Client: client}))
		if err == nil {
			t.Errorf("%d: a redirect was taken for success", status)
		}
		mu.Lock()
		n := asked
		mu.Unlock()
		if n != 1 || len(elsewhere.got()) != 0 {
			t.Errorf("%d: %d PUTs to the URL, %d to the redirect's target", status, n, len(elsewhere.got()))
		}
		if client.CheckRedirect != nil || client.Timeout != time.Minute {
			t.Errorf("%d: the caller's client was changed", status)
		}
	}
}

// No failed send shows the URL's query, in its log lines or its error:
// not a refused connection (whose *url.Error embeds the URL), not an
// answer whose body quotes the request, not a redirect, not a refused
// scheme.
func TestSendFailuresHideTheQuery(t *testing.T) {
	h := func(context.Context, cfn.Event) (string, map[string]string, error) { return "id", nil, nil }
	// echo answers status with a body quoting the request, as S3's
	// SignatureDoesNotMatch does.
	echo := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			sig := r.URL.Query().Get("X-Amz-Signature")
			fmt.Fprintf(w, "<Error><Code>SignatureDoesNotMatch</Code><SignatureProvided>%s</SignatureProvided><CanonicalRequest>PUT %s</CanonicalRequest><Escaped>%s</Escaped></Error>",
				sig, r.URL.RequestURI(), url.QueryEscape(sig))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	q := "/r?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA" + secret[:16] + "%2F20261231%2Fus-east-1&X-Amz-Signature=" + secret + "#frag-" + secret
	for name, u := range map[string]string{
		"refused connection": closed + q,
		"403":                echo(403) + q,
		"500 retried":        echo(500) + q,
		"503 retried":        echo(503) + q,
		"redirect":           redirect.URL + q,
		"bad scheme":         "ftp://127.0.0.1" + q,
		"http elsewhere":     "http://example.com" + q,
		"file":               "file://" + q,
		"does not parse":     "http://[::1" + q,
	} {
		var logs bytes.Buffer
		o := opts(customresource.Options{Attempts: 2, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		_, err := customresource.Run(context.Background(), fixture(t, "create.json", u), h, o)
		if err == nil {
			t.Errorf("%s: sent", name)
			continue
		}
		for _, leak := range []string{secret, secret[:16], "X-Amz-Credential"} {
			if strings.Contains(err.Error(), leak) || strings.Contains(logs.String(), leak) {
				t.Errorf("%s: %q shown:\nerror: %v\nlogs: %s", name, leak, err, logs.String())
			}
		}
		if !strings.Contains(logs.String(), "response not sent") {
			t.Errorf("%s: not logged: %s", name, logs.String())
		}
	}
}

// A handler that announced its physical id and then failed (an error, a
// panic, the deadline margin) is answered FAILED with that id; an id it
// returns wins, and a successful handler that returns "" is answered with
// the announced one.
func TestAnnouncedPhysicalID(t *testing.T) {
	rc := newReceiver(t)
	const announced = "tbl/Ab3dEf6hIjk/limits-provisioner"
	announce := func(ctx context.Context) { customresource.SetPhysicalID(ctx, announced) }
	cases := []struct {
		name, file string
		h          customresource.Handler
		status     cfn.StatusType
		want       string
	}{
		{"error", "create.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			return "", nil, errors.New("the second write failed")
		}, cfn.StatusFailed, announced},
		{"error on an update", "update.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			return "", nil, errors.New("the second write failed")
		}, cfn.StatusFailed, announced},
		{"panic", "create.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			panic("after the first write")
		}, cfn.StatusFailed, announced},
		{"returned id wins", "create.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			return "other/id", nil, errors.New("failed")
		}, cfn.StatusFailed, "other/id"},
		{"announced again", "create.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			customresource.SetPhysicalID(ctx, "first")
			announce(ctx)
			return "", nil, errors.New("failed")
		}, cfn.StatusFailed, announced},
		{"success without an id", "update.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			return "", nil, nil
		}, cfn.StatusSuccess, announced},
		{"success with its id", "create.json", func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
			announce(ctx)
			return "returned", nil, nil
		}, cfn.StatusSuccess, "returned"},
	}
	for _, c := range cases {
		resp, err := customresource.Run(context.Background(), fixture(t, c.file, rc.srv.URL), c.h, opts(customresource.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != c.status || resp.PhysicalResourceID != c.want {
			t.Errorf("%s: %s %q, want %s %q", c.name, resp.Status, resp.PhysicalResourceID, c.status, c.want)
		}
		if got := rc.got(); got[len(got)-1].resp.PhysicalResourceID != c.want {
			t.Errorf("%s: sent %q", c.name, got[len(got)-1].resp.PhysicalResourceID)
		}
	}
	// Outside Run, SetPhysicalID does nothing.
	customresource.SetPhysicalID(context.Background(), "nowhere")
}

// A handler that announced its id and then hangs past the deadline margin
// is answered FAILED with that id.
func TestAnnouncedPhysicalIDAtTheDeadline(t *testing.T) {
	rc := newReceiver(t)
	const margin = time.Second
	// The handler's context ends half a second after the start; it has
	// announced long before.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(margin+500*time.Millisecond))
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	h := func(ctx context.Context, _ cfn.Event) (string, map[string]string, error) {
		customresource.SetPhysicalID(ctx, "tbl/Ab3dEf6hIjk/limits-provisioner")
		<-ctx.Done()
		<-release // past the margin, its context notwithstanding
		return "", nil, ctx.Err()
	}
	resp, err := customresource.Run(ctx, fixture(t, "create.json", rc.srv.URL), h, opts(customresource.Options{Margin: margin}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != cfn.StatusFailed || resp.Reason != customresource.ErrDeadline.Error() || resp.PhysicalResourceID != "tbl/Ab3dEf6hIjk/limits-provisioner" {
		t.Fatalf("%+v", resp)
	}
}

// Fail answers a request no handler could take FAILED, with the incoming
// physical id or `failed`, under the same sending rules.
func TestFail(t *testing.T) {
	rc := newReceiver(t)
	cause := errors.New("the event does not decode")
	for file, want := range map[string]string{"create.json": customresource.FailedPhysicalID, "update.json": "limits/Ab3dEf6hIjk/limits-provisioner"} {
		resp, err := customresource.Fail(context.Background(), fixture(t, file, rc.srv.URL), cause, opts(customresource.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		got := rc.got()
		p := got[len(got)-1].resp
		if resp.Status != cfn.StatusFailed || p.Status != cfn.StatusFailed || p.Reason != cause.Error() || p.PhysicalResourceID != want {
			t.Fatalf("%s: %+v", file, p)
		}
	}
	var ue *customresource.URLError
	if _, err := customresource.Fail(context.Background(), fixture(t, "create.json", "http://example.com/r"), cause, opts(customresource.Options{})); !errors.As(err, &ue) {
		t.Fatalf("sent to http://example.com: %v", err)
	}
}
