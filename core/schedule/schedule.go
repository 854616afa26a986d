package schedule

import (
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// Entry is one entry of a parameter schedule (docs/design.md §14): while
// its Cron matches, a limit's parameters are scaled, or replaced by
// absolute ones.
type Entry struct {
	// Cron is when the entry is in force.
	Cron Cron
	// ScalePerMille scales capacity and refill amount while the entry is
	// in force (500 is half, 2000 double); zero when the entry sets
	// absolute parameters instead.
	ScalePerMille int64
	// Capacity and RefillAmount (whole tokens) and RefillPeriodSeconds
	// replace the limit's own while the entry is in force; a zero one
	// leaves the limit's own.
	Capacity, RefillAmount, RefillPeriodSeconds int64
}

// Bounds on an entry's values, as the Python client of the same table
// holds them: a value beyond them is refused, never clamped.
const (
	MaxTokens        = 1_000_000_000_000_000 // capacity and refill amount, whole tokens
	MaxPeriodSeconds = 1_000_000_000
	MaxScalePerMille = 1_000_000_000 // a scale of a million
)

// Schedule is a limit's parameter schedule: its entries in order; at an
// instant the first entry whose Cron matches is in force, and with none in
// force the limit's own parameters hold. The empty Schedule changes
// nothing.
type Schedule []Entry

// Resets is a calendar quota's reset schedule: the quota resets at every
// edge of any of its entries (docs/design.md §14).
type Resets []Cron

// Validate reports an entry that is not exactly one of a scale or some
// absolute parameters, or a value out of bounds, as an *EntryError.
func (e Entry) Validate() error {
	abs := e.Capacity != 0 || e.RefillAmount != 0 || e.RefillPeriodSeconds != 0
	switch {
	case e.Cron.Never():
		return &EntryError{Entry: e, Reason: "the cron matches no minute of any year"}
	case e.ScalePerMille != 0 && abs:
		return &EntryError{Entry: e, Reason: "sets both a scale and absolute parameters; an entry sets exactly one of them"}
	case e.ScalePerMille == 0 && !abs:
		return &EntryError{Entry: e, Reason: "sets neither a scale nor an absolute parameter"}
	case e.ScalePerMille < 0 || e.ScalePerMille > MaxScalePerMille:
		return &EntryError{Entry: e, Reason: "scale out of range (1 to 1,000,000,000 per mille)"}
	case e.Capacity < 0 || e.Capacity > MaxTokens, e.RefillAmount < 0 || e.RefillAmount > MaxTokens:
		return &EntryError{Entry: e, Reason: "capacity and refill amount are whole tokens from 1 to 10^15"}
	case e.RefillPeriodSeconds < 0 || e.RefillPeriodSeconds > MaxPeriodSeconds:
		return &EntryError{Entry: e, Reason: "refill period is whole seconds from 1 to 10^9"}
	}
	return nil
}

// Validate validates every entry of s.
func (s Schedule) Validate() error {
	for _, e := range s {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate refuses a reset entry that matches no minute of any year
// (`0 0 30 2 *`): it would reset nothing, which is never what an operator
// means. A stored one is still read, and resets nothing.
func (r Resets) Validate() error {
	for _, c := range r {
		if c.Never() {
			return &EntryError{Entry: Entry{Cron: c}, Reason: "the cron matches no minute of any year"}
		}
	}
	return nil
}

// EntryError reports a schedule entry Validate refuses.
type EntryError struct {
	Entry  Entry
	Reason string
}

// Error implements error.
func (e *EntryError) Error() string {
	return "schedule: entry " + e.Entry.Cron.String() + ": " + e.Reason
}

// InForce returns the entry of s in force at now in loc, or nil.
func (s Schedule) InForce(now time.Time, loc *time.Location) *Entry {
	for i := range s {
		if s[i].Cron.Matches(now, loc) {
			return &s[i]
		}
	}
	return nil
}

// Effective returns a limit's stored parameters p (millitokens and ms) as
// s has them at now in loc: unchanged with no entry in force; scaled by
// the entry's per-mille (capacity and a non-zero refill amount at least 1
// millitoken, the period unchanged); or with the entry's absolute values
// in place of those it sets. The scaled values truncate the same float
// product the Python client computes, so both clients agree to the
// millitoken. GrantShards and TopUp pass through.
func (s Schedule) Effective(p bucket.Params, now time.Time, loc *time.Location) bucket.Params {
	e := s.InForce(now, loc)
	if e == nil {
		return p
	}
	return e.Apply(p)
}

// Apply returns p as entry e has it while in force (see
// Schedule.Effective).
func (e *Entry) Apply(p bucket.Params) bucket.Params {
	if e.ScalePerMille != 0 {
		scale := float64(e.ScalePerMille) / 1000
		p.Capacity = max(1, int64(float64(p.Capacity)*scale))
		if p.RefillAmount != 0 {
			p.RefillAmount = max(1, int64(float64(p.RefillAmount)*scale))
		}
		return p
	}
	if e.Capacity != 0 {
		p.Capacity = e.Capacity * bucket.MilliPerToken
	}
	if e.RefillAmount != 0 {
		p.RefillAmount = e.RefillAmount * bucket.MilliPerToken
	}
	if e.RefillPeriodSeconds != 0 {
		p.RefillPeriod = e.RefillPeriodSeconds * 1000
	}
	return p
}

// NextChange returns the earliest instant after now at which an entry of
// s starts or stops being in force (a boundary at which the effective
// parameters may change); ok is false when none comes within the scan
// bound.
func (s Schedule) NextChange(now time.Time, loc *time.Location) (next time.Time, ok bool) {
	for _, e := range s {
		if t, found := e.Cron.NextChange(now, loc); found && (!ok || t.Before(next)) {
			next, ok = t, true
		}
	}
	return next, ok
}

// PrevEdge returns the latest reset edge of r at or before now in loc
// (the latest over its entries); ok is false when none has one within the
// scan bound, and the quota has then nothing to reset.
func (r Resets) PrevEdge(now time.Time, loc *time.Location) (prev time.Time, ok bool) {
	for _, c := range r {
		if t, found := c.PrevEdge(now, loc); found && (!ok || t.After(prev)) {
			prev, ok = t, true
		}
	}
	return prev, ok
}

// NextEdge returns the earliest reset edge of r after now in loc: the
// instant a quota's retry-after names when the reset comes first.
func (r Resets) NextEdge(now time.Time, loc *time.Location) (next time.Time, ok bool) {
	for _, c := range r {
		if t, found := c.NextEdge(now, loc); found && (!ok || t.Before(next)) {
			next, ok = t, true
		}
	}
	return next, ok
}

// NextBoundary returns the earliest instant after now at which anything
// s and r schedule can change a bucket: a parameter boundary or a reset
// edge. A writer stamps it into the bucket's vu, so that the fast path
// stops at it and a materialising pass applies what changed.
func NextBoundary(s Schedule, r Resets, now time.Time, loc *time.Location) (time.Time, bool) {
	a, okA := s.NextChange(now, loc)
	b, okB := r.NextEdge(now, loc)
	switch {
	case okA && okB:
		if b.Before(a) {
			return b, true
		}
		return a, true
	case okA:
		return a, true
	}
	return b, okB
}

// Zone returns the time zone an item's sched_tz names: UTC when it has
// none, and a *ZoneError for a name the zone database does not hold.
func Zone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, &ZoneError{Name: name, Err: err}
	}
	return loc, nil
}

// ZoneError reports a time zone name the zone database does not hold.
type ZoneError struct {
	Name string
	Err  error
}

// Error implements error.
func (e *ZoneError) Error() string { return "schedule: time zone " + e.Name + ": " + e.Err.Error() }

// Unwrap returns the zone database's error.
func (e *ZoneError) Unwrap() error { return e.Err }

// DecodeIn reads a parameter schedule in the stored form and the zone it
// reads the clock in (an IANA name, "" for UTC): what a config item's
// l_{n}_sched and sched_tz, or a bucket's, hold. "" and None give the
// empty schedule and UTC, whatever the zone. Errors are Decode's and
// Zone's.
func DecodeIn(text, zone string) (Schedule, *time.Location, error) {
	if text == "" || text == None {
		return nil, time.UTC, nil
	}
	s, err := Decode(text)
	if err != nil {
		return nil, nil, err
	}
	loc, err := Zone(zone)
	if err != nil {
		return nil, nil, err
	}
	return s, loc, nil
}
