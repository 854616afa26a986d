package bucket

import "math/bits"

// Refill is the lazy refill of docs/design.md §3, bit-for-bit the reference
// arithmetic on unbounded integers:
//
//	elapsed = now - rf
//	if rate == 0 or elapsed <= 0:  return (min(tk, ceil), rf)
//	add = (elapsed * rate) // period
//	if add == 0:                   return (min(tk, ceil), rf)
//	used = (add * period) // rate
//	return (min(ceil, tk + add), rf + used)
//
// tk is the stored balance (millitokens, negative in debt), rf the stored
// refill timestamp, ceil/rate/period a [Share]. Every branch applies the clamp
// rule, so a balance above a lowered ceiling is trimmed; a balance is never
// raised except by elapsed-time refill. The returned rf' never moves
// backwards and never passes now.
//
// Products are formed in 128 bits and every intermediate is exact, so Refill
// matches the reference for all int64 inputs (no saturation; elapsed itself
// is computed without overflow). One deliberate difference: a negative rate
// or a non-positive period (a corrupt item) takes the no-drip branch, like
// rate == 0, where the reference would drain the balance (negative rate) or
// divide by zero (period 0).
//
// Do not persist or chain rf': used is floored, so rf' lags the time
// the credit actually paid for, and a later refill from rf' credits that time
// again (see docs/design.md §3 and the over-credit test in this package). Writers use
// [Materialise] and stamp rf with [StampRF].
func Refill(tk, rf, now, ceil, rate, period int64) (int64, int64) {
	if rate <= 0 || period <= 0 || now <= rf {
		return min(tk, ceil), rf
	}
	elapsed := uint64(now) - uint64(rf) // exact: now > rf
	r, p := uint64(rate), uint64(period)

	// add = elapsed*rate // period, a 128-bit quotient (addHi:addLo).
	hi, lo := bits.Mul64(elapsed, r)
	addHi := hi / p
	addLo, rem := bits.Div64(hi%p, lo, p)
	if addHi == 0 && addLo == 0 {
		return min(tk, ceil), rf
	}

	// balance = min(ceil, tk + add), compared without forming tk + add.
	var balance int64
	if tk >= ceil || addHi != 0 || addLo >= uint64(ceil)-uint64(tk) {
		balance = ceil
	} else {
		// tk < ceil and add < ceil - tk, so tk + add < ceil fits; the
		// wrapping conversion of addLo is undone by the wrapping add.
		balance = tk + int64(addLo)
	}

	// used = add*period // rate. add*period = elapsed*rate - rem, which is
	// below 2^64 × rate, so the quotient fits 64 bits and used <= elapsed.
	uLo, borrow := bits.Sub64(lo, rem, 0)
	used, _ := bits.Div64(hi-borrow, uLo, r)
	return balance, int64(uint64(rf) + used) // rf + used <= now
}

// Materialise returns the balance of one limit at now — the tk' of [Refill],
// including the clamp rule — and credited = balance − tk, the refill this
// pass credits (docs/design.md §3 refill_n; the rf-locked write ADDs
// credited − consumed). credited is negative when a balance above the ceiling
// is trimmed; it saturates rather than overflows (only possible for balances
// near the int64 bounds).
//
// Materialise deliberately returns no rf. A writer that moves rf stamps
// [StampRF] (docs/design.md §5: max(now, stored rf, every window start in force)),
// never the drift-compensated rf' of [Refill]. An in-memory chain (several
// Lease.Consume calls) does the same: whenever it keeps the returned balance
// as its new tk it sets rf = StampRF(rf, now), so that (tk, rf) always means
// "balance tk as of instant rf". Re-basing this way never credits more than a
// single refill over the whole interval would, and loses less than one
// millitoken per limit per re-base; re-basing only when credited > 0 is not
// enough (time spent at the ceiling would be credited again after the next
// consumption; see the tests).
func Materialise(tk, rf, now, ceil, rate, period int64) (balance, credited int64) {
	balance, _ = Refill(tk, rf, now, ceil, rate, period)
	return balance, SubSat(balance, tk)
}

// StampRF returns the rf a writer stamps after materialising at now:
// max(now, stored rf) (docs/design.md §5), so rf only grows (docs/design.md §2) and a
// writer whose clock lags never re-credits time. A writer that applies
// windows also folds every window start in force into the max (phase 2).
func StampRF(storedRF, now int64) int64 { return max(storedRF, now) }
