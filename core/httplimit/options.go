package httplimit

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Options configure the middleware New builds. New copies them: changing an
// Options value afterwards changes nothing.
type Options struct {
	// Entity finds who is calling (required): EntityFromHeader,
	// EntityFromAPIKey, EntityFromClientIP or a function of the request. A
	// request for which it returns "", or an id the table refuses, is
	// answered by OnNoEntity.
	Entity EntityFunc
	// Resource names what is being called (required): FixedResource,
	// PatternResource or a function of the request. "" is a configuration
	// error, answered 500.
	Resource ResourceFunc
	// Consume is what every request takes, by limit name; or ConsumeFunc
	// computes it per request. Exactly one of the two is set. An amount of 0
	// still declares the limit: it is checked and its state reported, and a
	// UsageFunc may adjust it afterwards.
	Consume     limiter.Consume
	ConsumeFunc ConsumeFunc
	// Usage, when set, tells after the handler what the request really used;
	// the lease is adjusted to it and committed (see UsageFunc).
	Usage UsageFunc
	// RollbackStatus reports a final status whose admission is given back
	// (the request counts as not made). The default rolls back every 5xx.
	RollbackStatus func(status int) bool
	// OnNoEntity answers a request with no usable entity. The default is a
	// 400 with a problem body: a 401 needs a WWW-Authenticate challenge only
	// the service can write, so a service whose entity comes from its
	// authentication answers 401 here.
	OnNoEntity http.Handler
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (epoch seconds) for the first RateLimit member.
	LegacyHeaders bool
	// Clock is the wall clock for X-RateLimit-Reset and a calendar quota's
	// reset edges (default time.Now); give it the limiter's clock.
	Clock func() time.Time
	// Logger receives the errors a client is not told about: a 500's cause,
	// a failed commit or rollback (default slog.Default()). Entity ids are
	// never logged at warning level or above.
	Logger *slog.Logger
}

// EntityFunc returns the entity a request acquires for, or "" when the
// request names none.
type EntityFunc func(r *http.Request) string

// ResourceFunc returns the resource a request acquires on.
type ResourceFunc func(r *http.Request) string

// ConsumeFunc returns what a request takes, by limit name. An error is the
// client's: the request is answered 400 and nothing is acquired.
type ConsumeFunc func(r *http.Request) (limiter.Consume, error)

// OptionsError reports Options that New refuses.
type OptionsError struct {
	// Field names the option, e.g. "Entity" or "Consume".
	Field string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any (a limit name's validation).
	Err error
}

func (e *OptionsError) Error() string {
	msg := "httplimit: option " + e.Field + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *OptionsError) Unwrap() error { return e.Err }

// validate checks o and returns the copy New keeps, defaults filled in.
func (o Options) validate() (Options, error) {
	switch {
	case o.Entity == nil:
		return o, &OptionsError{Field: "Entity", Reason: "required: how the middleware finds who is calling"}
	case o.Resource == nil:
		return o, &OptionsError{Field: "Resource", Reason: "required: what the requests call"}
	case o.Consume == nil && o.ConsumeFunc == nil:
		return o, &OptionsError{Field: "Consume", Reason: "one of Consume and ConsumeFunc is required"}
	case o.Consume != nil && o.ConsumeFunc != nil:
		return o, &OptionsError{Field: "Consume", Reason: "set Consume or ConsumeFunc, not both"}
	}
	if o.Consume != nil {
		if len(o.Consume) == 0 {
			return o, &OptionsError{Field: "Consume", Reason: "names no limit"}
		}
		for name, n := range o.Consume {
			if err := schema.ValidateLimitName(name); err != nil {
				return o, &OptionsError{Field: "Consume", Reason: fmt.Sprintf("limit %q", name), Err: err}
			}
			if n < 0 {
				return o, &OptionsError{Field: "Consume", Reason: fmt.Sprintf("limit %q: amount %d is negative", name, n)}
			}
		}
		o.Consume = maps.Clone(o.Consume)
	}
	if o.RollbackStatus == nil {
		o.RollbackStatus = func(status int) bool { return status >= 500 }
	}
	if o.OnNoEntity == nil {
		o.OnNoEntity = http.HandlerFunc(noEntity)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
