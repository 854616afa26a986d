package bucket

import (
	"math"
	"math/big"
	"testing"
)

// the property: `//` is floor division.
func TestFloorDiv(t *testing.T) {
	const minI, maxI = math.MinInt64, math.MaxInt64
	tests := []struct {
		a, b, floor, ceil int64
	}{
		{7, 2, 3, 4},
		{-7, 2, -4, -3},
		{7, -2, -4, -3},
		{-7, -2, 3, 4},
		{-1500, 1000, -2, -1}, // available(tk = −1500) (docs/design.md §3 example 4)
		{-500, 1000, -1, 0},   // snapshot contribution of a −500 milli release
		{500, 1000, 0, 1},
		{-1000, 1000, -1, -1}, // exact negatives are not rounded
		{-3000, 1000, -3, -3},
		{-1001, 1000, -2, -1},
		{-999, 1000, -1, 0},
		{0, 1000, 0, 0},
		{0, -7, 0, 0},
		{6, -3, -2, -2},
		{minI, 1, minI, minI},
		{minI, 1000, -9223372036854776, -9223372036854775},
		{minI, 2, minI / 2, minI / 2},
		{minI, maxI, -2, -1},
		{minI, minI, 1, 1},
		{maxI, minI, -1, 0},
		{minI + 1, -1, maxI, maxI},
		{minI, -1, minI, minI}, // 2^63 does not fit: wraps like Go's `/`
		{maxI, 1000, 9223372036854775, 9223372036854776},
		{maxI, -1, -maxI, -maxI},
		{maxI, maxI, 1, 1},
		{-1, maxI, -1, 0},
		{1, minI, -1, 0},
	}
	for _, tc := range tests {
		if got := FloorDiv(tc.a, tc.b); got != tc.floor {
			t.Errorf("FloorDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.floor)
		}
		if got := CeilDiv(tc.a, tc.b); got != tc.ceil {
			t.Errorf("CeilDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.ceil)
		}
	}
}

func TestFloorDivByZeroPanics(t *testing.T) {
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		_ = FloorDiv(1, 0)
		return false
	}()
	if !panicked {
		t.Fatal("FloorDiv(1, 0) did not panic")
	}
}

// FloorDiv and CeilDiv equal Python's a // b and -(-a // b) for every int64
// pair except the documented MinInt64 / -1 wrap.
func FuzzFloorDiv(f *testing.F) {
	f.Add(int64(7), int64(2))
	f.Add(int64(-1500), int64(1000))
	f.Add(int64(math.MinInt64), int64(-1))
	f.Add(int64(math.MinInt64), int64(1000))
	f.Add(int64(math.MaxInt64), int64(-3))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if b == 0 || (a == math.MinInt64 && b == -1) {
			return
		}
		want := floorDivBig(bi(a), bi(b))
		if got := FloorDiv(a, b); got != want.Int64() {
			t.Fatalf("FloorDiv(%d, %d) = %d, want %s", a, b, got, want)
		}
		wantCeil := new(big.Int).Neg(floorDivBig(new(big.Int).Neg(bi(a)), bi(b)))
		if got := CeilDiv(a, b); got != wantCeil.Int64() {
			t.Fatalf("CeilDiv(%d, %d) = %d, want %s", a, b, got, wantCeil)
		}
	})
}

func TestMulDiv(t *testing.T) {
	const maxI = math.MaxInt64
	tests := []struct {
		a, b, c, q int64
		exact      bool
	}{
		{0, 0, 1, 0, true},
		{61_000, 1000, 60_000, 1016, true}, // docs/design.md §3 example 3
		{1016, 60_000, 1000, 60_960, true},
		{500, 60_000, 1000, 30_000, true},                           // docs/design.md §3 example 5
		{100_000_000_000, 1_000_000_000_000_000, 1000, maxI, false}, // 1e23: saturates
		{100_000_000_000, 1_000_000_000_000_000, 100_000_000_000_000_000, 1_000_000_000, true},
		{maxI, maxI, maxI, maxI, true},
		{maxI, maxI, 1, maxI, false},
		{maxI, 2, 2, maxI, true},
		{maxI, 2, 1, maxI, false},
		{1 << 62, 2, 1, maxI, false}, // 2^63: one past the int64 range
		{1 << 62, 4, 2, maxI, false},
		{maxI, 3, 4, 6917529027641081855, true},
	}
	for _, tc := range tests {
		q, exact := MulDiv(tc.a, tc.b, tc.c)
		if q != tc.q || exact != tc.exact {
			t.Errorf("MulDiv(%d, %d, %d) = (%d, %v), want (%d, %v)", tc.a, tc.b, tc.c, q, exact, tc.q, tc.exact)
		}
	}
	for _, bad := range [][3]int64{{-1, 1, 1}, {1, -1, 1}, {1, 1, 0}, {1, 1, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MulDiv%v did not panic", bad)
				}
			}()
			MulDiv(bad[0], bad[1], bad[2])
		}()
	}
}

// MulDiv equals floor(a×b/c) on unbounded integers, or saturates exactly
// when that quotient exceeds MaxInt64.
func FuzzMulDiv(f *testing.F) {
	f.Add(int64(100_000_000_000), int64(1_000_000_000_000_000), int64(1000))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(1), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		if a < 0 || b < 0 || c <= 0 {
			return
		}
		want := new(big.Int).Mul(bi(a), bi(b))
		want.Div(want, bi(c))
		q, exact := MulDiv(a, b, c)
		if want.IsInt64() {
			if !exact || q != want.Int64() {
				t.Fatalf("MulDiv(%d, %d, %d) = (%d, %v), want %s", a, b, c, q, exact, want)
			}
		} else if exact || q != math.MaxInt64 {
			t.Fatalf("MulDiv(%d, %d, %d) = (%d, %v), want saturation (true %s)", a, b, c, q, exact, want)
		}
	})
}

func TestSaturatingAddSub(t *testing.T) {
	const minI, maxI = math.MinInt64, math.MaxInt64
	for _, tc := range []struct{ a, b, sum, diff int64 }{
		{1, 2, 3, -1},
		{maxI, 1, maxI, maxI - 1},
		{minI, -1, minI, minI + 1},
		{minI, 1, minI + 1, minI},
		{maxI, -1, maxI - 1, maxI},
		{0, minI, minI, maxI},
		{-1, minI, minI, maxI},
		{maxI, maxI, maxI, 0},
		{minI, minI, minI, 0},
		{maxI, minI, -1, maxI},
		{minI, maxI, -1, minI},
	} {
		if got := AddSat(tc.a, tc.b); got != tc.sum {
			t.Errorf("AddSat(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.sum)
		}
		if got := SubSat(tc.a, tc.b); got != tc.diff {
			t.Errorf("SubSat(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.diff)
		}
	}
	r := newRand(1)
	for range 20000 {
		a, b := anyInt64(r), anyInt64(r)
		clamp := func(v *big.Int) int64 {
			if v.Cmp(bi(maxI)) > 0 {
				return maxI
			}
			if v.Cmp(bi(minI)) < 0 {
				return minI
			}
			return v.Int64()
		}
		if got, want := AddSat(a, b), clamp(new(big.Int).Add(bi(a), bi(b))); got != want {
			t.Fatalf("AddSat(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := SubSat(a, b), clamp(new(big.Int).Sub(bi(a), bi(b))); got != want {
			t.Fatalf("SubSat(%d, %d) = %d, want %d", a, b, got, want)
		}
	}
}
