package bucket

import "math"

// ToMilli converts whole tokens to millitokens, reporting ok = false when
// tokens × 1000 does not fit an int64 (docs/design.md §2: such amounts are rejected at
// the API boundary). It is for writers building ADD deltas; the checks in this
// package are exact without it.
func ToMilli(tokens int64) (milli int64, ok bool) {
	if tokens > math.MaxInt64/MilliPerToken || tokens < math.MinInt64/MilliPerToken {
		return 0, false
	}
	return tokens * MilliPerToken, true
}

// Available returns a balance in whole tokens, FloorDiv(balance, 1000): an
// indebted balance of −1500 millitokens is −2 tokens, not −1 (docs/design.md §3).
func Available(balance int64) int64 { return FloorDiv(balance, MilliPerToken) }

// Covers reports the consume check of docs/design.md §3, balance >= amount × 1000,
// exactly for every int64 amount: since amount is a whole number, the test
// is Available(balance) >= amount, which cannot overflow. An amount whose
// ×1000 overflows is therefore never covered (and a hugely negative one
// always is), as in the reference.
func Covers(balance, amount int64) bool { return Available(balance) >= amount }

// Retry is the retry hint of docs/design.md §3 for one limit.
type Retry struct {
	// Short reports that the balance does not cover the request; the other
	// fields are zero when it is false.
	Short bool
	// Never reports that no wait makes the request pass by refill alone: the
	// limit does not drip (rate or period <= 0, e.g. a dripping limit whose
	// ra // S is 0), or the request is above the ceiling, which refill never
	// exceeds (docs/design.md §5's "larger than one shard's share"). Upstream reports
	// a finite wait in the second case that never suffices.
	Never bool
	// WaitMs is the wait in milliseconds when Short and not Never: for a
	// dripping limit time_ms + 1 with time_ms = (deficit × period) // rate,
	// for a quota max(0, resets_at_ms − now). It saturates at math.MaxInt64.
	WaitMs int64
}

// Seconds returns retry_after_seconds as upstream reports it: 0 when not
// short, WaitMs / 1000.0 otherwise — for a dripping limit exactly Python's
// (time_ms + 1) / 1000.0 — and +Inf when Never. +Inf is not representable in
// JSON; the error layer chooses what to report for it.
func (r Retry) Seconds() float64 {
	switch {
	case !r.Short:
		return 0
	case r.Never:
		return math.Inf(1)
	}
	return float64(r.WaitMs) / 1000.0
}

// DripRetryAfter returns the docs/design.md §3 hint for a dripping limit whose
// materialised balance (at the instant its refill is counted from) is
// balance and whose request is amount whole tokens:
//
//	deficit = amount×1000 − balance   (only when > 0)
//	time_ms = (deficit × period) // rate
//	WaitMs  = time_ms + 1
//
// deficit × period is formed in 128 bits. ceil is the limit's ceiling: a
// request above it is Never, as is any request on a limit that does not drip.
//
// Sufficiency: if balance was materialised at now from a stored (tk, rf) with
// rf <= now, and the request is not Never, the same stored state materialised
// at now + WaitMs covers it (proved in the tests). [Check] also handles
// rf > now.
func DripRetryAfter(balance, amount, ceil, rate, period int64) Retry {
	if Covers(balance, amount) {
		return Retry{}
	}
	requested, ok := ToMilli(amount)
	if !ok || requested > ceil || rate <= 0 || period <= 0 {
		// !ok here means amount×1000 > MaxInt64 >= any ceiling.
		return Retry{Short: true, Never: true}
	}
	deficit := uint64(requested) - uint64(balance) // exact: requested > balance
	timeMs, ok := mulDivU64(deficit, uint64(period), uint64(rate))
	if !ok || timeMs >= math.MaxInt64 {
		return Retry{Short: true, WaitMs: math.MaxInt64}
	}
	return Retry{Short: true, WaitMs: int64(timeMs) + 1}
}

// QuotaRetryAfter returns the docs/design.md §3 hint for a quota whose materialised
// balance is balance, request amount whole tokens, and next reset (the next
// calendar edge, or ws + rsa×1000 for a live session window) resetsAtMs:
// WaitMs = max(0, resetsAtMs − now), so Seconds() × 1000 == resetsAtMs − now.
func QuotaRetryAfter(balance, amount, resetsAtMs, now int64) Retry {
	if Covers(balance, amount) {
		return Retry{}
	}
	return Retry{Short: true, WaitMs: max(0, SubSat(resetsAtMs, now))}
}

// Status is the outcome of the consume check of one limit at one instant
// (docs/design.md §3): the numeric part of a LimitStatus (docs/design.md §5).
type Status struct {
	Balance   int64 // materialised balance tk1, millitokens
	Available int64 // Available(Balance): whole tokens, negative in debt
	Exceeded  bool  // the request is not covered (never set for a soft limit)
	Retry     Retry // the hint when Exceeded; zero otherwise
}

// Check materialises a dripping limit (or wcu) from its stored (tk, rf) at
// now with the per-shard parameters s, and applies the consume check and
// retry hint for amount whole tokens (docs/design.md §3).
//
// One difference from the bare docs/design.md §3 formula: when rf is ahead of now (another
// writer's clock ran ahead), refill only starts at rf, so the hint adds
// rf − now; it equals the formula whenever rf <= now.
//
// A quota needs its reset instant: use [Materialise] and [QuotaRetryAfter]
// (as [WouldRefillSatisfy] does). Passed a quota, Check reports a shortfall
// as Never.
func Check(tk, rf, now int64, s Share, amount int64) Status {
	balance, _ := Refill(tk, rf, now, s.Ceiling, s.Rate, s.Period)
	st := Status{Balance: balance, Available: Available(balance)}
	if Covers(balance, amount) {
		return st
	}
	st.Exceeded = true
	st.Retry = DripRetryAfter(balance, amount, s.Ceiling, s.Rate, s.Period)
	if !st.Retry.Never && rf > now {
		st.Retry.WaitMs = AddSat(st.Retry.WaitMs, SubSat(rf, now))
	}
	return st
}
