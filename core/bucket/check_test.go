package bucket

import (
	"math"
	"math/big"
	"testing"
)

func TestToMilli(t *testing.T) {
	for _, tc := range []struct {
		tokens, milli int64
		ok            bool
	}{
		{0, 0, true},
		{1, 1000, true},
		{-3, -3000, true},
		{math.MaxInt64 / 1000, math.MaxInt64 / 1000 * 1000, true},
		{math.MaxInt64/1000 + 1, 0, false},
		{math.MinInt64 / 1000, math.MinInt64 / 1000 * 1000, true},
		{math.MinInt64/1000 - 1, 0, false},
		{math.MaxInt64, 0, false},
	} {
		milli, ok := ToMilli(tc.tokens)
		if milli != tc.milli || ok != tc.ok {
			t.Errorf("ToMilli(%d) = (%d, %v), want (%d, %v)", tc.tokens, milli, ok, tc.milli, tc.ok)
		}
	}
}

// Covers is exactly tk1 >= amount×1000 on unbounded integers, for every
// int64 balance and amount (the product is never formed).
func TestCoversMatchesBig(t *testing.T) {
	check := func(balance, amount int64) {
		want := bi(balance).Cmp(new(big.Int).Mul(bi(amount), bi(1000))) >= 0
		if got := Covers(balance, amount); got != want {
			t.Fatalf("Covers(%d, %d) = %v, want %v", balance, amount, got, want)
		}
	}
	for _, tc := range [][2]int64{
		{1000, 1}, {999, 1}, {0, 0}, {-1, 0}, {-1000, -1}, {-1001, -1},
		{math.MaxInt64, math.MaxInt64 / 1000}, {math.MaxInt64, math.MaxInt64/1000 + 1},
		{math.MinInt64, math.MinInt64 / 1000}, {math.MinInt64, math.MinInt64/1000 - 1},
		{math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64},
	} {
		check(tc[0], tc[1])
	}
	r := newRand(8)
	for range 200_000 {
		check(anyInt64(r), anyInt64(r))
	}
}

func TestDripRetryAfter(t *testing.T) {
	tests := []struct {
		name                             string
		balance, amount, ceil, rate, per int64
		want                             Retry
		seconds                          float64
	}{
		{"covered", 1000, 1, 10_000, 1000, 1000, Retry{}, 0},
		{"covered in debt terms", -5000, -5, 10_000, 1000, 1000, Retry{}, 0},
		{"example 5", 500, 1, 60_000, 1000, 60_000, Retry{Short: true, WaitMs: 30_001}, 30.001},
		{"divisible deficit", 0, 1, 10_000, 1000, 1000, Retry{Short: true, WaitMs: 1001}, 1.001},
		{"debt", -1500, 1, 10_000, 1000, 1000, Retry{Short: true, WaitMs: 2501}, 2.501},
		{"rate zero", 0, 1, 10_000, 0, 1000, Retry{Short: true, Never: true}, math.Inf(1)},
		{"period zero", 0, 1, 10_000, 1000, 0, Retry{Short: true, Never: true}, math.Inf(1)},
		{"above the ceiling", 0, 11, 10_000, 1000, 1000, Retry{Short: true, Never: true}, math.Inf(1)},
		{"at the ceiling", 0, 10, 10_000, 1000, 1000, Retry{Short: true, WaitMs: 10_001}, 10.001},
		{"amount×1000 overflows", 0, math.MaxInt64, math.MaxInt64, 1000, 1000, Retry{Short: true, Never: true}, math.Inf(1)},
		{"wait saturates", math.MinInt64, math.MaxInt64 / 1000, math.MaxInt64, 1, math.MaxInt64,
			Retry{Short: true, WaitMs: math.MaxInt64}, float64(math.MaxInt64) / 1000},
		{"deficit×period in 128 bits", -1_000_000_000_000_000_000, 0, 10, 3_000_000, 1_000_000,
			Retry{Short: true, WaitMs: 333_333_333_333_333_334}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DripRetryAfter(tc.balance, tc.amount, tc.ceil, tc.rate, tc.per)
			if got != tc.want {
				t.Fatalf("DripRetryAfter = %+v, want %+v", got, tc.want)
			}
			if tc.seconds != 0 && got.Seconds() != tc.seconds {
				t.Fatalf("Seconds() = %v, want %v", got.Seconds(), tc.seconds)
			}
		})
	}
}

// DripRetryAfter's time_ms equals (deficit × period) // rate on unbounded
// integers, saturated at MaxInt64.
func TestDripRetryAfterMatchesBig(t *testing.T) {
	r := newRand(9)
	for range 200_000 {
		balance, amount := anyInt64(r), r.Int64N(math.MaxInt64/1000)
		rate, period := positive(r, 62), positive(r, 62)
		got := DripRetryAfter(balance, amount, math.MaxInt64, rate, period)
		deficit := new(big.Int).Sub(new(big.Int).Mul(bi(amount), bi(1000)), bi(balance))
		if deficit.Sign() <= 0 {
			if got != (Retry{}) {
				t.Fatalf("covered request got %+v", got)
			}
			continue
		}
		want := new(big.Int).Mul(deficit, bi(period))
		want.Div(want, bi(rate)).Add(want, big.NewInt(1))
		if !want.IsInt64() {
			want = bi(math.MaxInt64)
		}
		if !got.Short || got.Never || got.WaitMs != want.Int64() {
			t.Fatalf("DripRetryAfter(%d, %d, _, %d, %d) = %+v, want WaitMs %s", balance, amount, rate, period, got, want)
		}
	}
}

// retryCase is one input of the retry-sufficiency property (waiting the
// advertised retry_after lets the request pass): a stored state and a
// request on a dripping limit.
type retryCase struct {
	tk, rf, now, ceil, rate, period, amount int64
}

// checkRetrySufficient asserts the property for one case and reports
// whether the case was in scope (rejected, not Never, no int64 overflow):
//
//	(a) sufficient: the stored state materialised at now + round(r×1000)
//	    covers the request, where r = Seconds() and round(r×1000) = WaitMs;
//	(b) the carry buys at most one millitoken: at now + lag +
//	    ((deficit−1)×period)//rate (lag = max(0, rf−now)) it is still rejected,
//	    so the exact earliest passing instant lies in that window;
//	(c) tight without a carry: when no partial millitoken is pending (rf >= now,
//	    or elapsed×rate divisible by period) the earliest passing wait is
//	    exactly lag + ceil(deficit×period/rate) and WaitMs exceeds it by
//	    at most 1 ms (by 1 exactly when deficit×period is divisible by rate).
func checkRetrySufficient(t *testing.T, c retryCase) bool {
	t.Helper()
	s := Share{Ceiling: c.ceil, Rate: c.rate, Period: c.period}
	st := Check(c.tk, c.rf, c.now, s, c.amount)
	if !st.Exceeded || st.Retry.Never || st.Retry.WaitMs > 1<<50 || c.now > math.MaxInt64-(1<<51) {
		return false
	}
	w := st.Retry.WaitMs
	if round := int64(math.Round(st.Retry.Seconds() * 1000)); round != w {
		t.Fatalf("%+v: round(Seconds×1000) = %d, WaitMs = %d", c, round, w)
	}
	covers := func(wait int64) bool {
		b, _ := Refill(c.tk, c.rf, c.now+wait, c.ceil, c.rate, c.period)
		return Covers(b, c.amount)
	}
	if !covers(w) {
		t.Fatalf("(a) %+v: rejected with WaitMs %d but still short at now+%d", c, w, w)
	}
	// Earliest passing wait by bisection (materialisation is monotone in now).
	lo, hi := int64(0), w // covers(lo) is false, covers(hi) is true
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if covers(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	earliest := hi
	// The bounds in exact arithmetic (the fuzzer reaches products beyond int64).
	deficit := new(big.Int).Sub(new(big.Int).Mul(bi(c.amount), bi(1000)), bi(st.Balance))
	lag := bi(max(0, c.rf-c.now))
	floorBound := new(big.Int).Sub(deficit, big.NewInt(1))
	floorBound.Mul(floorBound, bi(c.period)).Div(floorBound, bi(c.rate)).Add(floorBound, lag)
	if floorBound.Cmp(bi(w)) >= 0 {
		t.Fatalf("(b) %+v: lag + ((deficit-1)×period)//rate = %s is not below WaitMs %d", c, floorBound, w)
	}
	if covers(floorBound.Int64()) {
		t.Fatalf("(b) %+v: passes at now+%s = lag + ((deficit-1)×period)//rate; the carry bought more than 1 milli", c, floorBound)
	}
	pending := new(big.Int).Mul(bi(max(0, c.now-c.rf)), bi(c.rate))
	if pending.Mod(pending, bi(c.period)).Sign() == 0 { // no partial millitoken pending
		dp := new(big.Int).Mul(deficit, bi(c.period))
		exact, rem := new(big.Int).QuoRem(dp, bi(c.rate), new(big.Int))
		over := int64(1) // WaitMs = time_ms + 1 overshoots by 1 when divisible
		if rem.Sign() != 0 {
			exact.Add(exact, big.NewInt(1))
			over = 0
		}
		exact.Add(exact, lag)
		if earliest != exact.Int64() {
			t.Fatalf("(c) %+v: earliest pass at +%d, want lag + ceil(deficit×period/rate) = %s", c, earliest, exact)
		}
		if w != exact.Int64()+over {
			t.Fatalf("(c) %+v: WaitMs %d, want %s + %d", c, w, exact, over)
		}
	}
	return true
}

// the property over a fixed-seed sample of realistic magnitudes, with rf
// behind, at and ahead of now.
func TestRetryAfterSufficient(t *testing.T) {
	r := newRand(10)
	inScope, noCarry := 0, 0
	for range 100_000 {
		c := retryCase{
			rate:   positive(r, 24),
			period: positive(r, 27), // up to ~37 hours
			amount: r.Int64N(100_000),
			now:    1_700_000_000_000 + r.Int64N(1_000_000_000_000),
		}
		c.ceil = c.amount*1000 + r.Int64N(1_000_000)
		c.tk = c.ceil - r.Int64N(2*c.ceil+2_000_000)
		switch r.IntN(4) {
		case 0:
			c.rf = c.now
		case 1:
			c.rf = c.now + r.Int64N(5000) // writer clock ahead
		default:
			c.rf = c.now - r.Int64N(int64(1)<<uint(r.IntN(30)))
		}
		if checkRetrySufficient(t, c) {
			inScope++
			if c.rf >= c.now {
				noCarry++
			}
		}
	}
	t.Logf("%d of 100000 cases in scope, %d of them without carry", inScope, noCarry)
	if inScope < 10_000 || noCarry < 1_000 {
		t.Fatalf("only %d cases in scope (%d without carry); the generator drifted", inScope, noCarry)
	}
}

// The carry really can make a request pass before time_ms: the sufficiency
// bound is one-sided, as the property says.
func TestRetryAfterCarryPassesEarly(t *testing.T) {
	// 1 token per minute; 59 ms already elapsed (0.98 milli of carry).
	c := retryCase{tk: 0, rf: 1_000_000 - 59, now: 1_000_000, ceil: 60_000, rate: 1000, period: 60_000, amount: 1}
	if !checkRetrySufficient(t, c) {
		t.Fatal("case out of scope")
	}
	st := Check(c.tk, c.rf, c.now, Share{Ceiling: c.ceil, Rate: c.rate, Period: c.period}, c.amount)
	if st.Retry.WaitMs != 60_001 {
		t.Fatalf("WaitMs = %d, want 60001", st.Retry.WaitMs)
	}
	if b, _ := Refill(c.tk, c.rf, c.now+59_941, c.ceil, c.rate, c.period); !Covers(b, 1) {
		t.Fatalf("expected a pass at now+59941 thanks to the carry, balance %d", b)
	}
}

// Check adds rf − now when rf is ahead of now (refill only starts at rf);
// without that the bare formula would be short.
func TestCheckRFAhead(t *testing.T) {
	s := Share{Ceiling: 10_000, Rate: 1000, Period: 1000}
	st := Check(0, 5000, 1000, s, 1)
	if !st.Exceeded || st.Retry.WaitMs != 4000+1001 {
		t.Fatalf("Check = %+v, want WaitMs 5001", st)
	}
	if b, _ := Refill(0, 5000, 1000+DripRetryAfter(0, 1, 10_000, 1000, 1000).WaitMs, 10_000, 1000, 1000); Covers(b, 1) {
		t.Fatal("the bare formula should not suffice when rf is ahead")
	}
}

// the property under fuzzing: arbitrary inputs, checked wherever in scope.
func FuzzRetryAfterSufficient(f *testing.F) {
	f.Add(int64(0), int64(1_000_000), int64(1_000_000), int64(60_000), int64(1000), int64(60_000), int64(1))
	f.Add(int64(-1500), int64(0), int64(10), int64(10_000), int64(1500), int64(1000), int64(3))
	f.Add(int64(0), int64(1_000_000-59), int64(1_000_000), int64(60_000), int64(1000), int64(60_000), int64(1))
	f.Fuzz(func(t *testing.T, tk, rf, now, ceil, rate, period, amount int64) {
		// Keep now + wait inside int64 for the checker's own Refill calls
		// (waits above 2^50 are skipped); the package needs no such bounds.
		if rate <= 0 || period <= 0 || amount < 0 || amount > 1<<40 || ceil < amount*1000 ||
			now < 0 || now > 1<<50 || rf < now-(1<<50) || rf > now+(1<<40) {
			return
		}
		checkRetrySufficient(t, retryCase{tk, rf, now, ceil, rate, period, amount})
	})
}

// the property: for a quota, retry_after_seconds × 1000 == resets_at_ms − now.
func TestQuotaRetryAfter(t *testing.T) {
	tests := []struct {
		name                           string
		balance, amount, resetsAt, now int64
		want                           Retry
	}{
		{"short", 0, 1, 1_700_000_060_000, 1_700_000_000_000, Retry{Short: true, WaitMs: 60_000}},
		{"short by a millitoken", 999, 1, 1_700_000_000_001, 1_700_000_000_000, Retry{Short: true, WaitMs: 1}},
		{"edge already passed", 0, 1, 1_700_000_000_000, 1_700_000_000_500, Retry{Short: true, WaitMs: 0}},
		{"covered", 5000, 5, 1_700_000_060_000, 1_700_000_000_000, Retry{}},
		{"far future saturates", 0, 1, math.MaxInt64, math.MinInt64, Retry{Short: true, WaitMs: math.MaxInt64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := QuotaRetryAfter(tc.balance, tc.amount, tc.resetsAt, tc.now)
			if got != tc.want {
				t.Fatalf("QuotaRetryAfter = %+v, want %+v", got, tc.want)
			}
		})
	}
	r := newRand(11)
	for range 100_000 {
		now := 1_700_000_000_000 + r.Int64N(1<<40)
		resetsAt := now + r.Int64N(400*86_400_000) // up to 400 days
		got := QuotaRetryAfter(-r.Int64N(1<<40), 1+r.Int64N(1<<20), resetsAt, now)
		if diff := math.Abs(got.Seconds()*1000 - float64(resetsAt-now)); diff > 1 {
			t.Fatalf("retry_after × 1000 = %v, resets_at − now = %d", got.Seconds()*1000, resetsAt-now)
		}
	}
}
