package usage

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The instants a range may name: a window start is stored as a four-digit
// year (docs/design.md §6), so the latest window that can start before To is
// in December 9999.
var (
	minInstant = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxInstant = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// MaxLimitNames is the most limit names a Selection may keep: each is a
// condition of the Query's filter (docs/design.md §16).
const MaxLimitNames = 50

// Selection says which snapshots to read: those of one entity on a resource
// (ForEntity) or of every entity on a resource (ForResource), of one window
// kind, whose window starts in [From, To), optionally only some limits.
// It is a value: the methods return changed copies and never modify the
// receiver, so a Selection may be shared and reused.
type Selection struct {
	entity, resource string
	window           Window
	from, to         time.Time
	limits           []string // sorted, without duplicates; nil for every limit
}

// ForEntity selects the snapshots of entity on resource, of window kind w,
// whose window starts at or after from and before to. They are read from the
// entity's own partition (docs/design.md §16).
func ForEntity(entity, resource string, w Window, from, to time.Time) Selection {
	return Selection{entity: entity, resource: resource, window: w, from: from, to: to}
}

// ForResource selects the snapshots of every entity on resource, of window
// kind w, whose window starts at or after from and before to. They are
// read through the usage index, GSI2 (docs/design.md §16).
func ForResource(resource string, w Window, from, to time.Time) Selection {
	return Selection{resource: resource, window: w, from: from, to: to}
}

// WithLimits returns s keeping only the named limits: a snapshot reports
// only these, and a snapshot with none of them is left out. No names means
// every limit. The names are copied.
func (s Selection) WithLimits(names ...string) Selection {
	if len(names) == 0 {
		s.limits = nil
		return s
	}
	s.limits = slices.Compact(slices.Sorted(slices.Values(names)))
	return s
}

// Entity returns the selected entity; "" for a resource selection.
func (s Selection) Entity() string { return s.entity }

// Resource returns the selected resource.
func (s Selection) Resource() string { return s.resource }

// Window returns the selected window kind.
func (s Selection) Window() Window { return s.window }

// From returns the earliest window start selected.
func (s Selection) From() time.Time { return s.from }

// To returns the instant every selected window starts before.
func (s Selection) To() time.Time { return s.to }

// Limits returns the selected limit names, sorted; nil for every limit.
func (s Selection) Limits() []string { return slices.Clone(s.limits) }

// ByResource reports whether s selects every entity of its resource.
func (s Selection) ByResource() bool { return s.entity == "" }

// RangeError reports a time range that selects nothing by construction:
// From not before To, or an instant outside the years 1 to 9999.
type RangeError struct {
	From, To time.Time
	// Reason says what is wrong, in words.
	Reason string
}

// Error implements error.
func (e *RangeError) Error() string {
	return fmt.Sprintf("usage: bad range [%s, %s): %s", e.From.UTC().Format(time.RFC3339Nano), e.To.UTC().Format(time.RFC3339Nano), e.Reason)
}

// Validate checks s: an entity id (for an entity selection) and a resource
// by the rules of docs/design.md §2 (a *schema.ValidationError), a known
// window (*UnknownWindowError), a range with From before To within the
// years 1 to 9999 (*RangeError), and limit names that a snapshot can hold
// (a *schema.InvalidNameError), at most MaxLimitNames of them (a
// *schema.ValidationError). It is what every read checks first.
func (s Selection) Validate() error {
	if s.entity != "" {
		if err := schema.ValidateEntityID(s.entity); err != nil {
			return fmt.Errorf("usage: %w", err)
		}
	}
	if err := schema.ValidateResource(s.resource); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if !s.window.known() {
		return &UnknownWindowError{Text: schema.TruncateValue(string(s.window))}
	}
	switch {
	case s.from.Before(minInstant) || s.to.After(maxInstant):
		return &RangeError{From: s.from, To: s.to, Reason: "outside the years 1 to 9999"}
	case !s.from.Before(s.to):
		return &RangeError{From: s.from, To: s.to, Reason: "from is not before to"}
	}
	if len(s.limits) > MaxLimitNames {
		return fmt.Errorf("usage: %w", schema.NewValidationError("limits", strings.Join(s.limits, ","),
			"more than "+strconv.Itoa(MaxLimitNames)+" limit names"))
	}
	for _, n := range s.limits {
		if err := schema.ValidateLimitName(n); err != nil {
			return fmt.Errorf("usage: %w", err)
		}
	}
	return nil
}

// starts returns the first and the last window start of s's kind in
// [From, To); ok is false when no window of that kind starts in it.
func (s Selection) starts() (first, last time.Time, ok bool) {
	first, last = s.window.firstFrom(s.from), s.window.lastBefore(s.to)
	return first, last, !first.After(last)
}

// wants reports whether s keeps a limit called name.
func (s Selection) wants(name string) bool {
	if s.limits == nil {
		return true
	}
	_, found := slices.BinarySearch(s.limits, name)
	return found
}
