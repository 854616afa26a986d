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
// replaced parameters while a cron matches (docs/design.md §14). Quotas are
// not supported yet: a refill amount of 0 is the quota form of ADR-137,
// which needs a reset schedule or reset_after, and [Limit.Validate]
// rejects it.
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
	// Zone is the IANA time zone its schedule reads the clock in; "" is
	// UTC. Every scheduled limit of one config level shares one zone.
	Zone string
}

// Field names carried by the ValidationErrors of [Limit.Validate].
const (
	FieldCapacity     = "capacity"
	FieldRefillAmount = "refill_amount"
	FieldRefillPeriod = "refill_period_seconds"
	FieldSoft         = "soft"
	FieldSchedule     = "schedule"
	FieldZone         = "tz"
)

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
	if l.Schedule == "" {
		l.Zone = ""
	}
	return l
}

// ParamSchedule decodes l's schedule and zone: an empty schedule and UTC
// when it has none. A limit that passes [Limit.Validate] decodes.
func (l Limit) ParamSchedule() (schedule.Schedule, *time.Location, error) {
	return schedule.DecodeIn(l.Schedule, l.Zone)
}

// RefillPeriodSeconds is the refill period in whole seconds, as stored in
// `l_{n}_rp`. A period that is not a whole number of seconds is truncated;
// [Limit.Validate] rejects such a period.
func (l Limit) RefillPeriodSeconds() int64 { return int64(l.RefillPeriod / time.Second) }

// Validate checks l against docs/design.md §2: a valid limit name
// (schema.ValidateLimitName: not `wcu` or another reserved name), capacity
// > 0, refill amount > 0, a refill period that is positive and a whole
// number of seconds, soft not on `wcu`, and capacity and refill amount small
// enough that their millitoken values fit an int64 ([MaxTokens]).
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
	case l.RefillAmount == 0:
		return l.invalid(FieldRefillAmount, 0,
			"a refill amount of 0 makes a quota, which needs a reset schedule or reset_after; quotas are not supported by this version")
	case l.RefillAmount < 0:
		return l.invalid(FieldRefillAmount, l.RefillAmount, "must be > 0")
	case l.RefillAmount > MaxTokens:
		return l.invalid(FieldRefillAmount, l.RefillAmount, "must be at most "+strconv.FormatInt(MaxTokens, 10)+" (× 1000 must fit int64)")
	case l.RefillPeriod <= 0:
		return schema.NewValidationError(FieldRefillPeriod, l.RefillPeriod.String(), "limit "+strconv.Quote(l.Name)+": must be > 0")
	case l.RefillPeriod%time.Second != 0:
		return schema.NewValidationError(FieldRefillPeriod, l.RefillPeriod.String(), "limit "+strconv.Quote(l.Name)+": must be a whole number of seconds")
	case l.Schedule == "" && l.Zone != "":
		return schema.NewValidationError(FieldZone, l.Zone, "limit "+strconv.Quote(l.Name)+": a time zone without a schedule")
	}
	if l.Schedule != "" {
		if l.Name == schema.WCULimit {
			return schema.NewValidationError(FieldSchedule, l.Schedule, "the internal wcu limit has no schedule")
		}
		if _, err := schedule.Decode(l.Schedule); err != nil {
			return schema.NewValidationError(FieldSchedule, l.Schedule, "limit "+strconv.Quote(l.Name)+": "+err.Error())
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
	b = strconv.AppendInt(b, l.RefillAmount, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, l.RefillPeriodSeconds(), 10)
	b = append(b, 's')
	if l.Capacity != l.RefillAmount {
		b = append(b, " burst "...)
		b = strconv.AppendInt(b, l.Capacity, 10)
	}
	if l.Soft {
		b = append(b, " soft"...)
	}
	if l.Schedule != "" {
		b = append(b, " schedule "...)
		b = append(b, l.Schedule...)
		if l.Zone != "" {
			b = append(b, " in "...)
			b = append(b, l.Zone...)
		}
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
		if l.Schedule != "" {
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
