package httplimit

import (
	"net/http"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// Response is what a handler answered, as the middleware saw it.
type Response struct {
	// Status is the final status the handler wrote; 200 when it wrote
	// none (net/http's answer).
	Status int
	// Header is the response header as the handler left it, trailers it
	// set after the body included.
	Header http.Header
	// Written is how many body bytes the handler wrote.
	Written int64
}

// UsageFunc tells what a finished request really used, by limit name, in
// whole tokens: for each limit it names, the lease is adjusted by the used
// amount less the amount acquired (an estimate corrected: 2,000 tokens taken,
// 1,200 used, 800 given back), then committed. Limits it does not name keep
// what was acquired; ok false keeps everything. Each name must be a limit the
// request acquired (an amount of 0 declares one); another is logged and
// skipped.
type UsageFunc func(r *http.Request, res Response) (used limiter.Consume, ok bool)

// UsageFromHeader reads the used amount of one limit from a response header
// the handler sets (a decimal count of whole tokens, at most 18 digits), or
// from the trailer of that name when the handler knows the count only after
// streaming the body. A header that is absent or not a count keeps the
// acquired amount. The client sees the header too.
func UsageFromHeader(name, limitName string) UsageFunc {
	key := http.CanonicalHeaderKey(name)
	trailerKey := http.TrailerPrefix + key
	return func(_ *http.Request, res Response) (limiter.Consume, bool) {
		v, ok := res.Header[key]
		if !ok {
			v = res.Header[trailerKey]
		}
		if len(v) == 0 {
			return nil, false
		}
		n, ok := parseUsage(v[0])
		if !ok {
			return nil, false
		}
		return limiter.Consume{limitName: n}, true
	}
}

// parseUsage reads a usage count: ASCII digits (at most 18, so it fits an
// int64 and its millitokens stay in range for realistic amounts), spaces
// and tabs around them allowed; no sign, no fraction, no exponent.
func parseUsage(s string) (int64, bool) {
	s = trimOWS(s)
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
