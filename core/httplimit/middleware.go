package httplimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The response fields the middleware writes, in their canonical spelling
// (net/http writes "Ratelimit"; field names are case-insensitive).
const (
	fieldPolicy      = "Ratelimit-Policy"
	fieldRateLimit   = "Ratelimit"
	fieldRetryAfter  = "Retry-After"
	legacyLimit      = "X-Ratelimit-Limit"
	legacyRemaining  = "X-Ratelimit-Remaining"
	legacyReset      = "X-Ratelimit-Reset"
	detailDisabled   = "this resource is disabled for the caller"
	detailNoDecision = "the rate limiter cannot decide this request now; try again later"
	detailBroken     = "the rate limit of this request could not be applied"
)

// detailUnconfigured is the detail of the answer to a request whose cost
// names limits the caller's configuration lacks.
func detailUnconfigured(limits []string) string {
	return "the rate limits configured for this caller do not include " + strings.Join(limits, ", ") +
		": the service's request costs and the rate limiter's configuration disagree"
}

// New returns middleware that acquires from lim for every request, as o
// says (see the package documentation for the answers it gives). It returns
// an *OptionsError for options it cannot work with; the middleware keeps its
// own copy of o.
func New(lim *limiter.Limiter, o Options) (func(http.Handler) http.Handler, error) {
	if lim == nil {
		return nil, &OptionsError{Field: "limiter", Reason: "a limiter is required"}
	}
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	m := &middleware{lim: lim, o: o}
	return func(next http.Handler) http.Handler {
		return &handler{m: m, next: next}
	}, nil
}

// middleware is what New built: the limiter and the validated options.
type middleware struct {
	lim *limiter.Limiter
	o   Options
}

// handler is the middleware around one next handler.
type handler struct {
	m    *middleware
	next http.Handler
}

// ServeHTTP acquires for r, answers a refusal itself, or runs the next
// handler and settles the lease after it (docs/design.md §17).
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.m
	ctx := r.Context()
	entity := m.o.Entity(r)
	if entity == "" {
		m.o.OnNoEntity.ServeHTTP(w, r)
		return
	}
	resource := m.o.Resource(r)
	if resource == "" {
		m.o.Logger.ErrorContext(ctx, "httplimit: the request has no resource (with PatternResource, wrap the route's handler, not the router)",
			"method", r.Method, "pattern", r.Pattern)
		writeProblem(w, blankProblem(http.StatusInternalServerError, detailBroken))
		return
	}
	consume := m.o.Consume
	if m.o.ConsumeFunc != nil {
		c, err := m.o.ConsumeFunc(r)
		if err != nil {
			m.o.Logger.DebugContext(ctx, "httplimit: the request's consumption could not be read", "resource", resource, "error", err)
			writeProblem(w, blankProblem(http.StatusBadRequest, "the cost of the request could not be read from it"))
			return
		}
		consume = c
	}
	lease, err := m.lim.Acquire(ctx, entity, resource, consume)
	if err != nil {
		m.refuse(w, r, resource, err)
		return
	}
	if !lease.Degraded() {
		m.admittedFields(ctx, w.Header(), lease.Statuses())
	}
	rw := &responseWriter{ResponseWriter: w}
	finished := false
	defer func() {
		if !finished { // the handler panicked (or called runtime.Goexit): the panic goes on to the server
			m.rollback(ctx, lease, resource, "the handler panicked")
		}
	}()
	h.next.ServeHTTP(rw, r)
	finished = true
	m.settle(r, rw, lease, resource, consume)
}

// settle ends an admitted request's lease: a rollback for a status
// RollbackStatus picks; otherwise the usage UsageFunc reports, then the
// commit.
func (m *middleware) settle(r *http.Request, rw *responseWriter, lease *limiter.Lease, resource string, consume limiter.Consume) {
	ctx := r.Context()
	status := rw.status
	switch {
	case status == 0 && rw.hijacked:
		status = http.StatusSwitchingProtocols
	case status == 0:
		status = http.StatusOK
	}
	if m.o.RollbackStatus(status) {
		m.rollback(ctx, lease, resource, "status "+strconv.Itoa(status))
		return
	}
	adjusted := false
	if m.o.Usage != nil {
		used, ok := m.o.Usage(r, Response{Status: status, Header: rw.Header(), Written: rw.written})
		if !ok {
			used = nil
		}
		for name, n := range used {
			delta := n - consume[name]
			if delta == 0 {
				continue
			}
			if err := lease.Adjust(name, delta); err != nil {
				m.o.Logger.WarnContext(ctx, "httplimit: the usage names a limit the request did not acquire", "resource", resource, "limit", name, "error", err)
				continue
			}
			adjusted = true
		}
	}
	if adjusted {
		// The commit writes: it goes on when the client has gone.
		ctx = context.WithoutCancel(ctx)
	}
	if err := lease.Commit(ctx); err != nil {
		m.o.Logger.WarnContext(ctx, "httplimit: commit failed", "resource", resource, "error", err)
	}
}

// rollback gives back an admission the handler did not use; it writes even
// when the client has gone.
func (m *middleware) rollback(ctx context.Context, lease *limiter.Lease, resource, why string) {
	if err := lease.Rollback(context.WithoutCancel(ctx)); err != nil {
		m.o.Logger.WarnContext(ctx, "httplimit: rollback failed", "resource", resource, "why", why, "error", err)
	}
}

// admittedFields writes the RateLimit-Policy and RateLimit fields of the
// tightest limit of an admitted request (and the legacy fields).
func (m *middleware) admittedFields(ctx context.Context, h http.Header, statuses []limiter.LimitStatus) {
	q := m.quotaReader(ctx, statuses)
	tight, ok := tightest(statuses, q.clock())
	if !ok {
		return
	}
	policy, rateLimit, ok := oneMember(tight)
	if !ok {
		return
	}
	vals := make([]string, 2)
	vals[0], vals[1] = policy, rateLimit
	h[fieldPolicy] = vals[0:1:1]
	h[fieldRateLimit] = vals[1:2:2]
	if m.o.LegacyHeaders {
		m.legacyFields(h, tight)
	}
}

// legacyFields writes X-RateLimit-Limit, -Remaining and -Reset of mem.
func (m *middleware) legacyFields(h http.Header, mem member) {
	h.Set(legacyLimit, strconv.FormatInt(mem.quota, 10))
	h.Set(legacyRemaining, strconv.FormatInt(mem.remaining, 10))
	if mem.reset >= 0 {
		h.Set(legacyReset, strconv.FormatInt(m.o.Clock().Unix()+mem.reset, 10))
	}
}

// refuse answers a request Acquire did not admit.
func (m *middleware) refuse(w http.ResponseWriter, r *http.Request, resource string, err error) {
	ctx := r.Context()
	if rle, ok := err.(*limiter.RateLimitExceeded); ok { //nolint:errorlint // the common verdict, without reflection
		m.tooMany(ctx, w, rle)
		return
	}
	var rle *limiter.RateLimitExceeded
	var disabled *limiter.ResourceDisabled
	var unconfigured *limiter.LimitNotConfiguredError
	var invalid *schema.ValidationError
	var unavailable *limiter.RateLimiterUnavailable
	switch {
	case errors.As(err, &rle):
		m.tooMany(ctx, w, rle)
	case errors.As(err, &disabled):
		writeProblem(w, blankProblem(http.StatusForbidden, detailDisabled))
	case errors.As(err, &unconfigured):
		// The service's cost names a limit the operator's limits for this
		// caller lack (an entity's own limits replace its resource's, they
		// do not add to them): a configuration error on the server's
		// side, said as such (docs/decisions.md P58). The log line says
		// what to fix; the entity is at debug level only.
		m.o.Logger.ErrorContext(ctx, "httplimit: the request consumes limits the caller's limits do not include; "+
			"give the caller those limits or stop consuming them", "resource", resource,
			"limits", strings.Join(unconfigured.Limits, ","), "limits_from", unconfigured.Level,
			"configured", strings.Join(unconfigured.Configured, ","))
		m.o.Logger.DebugContext(ctx, "httplimit: the request consumes limits the caller's limits do not include", "error", err)
		writeProblem(w, blankProblem(http.StatusInternalServerError, detailUnconfigured(unconfigured.Limits)))
	case errors.As(err, &invalid) && invalid.Field == schema.FieldEntityID:
		m.o.OnNoEntity.ServeHTTP(w, r)
	case errors.As(err, &invalid):
		// The service's own configuration: a limit the pair does not
		// have, a bad amount, a resource name the table refuses. The
		// error names the entity, so the full error is logged at debug
		// level only.
		m.o.Logger.ErrorContext(ctx, "httplimit: the limiter refused the request's input", "resource", resource,
			"field", invalid.Field, "value", invalid.Value)
		m.o.Logger.DebugContext(ctx, "httplimit: the limiter refused the request's input", "error", err)
		writeProblem(w, blankProblem(http.StatusInternalServerError, detailBroken))
	case errors.As(err, &unavailable):
		m.o.Logger.WarnContext(ctx, "httplimit: the limiter is unavailable and on_unavailable is block", "resource", resource, "error", unavailable.Cause)
		writeProblem(w, blankProblem(http.StatusServiceUnavailable, detailNoDecision))
	case ctx.Err() != nil:
		// The client went away, or the request's deadline passed, while
		// the limiter was deciding.
		m.o.Logger.DebugContext(ctx, "httplimit: the request ended before the limiter decided", "resource", resource, "error", err)
		writeProblem(w, blankProblem(http.StatusServiceUnavailable, detailNoDecision))
	default:
		m.o.Logger.ErrorContext(ctx, "httplimit: acquire failed", "resource", resource, "error", err)
		writeProblem(w, blankProblem(http.StatusInternalServerError, detailBroken))
	}
}

// tooMany answers a 429: Retry-After, the RateLimit fields of every limit
// (the exhausted first) and the problem body.
func (m *middleware) tooMany(ctx context.Context, w http.ResponseWriter, rle *limiter.RateLimitExceeded) {
	q := m.quotaReader(ctx, rle.Statuses)
	ms := members(rle.Statuses, q.clock())
	h := w.Header()
	retryAfter := retryAfterValue(ms)
	if retryAfter != "" {
		h.Set(fieldRetryAfter, retryAfter)
	}
	if policy, rateLimit := fieldValues(ms); policy != "" {
		h.Set(fieldPolicy, policy)
		h.Set(fieldRateLimit, rateLimit)
	}
	if m.o.LegacyHeaders && len(ms) > 0 {
		m.legacyFields(h, ms[0])
	}
	writeProblem(w, Problem{
		Type: QuotaExceededType, Title: quotaExceededTitle, Status: http.StatusTooManyRequests,
		Detail:           describeViolations(ms, retryAfter),
		ViolatedPolicies: violated(ms),
		Limits:           problemLimits(ms),
	})
}

// quotaReader reads a calendar quota's reset edges for the fields: its
// limit comes from the pair's config through the limiter's config cache
// (docs/design.md §7), its edges from its reset schedule at the clock's now.
// A nil *quotaReader (no status is a quota) reads nothing.
type quotaReader struct {
	m   *middleware
	ctx context.Context
	at  time.Time
}

// quotaReader returns a reader when some status is a calendar quota, nil
// otherwise (the common case allocates nothing).
func (m *middleware) quotaReader(ctx context.Context, statuses []limiter.LimitStatus) *quotaReader {
	for _, s := range statuses {
		if s.RefillAmount <= 0 {
			return &quotaReader{m: m, ctx: ctx, at: m.o.Clock()}
		}
	}
	return nil
}

// clock is q as a quotaClock; nil when q is.
func (q *quotaReader) clock() quotaClock {
	if q == nil {
		return nil
	}
	return q.times
}

// times is the quotaClock of a status: the reset period around now and
// the time to the next edge.
func (q *quotaReader) times(s limiter.LimitStatus) (period, untilReset time.Duration, ok bool) {
	res, err := q.m.lim.Store().Resolver().Resolve(q.ctx, q.m.lim.Namespace(), s.EntityID, s.Resource)
	if err != nil {
		return 0, 0, false
	}
	l, found := limit.Find(res.Limits, s.LimitName)
	if !found || !l.IsQuota() {
		return 0, 0, false
	}
	resets, loc, err := l.Resets()
	if err != nil {
		return 0, 0, false
	}
	prev, okPrev := resets.PrevEdge(q.at, loc)
	next, okNext := resets.NextEdge(q.at, loc)
	if !okPrev || !okNext {
		return 0, 0, false
	}
	return next.Sub(prev), next.Sub(q.at), true
}
