package bucket

import "math"

// NeverFull is what [FullAt] returns for a limit that never reaches its
// ceiling by refill (it does not drip).
const NeverFull = math.MaxInt64

// FullAt returns the first instant (epoch ms) at which a dripping limit
// with stored balance tk as of rf reaches its ceiling by refill alone
// (docs/decisions.md P25):
//
//	tk >= ceil:  rf
//	otherwise:   rf + ceil((ceil − tk) × period / rate)
//
// With the lazy refill of [Refill], add = (elapsed × rate) // period is
// below ceil − tk for every elapsed < FullAt − rf, so until that instant
// no refill is capped and min(ceil, tk + add) is tk + add: a debit made
// before FullAt is never re-credited by a later refill. A limit that does
// not drip (rate or period ≤ 0) gives [NeverFull]; an instant past the
// int64 range saturates to NeverFull.
func FullAt(tk, rf, ceil, rate, period int64) int64 {
	if tk >= ceil {
		return rf
	}
	if rate <= 0 || period <= 0 {
		return NeverFull
	}
	deficit := uint64(ceil) - uint64(tk) // exact: ceil > tk
	if deficit > math.MaxInt64 {
		return NeverFull
	}
	return AddSat(rf, CeilMulDiv(int64(deficit), period, rate))
}

// FullAt is [FullAt] with the share's ceiling, rate and period.
func (s Share) FullAt(tk, rf int64) int64 { return FullAt(tk, rf, s.Ceiling, s.Rate, s.Period) }
