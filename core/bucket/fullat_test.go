package bucket

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFullAt pins worked examples: the first instant the lazy refill
// reaches the ceiling.
func TestFullAt(t *testing.T) {
	tests := []struct {
		name                       string
		tk, rf, ceil, rate, period int64
		want                       int64
	}{
		// 100 per minute: 100_000 milli per 60_000 ms, 5/3 milli per ms.
		{"at the ceiling", 100_000, 1000, 100_000, 100_000, 60_000, 1000},
		{"above a lowered ceiling", 150_000, 1000, 100_000, 100_000, 60_000, 1000},
		{"one token short: 600 ms exactly", 99_000, 1000, 100_000, 100_000, 60_000, 1600},
		{"empty: 60 s", 0, 0, 100_000, 100_000, 60_000, 60_000},
		{"84 left: 16 tokens, 9600 ms", 84_000, 0, 100_000, 100_000, 60_000, 9600},
		{"not exact: rounds up", 99_999, 0, 100_000, 100_000, 60_000, 1},
		{"1 milli per 3 ms, 2 short: 6 ms", 8, 10, 10, 1, 3, 16},
		{"1 milli per 3 ms over 7: 1 short, ceil(3/7)=1", 9, 10, 10, 7, 3, 11},
		{"debt: 2 capacities", -100_000, 0, 100_000, 100_000, 60_000, 120_000},
		{"no drip", 0, 5, 100_000, 0, 60_000, NeverFull},
		{"corrupt period", 0, 5, 100_000, 100_000, 0, NeverFull},
		{"saturates", math.MinInt64, math.MaxInt64 - 10, math.MaxInt64, 1, math.MaxInt64, NeverFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FullAt(tt.tk, tt.rf, tt.ceil, tt.rate, tt.period); got != tt.want {
				t.Fatalf("FullAt = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestFullAtIsTheFirstCappedInstant: against Refill itself, on random
// states: one millisecond before FullAt the refill has not reached the
// ceiling; at FullAt it has. So a debit at any instant before FullAt is
// re-credited by no later refill.
func TestFullAtIsTheFirstCappedInstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200_000 {
		ceil := rng.Int64N(1_000_000_000) + 1
		tk := ceil - rng.Int64N(3*ceil) // from ceil − 3 ceil up to ceil
		rate := rng.Int64N(1_000_000) + 1
		period := rng.Int64N(86_400_000) + 1
		rf := rng.Int64N(1 << 42)
		at := FullAt(tk, rf, ceil, rate, period)
		if tk >= ceil {
			if at != rf {
				t.Fatalf("full already: FullAt = %d, want rf %d", at, rf)
			}
			continue
		}
		if at <= rf {
			t.Fatalf("FullAt(%d, %d, %d, %d, %d) = %d not after rf", tk, rf, ceil, rate, period, at)
		}
		if b, _ := Refill(tk, rf, at-1, ceil, rate, period); b >= ceil {
			t.Fatalf("FullAt(%d, %d, %d, %d, %d) = %d, but the balance is %d at %d", tk, rf, ceil, rate, period, at, b, at-1)
		}
		if b, _ := Refill(tk, rf, at, ceil, rate, period); b != ceil {
			t.Fatalf("FullAt(%d, %d, %d, %d, %d) = %d, but the balance is %d there", tk, rf, ceil, rate, period, at, b)
		}
		// The definition on big integers.
		want := new(big.Int).Mul(big.NewInt(ceil-tk), big.NewInt(period))
		want.Add(want, big.NewInt(rate-1))
		want.Quo(want, big.NewInt(rate))
		want.Add(want, big.NewInt(rf))
		if want.Cmp(big.NewInt(at)) != 0 {
			t.Fatalf("FullAt = %d, want %s", at, want)
		}
	}
}

// TestCeilMulDiv pins ⌈a × b / c⌉ on worked examples, products past 64 bits
// and saturation.
func TestCeilMulDiv(t *testing.T) {
	for _, c := range []struct{ a, b, c, want int64 }{
		{0, 5, 3, 0},
		{6, 10, 3, 20}, // exact
		{7, 10, 3, 24}, // 23.33…
		{100_000, 60_000, 100_000, 60_000},
		{100_000, 60_000, 7_000, 857_143}, // 857 142.857…
		{math.MaxInt64, 2, 2, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, 1, math.MaxInt64}, // saturates
		{1 << 40, 1 << 40, (1 << 40) + 1, (1 << 40) - 1 + 1},
	} {
		if got := CeilMulDiv(c.a, c.b, c.c); got != c.want {
			t.Errorf("CeilMulDiv(%d, %d, %d) = %d, want %d", c.a, c.b, c.c, got, c.want)
		}
	}
}
