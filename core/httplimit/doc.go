// Package httplimit is net/http middleware around a limiter: each request
// acquires from the limits of its (entity, resource) pair before the handler
// runs, and the answer a client sees follows the HTTP conventions for rate
// limits (docs/design.md §17).
//
// # What it does with a request
//
// New builds the middleware from Options: how to find the entity (a header,
// a hashed API key, the client address, or a function of the request), the
// resource (fixed, the route pattern, or a function) and what the request
// consumes (fixed, or a function of the request). For each request it calls
// Limiter.Acquire and answers:
//
//   - admitted: the handler runs, with the RateLimit-Policy and RateLimit
//     fields of the tightest limit (the least remaining fraction) already
//     set. When the handler is done, an optional UsageFunc tells what the
//     request really used; the lease is adjusted and committed. A handler
//     that panics, or answers a status RollbackStatus picks (every 5xx by
//     default), has its admission rolled back instead;
//   - 429: Retry-After (seconds, rounded up), RateLimit-Policy and RateLimit
//     with one member per limit of the request, the exhausted ones first,
//     and an application/problem+json body (RFC 9457) naming the violated
//     limits;
//   - 403 for a disabled resource, 503 when the limiter cannot reach its
//     table and on_unavailable says block (with allow the request goes on,
//     with no RateLimit fields), 500 for a bad configuration (a consumption
//     the pair does not configure, a resource name the table refuses), each
//     with a problem body; a request with no usable entity gets 400 unless
//     Options.OnNoEntity answers it otherwise.
//
// # Header fields
//
// RateLimit-Policy and RateLimit are the structured-field lists of the IETF
// draft "RateLimit header fields for HTTP" (RFC 8941 serialisation): a policy
// is named after its limit, q is the limit's capacity in tokens and w its
// refill period in seconds (a calendar quota's current reset period); r is
// the whole tokens remaining and t the seconds until the limit is full again
// (on a 429, the retry-after of an exhausted limit):
//
//	RateLimit-Policy: "rpm";q=100;w=60, "tpm";q=100000;w=60
//	RateLimit: "rpm";r=0;t=13, "tpm";r=99000;t=1
//
// Options.LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (epoch seconds) for the first member.
//
// # Routers
//
// The middleware is a func(http.Handler) http.Handler on the standard
// library alone, so it wraps a ServeMux route, a chi route (r.With), a
// gorilla/mux router (Router.Use), echo (echo.WrapMiddleware) or a whole gin
// engine unchanged. The response writer it hands the handler unwraps
// (Unwrap, for http.ResponseController) and flushes, hijacks and pushes
// through to the server's.
package httplimit
