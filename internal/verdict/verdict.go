// Package verdict names the outcome of an acquire in the words the tests and
// the `make run` walk-through print: admitted and debited, admitted under a
// bypass, refused as disabled (403) or as over the limit (429).
package verdict

import (
	"errors"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// The outcomes.
const (
	OK       = "ok"     // admitted and debited
	Bypass   = "bypass" // admitted, counted, not debited
	Disabled = "403"    // *limiter.ResourceDisabled
	Limited  = "429"    // *limiter.RateLimitExceeded
)

// Of is the outcome of an acquire that returned lease and err, or "" for an
// error that is neither a 403 nor a 429.
func Of(lease *limiter.Lease, err error) string {
	var dis *limiter.ResourceDisabled
	var rle *limiter.RateLimitExceeded
	switch {
	case err == nil && lease.Bypassed():
		return Bypass
	case err == nil:
		return OK
	case errors.As(err, &dis):
		return Disabled
	case errors.As(err, &rle):
		return Limited
	}
	return ""
}
