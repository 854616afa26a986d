package bucket

import (
	"math"
	"math/bits"
)

// FloorDiv returns a // b with Python semantics: the quotient rounded toward
// negative infinity, so FloorDiv(-1500, 1000) == -2 where Go's -1500/1000 is
// -1 (docs/design.md §3). Use it wherever the design writes `//`.
//
// b may be negative (the result is still the floor of the real quotient, as
// in Python). b == 0 panics, like Go's `/`. The one quotient that does not
// fit an int64, FloorDiv(math.MinInt64, -1) = 2^63, wraps to math.MinInt64
// exactly as Go's `/` does; no divisor in docs/design.md §3 is negative.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// CeilDiv returns the real quotient a / b rounded toward positive infinity
// (Python's -(-a // b)), computed without negating a so that a ==
// math.MinInt64 is exact. The b rules of [FloorDiv] apply:
// CeilDiv(math.MinInt64, -1) wraps to math.MinInt64, b == 0 panics.
func CeilDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) == (b < 0)) {
		q++
	}
	return q
}

// MulDiv returns (a × b) // c for a, b >= 0 and c > 0, forming the product in
// 128 bits so that it never overflows (docs/design.md §3: elapsed × ra, tokens × rp
// and deficit × rp all exceed int64 in realistic cases).
//
// When the quotient itself does not fit an int64, MulDiv saturates: it
// returns (math.MaxInt64, false). Saturation is safe for every refill-shaped
// use because a refill credit is clamped to a ceiling, and a ceiling is an
// int64: a saturated credit q = MaxInt64 still satisfies tk + q >= ceil for
// every tk >= ceil − MaxInt64 (in particular every tk >= 0), so
// min(ceil, tk + q), summed without overflow, is the same as with the exact
// credit. It is also safe for waits: 2^63 ms is 292 million years. (Only a
// debt below ceil − MaxInt64 ≈ −9.2×10^15 tokens could tell the difference;
// [Refill] does not use MulDiv and is exact even there.)
//
// MulDiv panics if a < 0, b < 0 or c <= 0: those are programming errors,
// not data (callers guard stored values first, as [Refill] does).
func MulDiv(a, b, c int64) (q int64, exact bool) {
	if a < 0 || b < 0 || c <= 0 {
		panic("bucket.MulDiv: operands must be a >= 0, b >= 0, c > 0")
	}
	u, ok := mulDivU64(uint64(a), uint64(b), uint64(c))
	if !ok || u > math.MaxInt64 {
		return math.MaxInt64, false
	}
	return int64(u), true
}

// CeilMulDiv returns ⌈a × b / c⌉ for a, b >= 0 and c > 0, formed in 128
// bits; a quotient past the int64 range saturates to math.MaxInt64. It
// panics on operands MulDiv refuses.
func CeilMulDiv(a, b, c int64) int64 {
	q, ok := MulDiv(a, b, c)
	if !ok || q == math.MaxInt64 {
		return math.MaxInt64
	}
	// Round up unless q × c == a × b (both products in 128 bits).
	hi, lo := bits.Mul64(uint64(q), uint64(c))
	phi, plo := bits.Mul64(uint64(a), uint64(b))
	if hi != phi || lo != plo {
		q++
	}
	return q
}

// mulDivU64 returns floor(a × b / c) for c > 0 and whether it fits 64 bits.
func mulDivU64(a, b, c uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	if hi >= c { // quotient >= 2^64
		return math.MaxUint64, false
	}
	q, _ := bits.Div64(hi, lo, c)
	return q, true
}

// AddSat returns a + b, saturated to the int64 range.
func AddSat(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

// SubSat returns a − b, saturated to the int64 range.
func SubSat(a, b int64) int64 {
	s := a - b
	if b < 0 && s < a { // a − b > a, wrapped
		return math.MaxInt64
	}
	if b > 0 && s > a { // a − b < a, wrapped
		return math.MinInt64
	}
	return s
}
