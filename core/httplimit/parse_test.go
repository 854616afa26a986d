package httplimit

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestResourceForPattern pins the resource names of route patterns.
func TestResourceForPattern(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{"GET /v1/chat/{id}", "GET/v1/chat/_id"},
		{"POST /v1/chat", "POST/v1/chat"},
		{"/v1/files/{path...}", "ANY/v1/files/_path"},
		{"/v1/items/{id:[0-9]+}", "ANY/v1/items/_id"}, // chi
		{"/v1/*", "ANY/v1/_"},                         // chi's catch-all
		{"GET /{$}", "GET/"},
		{"/", "ANY/"},
		{"GET\t /a", "GET/a"},
		{"POST api.example.com/v1/embed", "POST/api.example.com/v1/embed"},
		{"localhost:8080/x", "ANY/localhost_8080/x"},
		{"GET /a~b/%41", "GET/a_b/_41"},
		{"GET /open{", "GET/open_"},
	} {
		got, err := ResourceForPattern(c.pattern)
		if err != nil || got != c.want {
			t.Errorf("ResourceForPattern(%q) = %q, %v; want %q", c.pattern, got, err, c.want)
		}
	}
	_, err := ResourceForPattern("GET /" + strings.Repeat("a", schema.MaxNameLen))
	if !schema.IsValidationError(err) {
		t.Errorf("a pattern too long for a resource: %v, want a validation error", err)
	}
}

// TestPatternResourceNames: the name comes from the request's pattern, "" for
// none or one the table refuses.
func TestPatternResourceNames(t *testing.T) {
	res := PatternResource()
	r := httptest.NewRequest(http.MethodGet, "/v1/chat/7", nil)
	if got := res(r); got != "" {
		t.Errorf("no pattern: %q, want \"\"", got)
	}
	mux := http.NewServeMux()
	var got string
	mux.HandleFunc("GET /v1/chat/{id}", func(_ http.ResponseWriter, r *http.Request) { got = res(r) })
	mux.ServeHTTP(httptest.NewRecorder(), r)
	if got != "GET/v1/chat/_id" {
		t.Errorf("ServeMux pattern: %q, want GET/v1/chat/_id", got)
	}
	r.Pattern = "GET /" + strings.Repeat("a", 100)
	for range 2 { // the second from the cache
		if got := res(r); got != "" {
			t.Errorf("a refused name: %q, want \"\"", got)
		}
	}
}

// TestParseUsage pins the usage counts a response header may carry.
func TestParseUsage(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1200", 1200, true}, {" 42\t", 42, true}, {"007", 7, true},
		{"999999999999999999", 999_999_999_999_999_999, true},
		{"1000000000000000000", 0, false}, // 19 digits
		{"", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"1.5", 0, false}, {"1e3", 0, false},
		{"12 3", 0, false}, {"0x10", 0, false}, {"١٢", 0, false},
	} {
		got, ok := parseUsage(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseUsage(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestUsageFromHeader reads the header, or the trailer of that name.
func TestUsageFromHeader(t *testing.T) {
	u := UsageFromHeader("x-tokens-used", "tpm")
	for _, c := range []struct {
		header http.Header
		want   int64
		ok     bool
	}{
		{http.Header{"X-Tokens-Used": {"1200"}}, 1200, true},
		{http.Header{http.TrailerPrefix + "X-Tokens-Used": {"77"}}, 77, true},
		{http.Header{"X-Tokens-Used": {"lots"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		used, ok := u(nil, Response{Header: c.header})
		if ok != c.ok || used["tpm"] != c.want {
			t.Errorf("%v: %v, %v; want tpm %d, %v", c.header, used, ok, c.want, c.ok)
		}
	}
}

// TestResponseWriter: the status and the bytes are noted; Unwrap,
// Flush, Hijack, Push and ReadFrom reach the server's writer.
func TestResponseWriter(t *testing.T) {
	early := &responseWriter{ResponseWriter: plainWriter{h: http.Header{}, w: io.Discard}}
	early.WriteHeader(http.StatusEarlyHints) // informational: not final
	if early.status != 0 {
		t.Fatalf("status %d after a 103, want 0", early.status)
	}
	early.WriteHeader(http.StatusSwitchingProtocols) // final
	if early.status != http.StatusSwitchingProtocols {
		t.Fatalf("status %d after a 101, want 101", early.status)
	}
	rec := httptest.NewRecorder()
	w := &responseWriter{ResponseWriter: rec}
	w.WriteHeader(http.StatusCreated)
	w.WriteHeader(http.StatusAccepted) // superfluous: ignored by the server, not noted
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := w.ReadFrom(strings.NewReader("defg")); n != 4 || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	w.Flush()
	if w.status != http.StatusCreated || w.written != 7 || rec.Body.String() != "abcdefg" || !rec.Flushed {
		t.Errorf("status %d, written %d, body %q, flushed %v", w.status, w.written, rec.Body.String(), rec.Flushed)
	}
	if http.NewResponseController(w).SetWriteDeadline(time.Time{}) == nil {
		t.Error("a recorder has no deadlines, yet the controller set one")
	}
	if w.Unwrap() != rec {
		t.Error("Unwrap is not the server's writer")
	}
	if _, _, err := w.Hijack(); !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("Hijack on a recorder: %v, want ErrNotSupported", err)
	}
	if err := w.Push("/x", nil); !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("Push on a recorder: %v, want ErrNotSupported", err)
	}
	w2 := &responseWriter{ResponseWriter: rec}
	if _, err := w2.Write(nil); err != nil || w2.status != http.StatusOK {
		t.Errorf("a write without a status: %d, %v; want 200", w2.status, err)
	}
	hj := &responseWriter{ResponseWriter: hijackable{rec}}
	if _, _, err := hj.Hijack(); err != nil || !hj.hijacked {
		t.Errorf("Hijack = %v, hijacked %v", err, hj.hijacked)
	}
}

// hijackable is a writer that hands over a (fake) connection.
type hijackable struct{ http.ResponseWriter }

func (hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, _ := net.Pipe()
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// FuzzClientAddr: the client address of any peer address and forwarded
// header lines is never a panic, is an address only when it parses, is
// never read past an untrusted hop, and is a valid entity id.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.5:80", "1.1.1.1, 198.51.100.1, 10.0.0.9", false)
	f.Add("10.0.0.5:80", `for=1.1.1.1, for="[2001:db8:cafe::17]:4711";proto=https`, true)
	f.Add("[2001:db8:ffff::1]:1", "2001:db8::1,garbage", false)
	f.Add("10.0.0.5:80", `for="\"`, true)
	f.Add("203.0.113.7:1", "", false)
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	f.Fuzz(func(t *testing.T, remote, header string, forwarded bool) {
		src := &ipSource{trusted: trusted, forwarded: forwarded}
		values := strings.Split(header, "\n")
		a, ok := src.clientAddr(remote, values)
		if !ok {
			return
		}
		if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
			t.Fatalf("clientAddr(%q, %q) = %v: not a plain address", remote, header, a)
		}
		peer, _ := parseNode(remote)
		if !src.isTrusted(peer) && a != peer {
			t.Fatalf("the header of an untrusted peer %v was read: %v", peer, a)
		}
		if err := schema.ValidateEntityID(ClientIPEntity(a)); err != nil {
			t.Fatalf("entity of %v: %v", a, err)
		}
	})
}

// FuzzForwardedFor: RFC 7239 parsing of any line never panics, and an
// element's for= value never holds a control character.
func FuzzForwardedFor(f *testing.F) {
	for _, s := range []string{`for=192.0.2.43, for="[2001:db8:cafe::17]:4711"`, `for="a\"b";by=x`, `;;,`, `for="`, `a=b=c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, v := range forwardedFor([]string{line}) {
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				t.Fatalf("forwardedFor(%q) gave %q", line, v)
			}
		}
	})
}

// FuzzParseUsage: a usage count parses exactly when it is 1 to 18 digits
// between optional spaces and tabs, and then to that number.
func FuzzParseUsage(f *testing.F) {
	for _, s := range []string{"0", "1200", " 42\t", "-1", "1e3", "999999999999999999", "1000000000000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseUsage(s)
		digits := strings.Trim(s, " \t")
		want := len(digits) >= 1 && len(digits) <= 18 && !strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
		if ok != want {
			t.Fatalf("parseUsage(%q) ok = %v, want %v", s, ok, want)
		}
		if ok {
			if n < 0 {
				t.Fatalf("parseUsage(%q) = %d", s, n)
			}
			if back, err := strconv.ParseInt(digits, 10, 64); err != nil || back != n {
				t.Fatalf("parseUsage(%q) = %d, strconv says %d, %v", s, n, back, err)
			}
		}
	})
}

// FuzzResourceForPattern: any pattern's name is a valid resource or a
// validation error, never a panic.
func FuzzResourceForPattern(f *testing.F) {
	for _, s := range []string{"GET /v1/chat/{id}", "/v1/{path...}", "/{$}", "{", "}{", "GET"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		name, err := ResourceForPattern(pattern)
		if err != nil {
			if !schema.IsValidationError(err) {
				t.Fatalf("ResourceForPattern(%q): %v, not a validation error", pattern, err)
			}
			return
		}
		if err := schema.ValidateResource(name); err != nil {
			t.Fatalf("ResourceForPattern(%q) = %q: %v", pattern, name, err)
		}
	})
}

// The io.Copy fallback of ReadFrom must not loop back into ReadFrom.
func TestReadFromWithoutReaderFrom(t *testing.T) {
	var buf bytes.Buffer
	w := &responseWriter{ResponseWriter: plainWriter{h: http.Header{}, w: &buf}}
	if n, err := w.ReadFrom(io.LimitReader(strings.NewReader("hello"), 5)); n != 5 || err != nil || buf.String() != "hello" {
		t.Errorf("ReadFrom = %d, %v, body %q", n, err, buf.String())
	}
}

// plainWriter is a ResponseWriter with no optional interface.
type plainWriter struct {
	h http.Header
	w io.Writer
}

func (p plainWriter) Header() http.Header         { return p.h }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(int)             {}
