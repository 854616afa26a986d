package limiter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Error categories (docs/design.md §5). Each error type implements the marker method of
// its category, so callers can test a category without knowing the type.
type (
	rateLimitCategory      interface{ rateLimitError() }
	infrastructureCategory interface{ infrastructureError() }
)

// IsRateLimitError reports whether err is (or wraps) an error of the
// rate-limit category: RateLimitExceeded or LeaseExpiredError. A
// ResourceDisabled is deliberately not one (it is a 403, never retried).
func IsRateLimitError(err error) bool {
	var c rateLimitCategory
	return errors.As(err, &c)
}

// IsInfrastructureError reports whether err is (or wraps) an error of the
// infrastructure category, such as RateLimiterUnavailable.
func IsInfrastructureError(err error) bool {
	var c infrastructureCategory
	return errors.As(err, &c)
}

// IsValidationError reports whether err is (or wraps) a validation error
// (bad input; HTTP 400; never retried).
func IsValidationError(err error) bool { return schema.IsValidationError(err) }

// LimitNotConfiguredError reports an acquire that names limits the pair's
// configuration does not give it: a pair's limits are those of one level,
// the first that has any (docs/design.md §7), and that level lacks them —
// most often an entity's own limits that leave out one its resource gives.
// Nothing was written. Upstream's client ignores such a name with a
// warning and says it becomes an error at its 1.0; this client refuses it
// now (docs/decisions.md P58). It is a validation error
// (IsValidationError; it wraps a *schema.ValidationError of field
// "limits"), and core/httplimit answers it as the service's configuration
// error it is.
type LimitNotConfiguredError struct {
	// EntityID and Resource name the pair.
	EntityID, Resource string
	// Limits are the names the acquire declared that the pair lacks.
	Limits []string
	// Level is where the pair's limits come from: "entity",
	// "entity_default", "resource" or "system", or "call" for limits the
	// call passed itself.
	Level string
	// Configured are the names of the limits that level gives.
	Configured []string
}

// Error implements error.
func (e *LimitNotConfiguredError) Error() string {
	return fmt.Sprintf("limiter: limit %s is not configured for entity %s on resource %s: its limits come from the %s level, which gives %s",
		strings.Join(e.Limits, ", "), e.EntityID, e.Resource, e.Level, strings.Join(e.Configured, ", "))
}

// Unwrap returns the validation error of the first name, so that
// IsValidationError holds.
func (e *LimitNotConfiguredError) Unwrap() error {
	return schema.NewValidationError(schema.FieldLimits, e.Limits[0],
		"is not a limit of entity "+e.EntityID+" on resource "+e.Resource)
}

// LimitStatus is one limit's state as seen by an acquire (docs/design.md §5).
type LimitStatus struct {
	EntityID  string
	Resource  string
	LimitName string
	// Capacity, RefillAmount (whole tokens) and RefillPeriod describe the
	// limit as configured (undivided across shards).
	Capacity     int64
	RefillAmount int64
	RefillPeriod time.Duration
	// Available is the balance in whole tokens (floor), negative in debt.
	Available int64
	// Requested is the amount asked for, in whole tokens.
	Requested int64
	// Exceeded is true for a hard limit that could not cover Requested.
	Exceeded bool
	// RetryAfter is how long until refill can cover Requested; 0 when not
	// exceeded. Never is set instead when no refill can (the request is
	// larger than the shard's ceiling, or the limit does not refill).
	RetryAfter time.Duration
	Never      bool
	// Soft limits are debited but never reject (ADR-151).
	Soft bool
}

// Overdrawn reports a soft limit driven into debt.
func (s LimitStatus) Overdrawn() bool { return s.Soft && s.Available < 0 }

// RetryAfterSeconds is RetryAfter in seconds, +Inf when Never.
func (s LimitStatus) RetryAfterSeconds() float64 {
	if s.Never {
		return math.Inf(1)
	}
	return s.RetryAfter.Seconds()
}

// RateLimitExceeded reports that at least one hard limit could not cover the
// request (fast rejection, slow path, retry failure or local rejection).
// HTTP 429.
type RateLimitExceeded struct {
	// Statuses holds every declared limit of the request (wcu never appears).
	Statuses []LimitStatus
	// Local reports a rejection decided in this process from the rejection
	// cache, with no DynamoDB call (docs/design.md §10): the statuses are
	// the last state seen, projected to now, and RetryAfter is honest for
	// that state. Another process's refund can make it pessimistic for up
	// to Options.RejectionCacheTTL; it is never an admission.
	Local bool
}

func (*RateLimitExceeded) rateLimitError() {}

// Violations are the exceeded statuses.
func (e *RateLimitExceeded) Violations() []LimitStatus { return e.filter(true) }

// Passed are the statuses that did not reject, soft ones included.
func (e *RateLimitExceeded) Passed() []LimitStatus { return e.filter(false) }

func (e *RateLimitExceeded) filter(exceeded bool) []LimitStatus {
	var out []LimitStatus
	for _, s := range e.Statuses {
		if s.Exceeded == exceeded {
			out = append(out, s)
		}
	}
	return out
}

// PrimaryViolation is the bottleneck: the violation with the longest wait
// (a Never wait is longest). ok is false when nothing was exceeded.
func (e *RateLimitExceeded) PrimaryViolation() (s LimitStatus, ok bool) {
	for _, v := range e.Statuses {
		if !v.Exceeded {
			continue
		}
		if !ok || longer(v, s) {
			s, ok = v, true
		}
	}
	return s, ok
}

func longer(a, b LimitStatus) bool {
	if a.Never != b.Never {
		return a.Never
	}
	return a.RetryAfter > b.RetryAfter
}

// RetryAfter is the bottleneck's wait; never is true when no refill can
// satisfy the request.
func (e *RateLimitExceeded) RetryAfter() (d time.Duration, never bool) {
	p, ok := e.PrimaryViolation()
	if !ok {
		return 0, false
	}
	return p.RetryAfter, p.Never
}

// RetryAfterSeconds is the bottleneck's wait in seconds (+Inf when never).
func (e *RateLimitExceeded) RetryAfterSeconds() float64 {
	p, ok := e.PrimaryViolation()
	if !ok {
		return 0
	}
	return p.RetryAfterSeconds()
}

// RetryAfterHeader is the HTTP Retry-After value: int(seconds)+1, or "" when
// no wait can help (send no header: retrying cannot succeed).
func (e *RateLimitExceeded) RetryAfterHeader() string {
	d, never := e.RetryAfter()
	if never {
		return ""
	}
	return strconv.FormatInt(int64(d.Seconds())+1, 10)
}

// HTTPStatus is 429.
func (*RateLimitExceeded) HTTPStatus() int { return 429 }

func (e *RateLimitExceeded) Error() string {
	var names []string
	for _, v := range e.Violations() {
		names = append(names, v.LimitName)
	}
	p, ok := e.PrimaryViolation()
	if !ok {
		return "rate limit exceeded"
	}
	wait := "never (request exceeds what the limit can hold)"
	if !p.Never {
		wait = fmt.Sprintf("%.3fs", p.RetryAfter.Seconds())
	}
	return fmt.Sprintf("rate limit exceeded for %s on %s: %s; retry after %s",
		p.EntityID, p.Resource, strings.Join(names, ", "), wait)
}

// statusJSON is one entry of the "limits" list of the JSON form.
type statusJSON struct {
	EntityID            string   `json:"entity_id"`
	Resource            string   `json:"resource"`
	LimitName           string   `json:"limit_name"`
	Kind                string   `json:"kind"`
	Capacity            int64    `json:"capacity"`
	RefillAmount        int64    `json:"refill_amount"`
	RefillPeriodSeconds float64  `json:"refill_period_seconds"`
	Available           int64    `json:"available"`
	Requested           int64    `json:"requested"`
	Exceeded            bool     `json:"exceeded"`
	RetryAfterSeconds   *float64 `json:"retry_after_seconds"`
	Soft                bool     `json:"soft"`
}

// MarshalJSON renders the as_dict form of docs/design.md §5:
// {"error":"rate_limit_exceeded","message","retry_after_seconds","retry_after_ms","limits":[...]}.
// A wait no refill can end is null (JSON has no infinity).
func (e *RateLimitExceeded) MarshalJSON() ([]byte, error) {
	d, never := e.RetryAfter()
	body := struct {
		Error             string       `json:"error"`
		Message           string       `json:"message"`
		RetryAfterSeconds *float64     `json:"retry_after_seconds"`
		RetryAfterMs      *int64       `json:"retry_after_ms"`
		Limits            []statusJSON `json:"limits"`
	}{Error: "rate_limit_exceeded", Message: e.Error(), Limits: []statusJSON{}}
	if !never {
		secs, ms := d.Seconds(), d.Milliseconds()
		body.RetryAfterSeconds, body.RetryAfterMs = &secs, &ms
	}
	for _, s := range e.Statuses {
		j := statusJSON{
			EntityID: s.EntityID, Resource: s.Resource, LimitName: s.LimitName, Kind: "rate",
			Capacity: s.Capacity, RefillAmount: s.RefillAmount, RefillPeriodSeconds: s.RefillPeriod.Seconds(),
			Available: s.Available, Requested: s.Requested, Exceeded: s.Exceeded, Soft: s.Soft,
		}
		if !s.Never {
			secs := s.RetryAfter.Seconds()
			j.RetryAfterSeconds = &secs
		}
		body.Limits = append(body.Limits, j)
	}
	return json.Marshal(body)
}

// Disabled levels: which item decided that the pair is disabled.
const (
	LevelEntity        = "entity"
	LevelEntityDefault = "entity_default"
	LevelResource      = "resource"
	LevelBucket        = "bucket"
)

// ResourceDisabled reports a disabled (entity, resource) pair, or a disabled
// cascade parent (EntityID is then the parent). It is not a rate-limit error
// and carries no retry hint. HTTP 403.
type ResourceDisabled struct {
	EntityID string
	Resource string
	Level    string
}

func (e *ResourceDisabled) Error() string {
	return fmt.Sprintf("resource %s is disabled for entity %s (decided at %s level)", e.Resource, e.EntityID, e.Level)
}

// HTTPStatus is 403.
func (*ResourceDisabled) HTTPStatus() int { return 403 }

// ErrLeaseExpired reports a lease used after it was committed or rolled back.
var ErrLeaseExpired error = &LeaseExpiredError{}

// LeaseExpiredError reports an operation on a lease after its exit.
type LeaseExpiredError struct{}

func (*LeaseExpiredError) rateLimitError() {}
func (*LeaseExpiredError) Error() string   { return "lease already committed or rolled back" }

// Is makes every LeaseExpiredError match ErrLeaseExpired.
func (*LeaseExpiredError) Is(target error) bool {
	_, ok := target.(*LeaseExpiredError)
	return ok
}

// RateLimiterUnavailable reports an infrastructure failure (throttling,
// network, 5xx) during acquire while on_unavailable is block. HTTP 503.
type RateLimiterUnavailable struct {
	Cause    error
	Stack    string // the table (stack) name
	EntityID string
	Resource string
}

func (*RateLimiterUnavailable) infrastructureError() {}

func (e *RateLimiterUnavailable) Error() string {
	return fmt.Sprintf("rate limiter unavailable (table %s, %s on %s): %v", e.Stack, e.EntityID, e.Resource, e.Cause)
}

// Unwrap returns the cause.
func (e *RateLimiterUnavailable) Unwrap() error { return e.Cause }

// HTTPStatus is 503.
func (*RateLimiterUnavailable) HTTPStatus() int { return 503 }

// limitStatus turns an arithmetic status of a declared limit on (entity,
// resource) into a LimitStatus.
func limitStatus(entity, resource string, d bucketwrite.Declared, p bucket.Params, soft bool, s bucket.Status) LimitStatus {
	ls := LimitStatus{
		EntityID: entity, Resource: resource, LimitName: d.Name,
		Capacity: p.Capacity / bucket.MilliPerToken, RefillAmount: p.RefillAmount / bucket.MilliPerToken,
		RefillPeriod: msDuration(p.RefillPeriod),
		Available:    s.Available, Requested: d.Amount, Exceeded: s.Exceeded && !soft, Soft: soft,
	}
	if ls.Exceeded {
		ls.Never = s.Retry.Never
		ls.RetryAfter = msDuration(s.Retry.WaitMs)
	}
	return ls
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// isVerdict reports a 429 or a 403.
func isVerdict(err error) bool {
	var disabled *ResourceDisabled
	return IsRateLimitError(err) || errors.As(err, &disabled)
}

// isInfrastructure reports an error that on_unavailable governs: anything
// but a verdict (rate limit, disabled), bad input, or the caller's own
// context ending.
func isInfrastructure(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil, isVerdict(err), IsValidationError(err), isGate(err):
		return false
	case config.IsUnsupported(err):
		// A stored schedule this version cannot read is an outage of the
		// pair's config, answered per on_unavailable (docs/design.md §14);
		// any other unsupported feature is refused as it is.
		var enc *schedule.EncodingError
		var zone *schedule.ZoneError
		return errors.As(err, &enc) || errors.As(err, &zone)
	}
	return true
}

// isGate reports the writer gate's refusal: the table's readers are
// older than the feature a call carries, or its version record is
// missing. A refusal, never an outage on_unavailable could admit.
func isGate(err error) bool {
	var vm *config.VersionMismatchError
	var mv *config.MissingVersionError
	return errors.As(err, &vm) || errors.As(err, &mv)
}

// dbError marks a failed DynamoDB call: an infrastructure failure.
type dbError struct {
	op  string
	err error
}

func (e *dbError) Error() string { return e.op + ": " + e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }
