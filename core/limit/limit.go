// Package limit is the Limit value: one named token-bucket limit as an
// operator configures it, in whole tokens and whole seconds (docs/design.md §2 R5–R7,
// docs/design.md §2). It converts to the millitoken parameters of the bucket arithmetic
// with [Limit.Params].
//
// A Limit is a plain comparable value; the constructors and the With/As
// methods return copies. Construct, then [Limit.Validate] at the API boundary:
// the constructors do not check their arguments.
//
//	limit.PerMinute("rpm", 60)                 // 60 tokens, refilled 60 per minute
//	limit.PerMinute("tpm", 10_000).WithBurst(15_000)
//	limit.Custom("rph", 100, 5, 3*time.Minute) // 100 tokens, 5 more every 3 minutes
//	limit.PerSecond("rps", 10).AsSoft()        // overdraws instead of rejecting (ADR-151)
//
// A limit may carry a parameter schedule ([Limit.WithSchedule]): scaled or
// replaced parameters while a cron matches (docs/design.md §14). A calendar
// quota ([Quota]) does not drip: its balance returns to its allowance at
// every edge of its reset schedule (ADR-137/138). A session quota
// ([Session]) returns to its allowance when a window that opened on first
// use ends (ADR-139). A limit drips or resets, never both, and resets one
// way only.
//
//	limit.Quota("tpm-month", 100_000, schedule.Resets{schedule.MustParseCron("0 0 1 * *")}, "UTC")
//	limit.Session("tokens-5h", 10_000, 5*time.Hour)
//
// A session quota's window opens on its first use and is shared by every
// shard of the pair (docs/design.md §15); its writers pass the version
// gate at 0.15.0 first (docs/decisions.md P55).
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package limit

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Limit is one named limit: a bucket of Capacity whole tokens, refilled by
// RefillAmount whole tokens every RefillPeriod. Soft limits are debited like
// hard ones but never reject (ADR-151).
type Limit struct {
	// Name identifies the limit within a config level; see
	// schema.ValidateLimitName.
	Name string
	// Capacity is the most the bucket holds (the burst), whole tokens.
	Capacity int64
	// RefillAmount is the tokens added per RefillPeriod, whole tokens.
	RefillAmount int64
	// RefillPeriod is the refill period; a whole number of seconds on the
	// wire.
	RefillPeriod time.Duration
	// Soft marks a limit that overdraws instead of rejecting.
	Soft bool
	// Schedule is the limit's parameter schedule in its stored form
	// (schedule.Schedule.Encode, docs/design.md §14): while an entry is in
	// force the limit's parameters are scaled or replaced. "" for none. Set
	// it with [Limit.WithSchedule].
	Schedule string
	// ResetSchedule is a calendar quota's reset schedule in its stored form
	// (schedule.Resets.Encode): at every edge the balance returns to the
	// quota's allowance. "" for a limit that drips. Build a quota with
	// [Quota].
	ResetSchedule string
	// ResetAfter is a session quota's window length (ADR-139): the window
	// opens on the quota's first use and, once it has ended, the next use
	// opens a new one with the allowance back in full. A positive whole
	// number of seconds (`rsa` on the wire); 0 for a limit that is not a
	// session quota. Build one with [Session].
	ResetAfter time.Duration
	// Zone is the IANA time zone its schedules read the clock in; "" is
	// UTC. Every scheduled limit of one config level shares one zone.
	Zone string
}

// Field names carried by the ValidationErrors of [Limit.Validate].
const (
	FieldCapacity      = "capacity"
	FieldRefillAmount  = "refill_amount"
	FieldRefillPeriod  = "refill_period_seconds"
	FieldSoft          = "soft"
	FieldSchedule      = "schedule"
	FieldResetSchedule = "reset_schedule"
	FieldResetAfter    = "reset_after"
	FieldZone          = "tz"
)

// QuotaRefillPeriod is the refill period a [Quota] carries: a quota does not
// drip, so the period is inert; one second reads as "0 per second", as the
// Python client stores it.
const QuotaRefillPeriod = time.Second

// MaxTokens is the largest capacity or refill amount, in whole tokens, whose
// millitoken value (× bucket.MilliPerToken) fits an int64.
const MaxTokens = math.MaxInt64 / bucket.MilliPerToken

// MaxRefillPeriod is the longest refill period a Limit can carry: the
// largest whole number of seconds a time.Duration holds (about 292 years).
const MaxRefillPeriod = time.Duration(math.MaxInt64/int64(time.Second)) * time.Second

// PerSecond returns a limit of n tokens refilled n per second.
func PerSecond(name string, n int64) Limit { return Custom(name, n, n, time.Second) }

// PerMinute returns a limit of n tokens refilled n per minute.
func PerMinute(name string, n int64) Limit { return Custom(name, n, n, time.Minute) }

// PerHour returns a limit of n tokens refilled n per hour.
func PerHour(name string, n int64) Limit { return Custom(name, n, n, time.Hour) }

// PerDay returns a limit of n tokens refilled n per day (24 hours, not a
// calendar day: the bucket drips continuously).
func PerDay(name string, n int64) Limit { return Custom(name, n, n, 24*time.Hour) }

// Custom returns a limit of capacity tokens refilled refill tokens every
// period.
func Custom(name string, capacity, refill int64, period time.Duration) Limit {
	return Limit{Name: name, Capacity: capacity, RefillAmount: refill, RefillPeriod: period}
}

// Quota returns a calendar quota (ADR-137/138): an allowance of amount
// tokens that does not drip and returns to amount at every edge of resets,
// read in zone (an IANA name, "" for UTC). Its refill amount is 0 and its
// refill period [QuotaRefillPeriod].
func Quota(name string, amount int64, resets schedule.Resets, zone string) Limit {
	l := Limit{Name: name, Capacity: amount, RefillPeriod: QuotaRefillPeriod, ResetSchedule: resets.Encode(), Zone: zone}
	if l.ResetSchedule == "" {
		l.Zone = ""
	}
	return l
}

// Session returns a session quota (ADR-139): an allowance of amount tokens
// that does not drip, for a window of length window that opens on first use
// and, once ended, reopens in full at the next use. Its refill amount is 0
// and its refill period [QuotaRefillPeriod]. window must be a positive
// whole number of seconds ([Limit.Validate]).
func Session(name string, amount int64, window time.Duration) Limit {
	return Limit{Name: name, Capacity: amount, RefillPeriod: QuotaRefillPeriod, ResetAfter: window}
}

// IsQuota reports whether l is a quota: it carries a reset, a reset
// schedule (a calendar quota) or a window length (a session quota).
func (l Limit) IsQuota() bool { return l.ResetSchedule != "" || l.ResetAfter != 0 }

// IsSession reports whether l is a session quota: it carries a window
// length (ADR-139).
func (l Limit) IsSession() bool { return l.ResetAfter != 0 }

// ResetAfterSeconds is the session window length in whole seconds, as
// stored in `rsa` (0 for a limit that is not a session quota). A length
// that is not a whole number of seconds is truncated; [Limit.Validate]
// rejects such a length.
func (l Limit) ResetAfterSeconds() int64 { return int64(l.ResetAfter / time.Second) }

// WithBurst returns a copy of l whose capacity is c, leaving the refill rate
// alone: PerMinute("rpm", 60).WithBurst(100) holds up to 100 tokens and
// refills 60 a minute.
func (l Limit) WithBurst(c int64) Limit {
	l.Capacity = c
	return l
}

// AsSoft returns a copy of l marked soft.
func (l Limit) AsSoft() Limit {
	l.Soft = true
	return l
}

// AsHard returns a copy of l marked hard.
func (l Limit) AsHard() Limit {
	l.Soft = false
	return l
}

// WithSchedule returns l with the parameter schedule s in zone (an IANA
// name, "" for UTC): while an entry of s is in force, l's parameters are
// scaled or replaced (docs/design.md §14). An empty s removes the schedule.
// [Limit.Validate] checks both.
func (l Limit) WithSchedule(s schedule.Schedule, zone string) Limit {
	l.Schedule, l.Zone = s.Encode(), zone
	if l.Schedule == "" && l.ResetSchedule == "" {
		l.Zone = ""
	}
	return l
}

// WithResetAfter returns l with its session window length replaced by d
// (0 removes it). It changes no refill amount: on a limit that drips the
// result fails [Limit.Validate], since a limit drips or resets, never both
// (ADR-137); build a session quota with [Session].
func (l Limit) WithResetAfter(d time.Duration) Limit {
	l.ResetAfter = d
	return l
}

// WithResetSchedule returns a quota l with its reset schedule replaced by
// r in zone. It changes no refill amount: on a limit that drips the result
// fails [Limit.Validate], since a limit drips or resets, never both
// (ADR-137); build a quota with [Quota].
func (l Limit) WithResetSchedule(r schedule.Resets, zone string) Limit {
	l.ResetSchedule, l.Zone = r.Encode(), zone
	if l.Schedule == "" && l.ResetSchedule == "" {
		l.Zone = ""
	}
	return l
}

// Schedules decodes l's parameter schedule, reset schedule and zone, as
// schedule.Materialise takes them. A limit that passes [Limit.Validate]
// decodes.
func (l Limit) Schedules() (schedule.Schedule, schedule.Resets, *time.Location, error) {
	if l.Schedule == "" && l.ResetSchedule == "" {
		return nil, nil, time.UTC, nil
	}
	loc, err := schedule.Zone(l.Zone)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := schedule.Decode(l.Schedule)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := schedule.DecodeResets(l.ResetSchedule)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, r, loc, nil
}

// Resets decodes l's reset schedule and zone: no resets and UTC for a
// limit that drips. A limit that passes [Limit.Validate] decodes.
func (l Limit) Resets() (schedule.Resets, *time.Location, error) {
	if l.ResetSchedule == "" {
		return nil, time.UTC, nil
	}
	loc, err := schedule.Zone(l.Zone)
	if err != nil {
		return nil, nil, err
	}
	r, err := schedule.DecodeResets(l.ResetSchedule)
	if err != nil {
		return nil, nil, err
	}
	return r, loc, nil
}

// ParamSchedule decodes l's schedule and zone: an empty schedule and UTC
// when it has none. A limit that passes [Limit.Validate] decodes.
func (l Limit) ParamSchedule() (schedule.Schedule, *time.Location, error) {
	return schedule.DecodeIn(l.Schedule, l.Zone)
}

// RecoverySeconds is how long an idle bucket's state of l matters, in
// whole seconds, rounded up only when not whole (docs/design.md §2, bucket
// TTL): a dripping limit's time to refill from empty, cp / ra × rp, the
// slowest over its own parameters and those of every schedule entry; a
// calendar quota's current reset period, from the edge at or before now to
// the next one (or from now when none is behind), so that a bucket kept for
// at least that long outlives its period and a later fresh grant is the
// reset the calendar names; a session quota's window length exactly. 0 for
// a limit that cannot be read.
func (l Limit) RecoverySeconds(now time.Time) int64 {
	if l.IsSession() {
		return max(0, l.ResetAfterSeconds())
	}
	s, r, loc, err := l.Schedules()
	if err != nil {
		return 0
	}
	if l.IsQuota() {
		next, ok := r.NextEdge(now, loc)
		if !ok {
			return 0
		}
		from := now
		if prev, ok := r.PrevEdge(now, loc); ok {
			from = prev
		}
		return bucket.CeilDiv(next.Sub(from).Milliseconds(), 1000)
	}
	horizon := recoverySeconds(l.Params())
	for i := range s {
		horizon = max(horizon, recoverySeconds(s[i].Apply(l.Params())))
	}
	return horizon
}

// recoverySeconds is the time an empty limit takes to refill to capacity,
// cp / ra × rp, in whole seconds rounded up only when not whole (60 s for
// 100 a minute; 0 for a limit that does not drip).
func recoverySeconds(p bucket.Params) int64 {
	if p.RefillAmount <= 0 || p.RefillPeriod <= 0 || p.Capacity <= 0 {
		return 0
	}
	return bucket.CeilDiv(bucket.CeilMulDiv(p.Capacity, p.RefillPeriod, p.RefillAmount), 1000)
}

// RefillPeriodSeconds is the refill period in whole seconds, as stored in
// `l_{n}_rp`. A period that is not a whole number of seconds is truncated;
// [Limit.Validate] rejects such a period.
func (l Limit) RefillPeriodSeconds() int64 { return int64(l.RefillPeriod / time.Second) }

// Validate checks l against docs/design.md §2: a valid limit name
// (schema.ValidateLimitName: not `wcu` or another reserved name), capacity
// > 0, refill amount > 0 — or 0 with a reset, and only then: a limit drips
// or resets, never both (ADR-137) —, at most one reset (a reset schedule or
// a session window length, never both, ADR-139), a session window length
// that is a positive whole number of seconds, a refill period that is
// positive and a whole number of seconds, soft not on `wcu`, capacity and
// refill amount small enough that their millitoken values fit an int64
// ([MaxTokens]), and schedules and a zone that decode.
//
// Failures are *schema.ValidationError (*schema.InvalidNameError for the
// name), with Field one of the Field* constants or schema.FieldLimitName.
func (l Limit) Validate() error {
	if l.Soft && l.Name == schema.WCULimit {
		return schema.NewValidationError(FieldSoft, l.Name, "the internal wcu limit cannot be soft")
	}
	if err := schema.ValidateLimitName(l.Name); err != nil {
		return err
	}
	switch {
	case l.Capacity <= 0:
		return l.invalid(FieldCapacity, l.Capacity, "must be > 0")
	case l.Capacity > MaxTokens:
		return l.invalid(FieldCapacity, l.Capacity, "must be at most "+strconv.FormatInt(MaxTokens, 10)+" (× 1000 must fit int64)")
	case l.ResetAfter < 0:
		return schema.NewValidationError(FieldResetAfter, l.ResetAfter.String(), "limit "+strconv.Quote(l.Name)+": a session window length must be > 0")
	case l.ResetAfter%time.Second != 0:
		return schema.NewValidationError(FieldResetAfter, l.ResetAfter.String(), "limit "+strconv.Quote(l.Name)+
			": a session window length must be a whole number of seconds (it is stored in seconds)")
	case l.ResetAfter != 0 && l.ResetSchedule != "":
		return schema.NewValidationError(FieldResetAfter, l.ResetAfter.String(), "limit "+strconv.Quote(l.Name)+
			": a quota resets one way: a reset schedule (fixed calendar instants) or a session window opened on first use, never both (ADR-139)")
	case l.RefillAmount == 0 && !l.IsQuota():
		return l.invalid(FieldRefillAmount, 0,
			"a refill amount of 0 is a quota, which needs a reset schedule or a session window: without one the bucket never recovers (ADR-137); build it with limit.Quota or limit.Session")
	case l.RefillAmount > 0 && l.ResetSchedule != "":
		return schema.NewValidationError(FieldResetSchedule, l.ResetSchedule, "limit "+strconv.Quote(l.Name)+
			": a limit drips or resets, never both: a refill amount beside a reset schedule grants the allowance twice a period (ADR-137); a quota's refill amount is 0")
	case l.RefillAmount > 0 && l.ResetAfter != 0:
		return schema.NewValidationError(FieldResetAfter, l.ResetAfter.String(), "limit "+strconv.Quote(l.Name)+
			": a limit drips or resets, never both: a refill amount beside a session window grants more than the allowance a window (ADR-137); a quota's refill amount is 0")
	case l.RefillAmount < 0:
		return l.invalid(FieldRefillAmount, l.RefillAmount, "must be > 0")
	case l.RefillAmount > MaxTokens:
		return l.invalid(FieldRefillAmount, l.RefillAmount, "must be at most "+strconv.FormatInt(MaxTokens, 10)+" (× 1000 must fit int64)")
	case l.RefillPeriod <= 0:
		return schema.NewValidationError(FieldRefillPeriod, l.RefillPeriod.String(), "limit "+strconv.Quote(l.Name)+": must be > 0")
	case l.RefillPeriod%time.Second != 0:
		return schema.NewValidationError(FieldRefillPeriod, l.RefillPeriod.String(), "limit "+strconv.Quote(l.Name)+": must be a whole number of seconds")
	case l.Schedule == "" && l.ResetSchedule == "" && l.Zone != "":
		return schema.NewValidationError(FieldZone, l.Zone, "limit "+strconv.Quote(l.Name)+": a time zone without a schedule")
	}
	if l.Schedule != "" || l.ResetSchedule != "" {
		if l.Name == schema.WCULimit {
			return schema.NewValidationError(FieldSchedule, l.Schedule, "the internal wcu limit has no schedule")
		}
		sched, err := schedule.Decode(l.Schedule)
		if err != nil {
			return schema.NewValidationError(FieldSchedule, l.Schedule, "limit "+strconv.Quote(l.Name)+": "+err.Error())
		}
		if l.IsQuota() {
			for _, e := range sched {
				if e.RefillAmount != 0 {
					return schema.NewValidationError(FieldSchedule, l.Schedule, "limit "+strconv.Quote(l.Name)+
						": a quota never drips, so no schedule entry of it sets a refill amount (ADR-137)")
				}
			}
		}
		if r, err := schedule.DecodeResets(l.ResetSchedule); err != nil {
			return schema.NewValidationError(FieldResetSchedule, l.ResetSchedule, "limit "+strconv.Quote(l.Name)+": "+err.Error())
		} else if err := r.Validate(); err != nil {
			return schema.NewValidationError(FieldResetSchedule, l.ResetSchedule, "limit "+strconv.Quote(l.Name)+": "+err.Error())
		}
		if _, err := schedule.Zone(l.Zone); err != nil {
			return schema.NewValidationError(FieldZone, l.Zone, "limit "+strconv.Quote(l.Name)+": not a time zone the zone database holds")
		}
	}
	return nil
}

func (l Limit) invalid(field string, v int64, reason string) error {
	return schema.NewValidationError(field, strconv.FormatInt(v, 10), "limit "+strconv.Quote(l.Name)+": "+reason)
}

// Params returns the limit's stored bucket parameters in millitokens and
// milliseconds (docs/design.md §2): cp = Capacity × 1000, ra = RefillAmount × 1000,
// rp = RefillPeriod in ms. GrantShards and TopUp are zero (absent). The
// result is meaningful only for a limit that passes [Limit.Validate].
func (l Limit) Params() bucket.Params {
	return bucket.Params{
		Capacity:     l.Capacity * bucket.MilliPerToken,
		RefillAmount: l.RefillAmount * bucket.MilliPerToken,
		RefillPeriod: l.RefillPeriod.Milliseconds(),
	}
}

// String renders l for logs, e.g. `rpm: 60/60s burst 100 soft`.
func (l Limit) String() string {
	b := make([]byte, 0, 48)
	b = append(b, l.Name...)
	b = append(b, ": "...)
	if l.IsQuota() {
		b = append(b, "quota "...)
		b = strconv.AppendInt(b, l.Capacity, 10)
		if l.ResetAfter != 0 {
			b = append(b, " window "...)
			b = append(b, l.ResetAfter.String()...)
		}
	} else {
		b = strconv.AppendInt(b, l.RefillAmount, 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, l.RefillPeriodSeconds(), 10)
		b = append(b, 's')
	}
	if !l.IsQuota() && l.Capacity != l.RefillAmount {
		b = append(b, " burst "...)
		b = strconv.AppendInt(b, l.Capacity, 10)
	}
	if l.Soft {
		b = append(b, " soft"...)
	}
	if l.Schedule != "" {
		b = append(b, " schedule "...)
		b = append(b, l.Schedule...)
	}
	if l.ResetSchedule != "" {
		b = append(b, " resets "...)
		b = append(b, l.ResetSchedule...)
	}
	if l.Zone != "" {
		b = append(b, " in "...)
		b = append(b, l.Zone...)
	}
	return string(b)
}

// ValidateSet validates every limit of a set that one config level stores
// (docs/design.md §2: one item holds them all) and that no name appears twice.
// Failures are *schema.ValidationError; a duplicate has Field
// schema.FieldLimitName.
func ValidateSet(limits []Limit) error {
	seen := make(map[string]struct{}, len(limits))
	zone, zoned := "", false
	for _, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
		if l.Schedule != "" || l.ResetSchedule != "" {
			if zoned && l.Zone != zone {
				return schema.NewValidationError(FieldZone, l.Zone, "limit "+strconv.Quote(l.Name)+": every schedule of one limit set reads one time zone ("+strconv.Quote(zone)+")")
			}
			zone, zoned = l.Zone, true
		}
		if _, dup := seen[l.Name]; dup {
			return schema.NewInvalidNameError(schema.FieldLimitName, l.Name, "appears more than once in the limit set")
		}
		seen[l.Name] = struct{}{}
	}
	return nil
}

// SortByName sorts limits by name in place.
func SortByName(limits []Limit) {
	slices.SortFunc(limits, func(a, b Limit) int { return cmp.Compare(a.Name, b.Name) })
}

// Find returns the limit named name and whether it is in limits.
func Find(limits []Limit, name string) (Limit, bool) {
	for _, l := range limits {
		if l.Name == name {
			return l, true
		}
	}
	return Limit{}, false
}
