package bucket

import (
	"math"
	"math/big"
	"math/rand/v2"
)

// This file holds the math/big reference arithmetic the tests compare with
// (Python's unbounded integers) and the seeded input generators.

// newRand returns the fixed-seed source every property test uses, so a
// failure reproduces exactly.
func newRand(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(0x5eed, stream)) }

func bi(v int64) *big.Int { return big.NewInt(v) }

// floorDivBig is Python's a // b on unbounded integers.
func floorDivBig(a, b *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if m.Sign() != 0 && m.Sign() != b.Sign() {
		q.Sub(q, big.NewInt(1))
	}
	return q
}

func minBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// refillBig is docs/design.md §3 on unbounded integers, with the package's documented
// no-drip rule for a non-positive rate or period.
func refillBig(tk, rf, now, ceil, rate, period int64) (*big.Int, *big.Int) {
	T, C, RF := bi(tk), bi(ceil), bi(rf)
	elapsed := new(big.Int).Sub(bi(now), RF)
	if rate <= 0 || period <= 0 || elapsed.Sign() <= 0 {
		return minBig(T, C), RF
	}
	add := floorDivBig(new(big.Int).Mul(elapsed, bi(rate)), bi(period))
	if add.Sign() == 0 {
		return minBig(T, C), RF
	}
	used := floorDivBig(new(big.Int).Mul(add, bi(period)), bi(rate))
	return minBig(C, new(big.Int).Add(T, add)), new(big.Int).Add(RF, used)
}

// anyInt64 draws from a mix of magnitudes and edge values so that the whole
// int64 range, its bounds and the realistic region are all exercised.
func anyInt64(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		edges := [...]int64{0, 1, -1, 2, 999, 1000, 1001, -999, -1000, -1001,
			math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
			math.MaxInt64 / 1000, math.MinInt64 / 1000, 1 << 32, -(1 << 32)}
		return edges[r.IntN(len(edges))]
	case 1:
		return int64(r.Uint64())
	case 2, 3:
		return r.Int64N(2_000_001) - 1_000_000
	default:
		// Log-uniform magnitude with a random sign.
		v := r.Int64N(int64(1) << uint(r.IntN(63)))
		if r.IntN(3) == 0 {
			v = -v
		}
		return v
	}
}

// positive draws a positive value, log-uniform up to 2^bitsMax.
func positive(r *rand.Rand, bitsMax int) int64 {
	return 1 + r.Int64N(int64(1)<<uint(1+r.IntN(bitsMax)))
}
