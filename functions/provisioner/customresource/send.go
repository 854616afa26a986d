package customresource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"
)

// MaxBody is the most CloudFormation accepts as a response body.
const MaxBody = 4096

// truncated marks a shortened reason.
const truncated = " …[truncated]"

// Body is the JSON response body, at most MaxBody bytes. A Reason too
// long is cut to its longest prefix (on a rune boundary) that fits with
// the " …[truncated]" marker, however much JSON escaping adds to it; if
// even the marker alone does not fit, Data is replaced by
// {"Truncated": "true"} and the Reason cut again.
func Body(r cfn.Response) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil || len(b) <= MaxBody {
		return b, err
	}
	if b, ok := cutReason(r); ok {
		return b, nil
	}
	r.Data = map[string]any{"Truncated": "true"}
	if b, err = json.Marshal(r); err == nil && len(b) <= MaxBody {
		return b, nil
	}
	if b, ok := cutReason(r); ok {
		return b, nil
	}
	return nil, fmt.Errorf("customresource: response of %d bytes does not fit %d", len(b), MaxBody)
}

// cutReason is r's body with the longest prefix of its Reason that fits,
// marked; ok is false when there is no Reason to cut, or when even the
// marker alone does not fit. The body's size grows with the prefix's
// length, so a binary search over the prefix's rune boundaries finds it
// whatever the escaping (`<` is six bytes escaped, a control character
// six); each probe encodes only the Reason, the rest of the body being
// the same.
func cutReason(r cfn.Response) (body []byte, ok bool) {
	reason := r.Reason
	if reason == "" {
		return nil, false
	}
	r.Reason = truncated
	b, err := json.Marshal(r)
	if err != nil || len(b) > MaxBody {
		return nil, false
	}
	marker, _ := json.Marshal(truncated)
	room := MaxBody - (len(b) - len(marker)) // for the encoded Reason
	fits := func(n int) bool {
		enc, _ := json.Marshal(reason[:n] + truncated)
		return len(enc) <= room
	}
	// No prefix longer than MaxBody bytes fits.
	var cuts []int
	for n := 1; n <= len(reason) && n <= MaxBody; n++ {
		if n == len(reason) || utf8.RuneStart(reason[n]) {
			cuts = append(cuts, n)
		}
	}
	// The first cut that does not fit; the one before it is the longest
	// that does (none: the bare marker).
	keep := 0
	if i := sort.Search(len(cuts), func(i int) bool { return !fits(cuts[i]) }); i > 0 {
		keep = cuts[i-1]
	}
	r.Reason = reason[:keep] + truncated
	if b, err = json.Marshal(r); err != nil || len(b) > MaxBody {
		return nil, false // cannot happen: the Reason is encoded alone as in the body
	}
	return b, true
}

// URLError reports a ResponseURL that send refuses before any request:
// missing, unparseable, or neither https nor http to a loopback host.
type URLError struct {
	// URL is the address as far as its path: never its query, which holds
	// the pre-signed URL's signature.
	URL    string
	Reason string
}

// Error implements error.
func (e *URLError) Error() string {
	return fmt.Sprintf("customresource: ResponseURL %q refused: %s", e.URL, e.Reason)
}

// checkURL admits https, and http to a loopback host (127.0.0.0/8, ::1,
// localhost) for local runs.
func checkURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, &URLError{Reason: "the request has no ResponseURL"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		reason := "it does not parse"
		var ue *url.Error
		if errors.As(err, &ue) {
			reason += ": " + ue.Err.Error()
		}
		return nil, &URLError{URL: shownRaw(raw), Reason: reason}
	}
	bad := func(reason string) (*url.URL, error) { return nil, &URLError{URL: shown(u), Reason: reason} }
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return bad(fmt.Sprintf("scheme %q is not https", u.Scheme))
	case u.Opaque != "" || u.Host == "":
		return bad("it has no host")
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return u, nil
	default:
		return bad("http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost); use https")
	}
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// shown is u as far as its path: scheme://host/path, without user
// information, query or fragment.
func shown(u *url.URL) string {
	if u.Opaque != "" {
		return u.Scheme + ":…"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// shownRaw is an unparseable address cut before its query and fragment,
// without user information.
func shownRaw(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		authority, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			raw = scheme + "://" + authority[i+1:]
			if len(rest) > len(authority) {
				raw += "/" + path
			}
		}
	}
	return raw
}

// send PUTs the response to rawURL, retrying network errors and 5xx
// answers. A ResponseURL checkURL refuses is never requested. No error it
// returns or logs shows the URL's query (the signature): see redactor.
func send(ctx context.Context, rawURL string, r cfn.Response, o Options) error {
	u, err := checkURL(rawURL)
	if err != nil {
		return err
	}
	body, err := Body(r)
	if err != nil {
		return err
	}
	// A copy of the client that never follows a redirect: the answer goes
	// to the pre-signed URL or nowhere, and a 3xx is a failed send.
	client := *o.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	red := newRedactor(u)
	wait := o.Backoff
	var last error
	for attempt := 1; attempt <= o.Attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("customresource: response not sent: %w (last: %w)", ctx.Err(), last)
			case <-time.After(wait):
			}
			wait *= 2
		}
		retry, err := put(ctx, rawURL, body, &client, red)
		if err == nil {
			return nil
		}
		last = err
		o.Logger.Warn("custom resource response PUT failed", "attempt", attempt, "error", err)
		if !retry {
			break
		}
	}
	return fmt.Errorf("customresource: response not sent: %w", last)
}

// put sends one PUT; retry reports whether another attempt may succeed.
// Its error is redacted.
func put(ctx context.Context, rawURL string, body []byte, c *http.Client, red redactor) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, rawURL, bytes.NewReader(body))
	if err != nil {
		return false, red.err(err)
	}
	// The pre-signed URL's signature covers an empty content type.
	req.Header["Content-Type"] = []string{""}
	resp, err := c.Do(req)
	if err != nil {
		return ctx.Err() == nil, red.err(err)
	}
	defer resp.Body.Close()
	// An error body may quote the request (S3's SignatureDoesNotMatch
	// quotes the signature provided): read enough to redact whole values,
	// then keep the start.
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := cut(strings.TrimSpace(red.text(string(raw))), 512)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 500:
		return true, fmt.Errorf("PUT to %s answered %s: %s", red.shown, resp.Status, msg)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return false, fmt.Errorf("PUT to %s answered %s, a redirect, which is not followed: %s", red.shown, resp.Status, msg)
	default:
		return false, fmt.Errorf("PUT to %s answered %s: %s", red.shown, resp.Status, msg)
	}
}

// cut is s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// redactor keeps a ResponseURL's query out of errors and logs: the query
// of a pre-signed URL holds its signature (and the credential and session
// token it was made with).
type redactor struct {
	// shown is the URL as far as its path.
	shown string
	// secrets are the raw query and fragment, and each query value of 8
	// bytes or more, raw and unescaped.
	secrets []string
}

// redacted replaces a secret in text.
const redacted = "[redacted]"

func newRedactor(u *url.URL) redactor {
	r := redactor{shown: shown(u)}
	add := func(s string) {
		if len(s) >= 8 {
			r.secrets = append(r.secrets, s)
		}
	}
	add(u.RawQuery)
	add(u.EscapedFragment())
	add(u.Fragment)
	for _, kv := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(kv, "=")
		add(v)
		if uv, err := url.QueryUnescape(v); err == nil {
			add(uv)
		}
		if uv, err := url.PathUnescape(v); err == nil {
			add(uv)
		}
	}
	// Longest first, so that a value inside the raw query does not break
	// the query's own replacement.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// text is s with every secret replaced.
func (r redactor) text(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

// err is e with the URL a *url.Error embeds (client.Do's errors) cut to
// the path; an error whose text still holds a secret is replaced by its
// redacted text.
func (r redactor) err(e error) error {
	if ue, ok := e.(*url.Error); ok {
		e = &url.Error{Op: ue.Op, URL: r.shown, Err: ue.Err}
	}
	if msg := e.Error(); r.text(msg) != msg {
		return errors.New(r.text(msg))
	}
	return e
}
