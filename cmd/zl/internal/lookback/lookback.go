// Package lookback reads how far back a command looks (zl's --since): a
// Go duration (90m, 24h, 1h30m), a whole number of days (7d), or days then
// a duration (1d12h). It is a package of its own, importing the standard
// library alone, so that its fuzz target builds without the command's
// dependencies (docs/design.md §1).
package lookback

import (
	"strconv"
	"strings"
	"time"
)

// Form is the accepted form, which every error names.
const Form = "pass a duration such as 24h, 90m, 7d or 1d12h"

// MaxDays is the most days a duration holds.
const MaxDays = int64(1<<63-1) / int64(24*time.Hour)

// Error is a lookback that does not parse: why, then the accepted Form.
type Error struct {
	// Reason says what is wrong: "signed", "not a number of days",
	// "more than 106751 days", "not a duration", "too long" or
	// "not after now".
	Reason string
}

func (e *Error) Error() string { return e.Reason + ": " + Form }

// Parse reads a lookback. It must be positive; anything else is an *Error.
func Parse(s string) (time.Duration, error) {
	rest := s
	var days int64
	if i := strings.IndexByte(s, 'd'); i >= 0 { // no Go duration unit has a d
		digits := s[:i]
		if digits == "" || len(digits) > 6 || strings.Trim(digits, "0123456789") != "" {
			return 0, &Error{Reason: "not a number of days"}
		}
		days, _ = strconv.ParseInt(digits, 10, 64) // six digits parse
		if days > MaxDays {
			return 0, &Error{Reason: "more than " + strconv.FormatInt(MaxDays, 10) + " days"}
		}
		rest = s[i+1:]
	}
	d := time.Duration(days) * 24 * time.Hour
	if rest != "" {
		if rest[0] == '-' || rest[0] == '+' {
			return 0, &Error{Reason: "signed"}
		}
		extra, err := time.ParseDuration(rest)
		if err != nil {
			return 0, &Error{Reason: "not a duration"}
		}
		if extra > time.Duration(1<<63-1)-d {
			return 0, &Error{Reason: "too long"}
		}
		d += extra
	}
	if d <= 0 {
		return 0, &Error{Reason: "not after now"}
	}
	return d, nil
}
