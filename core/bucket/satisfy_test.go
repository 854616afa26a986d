package bucket

import "testing"

func TestWouldRefillSatisfy(t *testing.T) {
	const now = 1_700_000_060_000
	const rf = now - 60_000 // one minute since the last rf-moving write
	// rpm: 100 tokens/min; tpm: 10_000 tokens/min; day: a quota of 1000 tokens.
	rpm := Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}
	tpm := Params{Capacity: 10_000_000, RefillAmount: 10_000_000, RefillPeriod: 60_000}
	day := Params{Capacity: 1_000_000, RefillPeriod: 86_400_000}
	hard := func(p Params, tk, amount int64) ImageLimit {
		return ImageLimit{Present: true, Tokens: tk, Params: p, Amount: amount}
	}
	soft := func(l ImageLimit) ImageLimit { l.Soft = true; return l }
	quota := func(tk, amount, resetsAt int64, pending bool) ImageLimit {
		return ImageLimit{Present: true, Tokens: tk, Params: day, Amount: amount, ResetsAtMs: resetsAt, ResetPending: pending}
	}
	tests := []struct {
		name     string
		limits   []ImageLimit
		shards   int64
		satisfy  bool
		exceeded []bool
		balances []int64 // nil: not checked
		waitMs   []int64 // nil: not checked
	}{
		{
			name:     "refill covers a drained bucket",
			limits:   []ImageLimit{hard(rpm, -5000, 1), hard(tpm, 0, 500)},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{false, false},
			balances: []int64{95_000, 10_000_000},
		},
		{
			name:     "one hard limit still short",
			limits:   []ImageLimit{hard(rpm, -200_000, 1), hard(tpm, 0, 500)},
			shards:   1,
			satisfy:  false,
			exceeded: []bool{true, false},
			balances: []int64{-100_000, 10_000_000},
			waitMs:   []int64{60_601, 0}, // deficit 101_000 at 100_000 per minute
		},
		{
			name:     "per-shard share: short on 4 shards, fine on 1",
			limits:   []ImageLimit{hard(tpm, -5_000_000, 3000)},
			shards:   4,
			satisfy:  false,
			exceeded: []bool{true},
			balances: []int64{-2_500_000},
		},
		{
			name:     "request above the shard share is never satisfiable",
			limits:   []ImageLimit{hard(rpm, 0, 30)},
			shards:   4,
			satisfy:  false,
			exceeded: []bool{true},
			balances: []int64{25_000},
			waitMs:   []int64{0},
		},
		{
			name:     "soft limit short is skipped",
			limits:   []ImageLimit{soft(hard(rpm, -900_000, 1)), hard(tpm, 0, 1)},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{false, false},
			balances: []int64{-800_000, 10_000_000},
		},
		{
			name:     "missing declared limit ⇒ slow path even with another short",
			limits:   []ImageLimit{hard(rpm, -900_000, 1), {Amount: 1}},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{true, false},
			balances: []int64{-800_000, 0},
		},
		{
			name:     "missing soft limit still ⇒ slow path (seed)",
			limits:   []ImageLimit{hard(rpm, 0, 1), {Soft: true, Amount: 1}},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{false, false},
		},
		{
			name:     "quota short until its reset",
			limits:   []ImageLimit{quota(500, 1, now+3_600_000, false)},
			shards:   1,
			satisfy:  false,
			exceeded: []bool{true},
			balances: []int64{500},
			waitMs:   []int64{3_600_000},
		},
		{
			name:     "quota with a reset pending ⇒ slow path",
			limits:   []ImageLimit{quota(0, 1, now+3_600_000, true)},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{false},
			balances: []int64{0},
		},
		{
			name:     "quota with unknown next reset ⇒ slow path",
			limits:   []ImageLimit{quota(0, 1, 0, false)},
			shards:   1,
			satisfy:  true,
			exceeded: []bool{false},
		},
		{
			name:     "soft quota with a reset pending is skipped",
			limits:   []ImageLimit{soft(quota(0, 1, 0, true)), hard(rpm, -500_000, 1)},
			shards:   1,
			satisfy:  false,
			exceeded: []bool{false, true},
		},
		{
			name:     "quota above a lowered gc ceiling is trimmed",
			limits:   []ImageLimit{{Present: true, Tokens: 900_000, Params: Params{Capacity: 1_000_000, RefillPeriod: 1, GrantShards: 2, TopUp: 1000}, Amount: 502, ResetsAtMs: now + 10}},
			shards:   4,
			satisfy:  false,
			exceeded: []bool{true},
			balances: []int64{501_000},
			waitMs:   []int64{10},
		},
		{
			name:    "no declared limits",
			shards:  1,
			satisfy: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			satisfy, statuses := WouldRefillSatisfy(nil, tc.limits, rf, tc.shards, now)
			if satisfy != tc.satisfy {
				t.Fatalf("satisfy = %v, want %v (statuses %+v)", satisfy, tc.satisfy, statuses)
			}
			if len(statuses) != len(tc.limits) {
				t.Fatalf("%d statuses for %d limits", len(statuses), len(tc.limits))
			}
			for i, st := range statuses {
				if st.Exceeded != tc.exceeded[i] {
					t.Errorf("limit %d: Exceeded = %v, want %v (%+v)", i, st.Exceeded, tc.exceeded[i], st)
				}
				if tc.balances != nil && st.Balance != tc.balances[i] {
					t.Errorf("limit %d: Balance = %d, want %d", i, st.Balance, tc.balances[i])
				}
				if st.Available != Available(st.Balance) {
					t.Errorf("limit %d: Available %d disagrees with Balance %d", i, st.Available, st.Balance)
				}
				if !st.Exceeded && st.Retry != (Retry{}) {
					t.Errorf("limit %d: not exceeded but Retry %+v", i, st.Retry)
				}
				if tc.waitMs != nil && st.Exceeded {
					if tc.waitMs[i] == 0 && !st.Retry.Never {
						t.Errorf("limit %d: Retry %+v, want Never", i, st.Retry)
					}
					if tc.waitMs[i] != 0 && st.Retry.WaitMs != tc.waitMs[i] {
						t.Errorf("limit %d: WaitMs = %d, want %d", i, st.Retry.WaitMs, tc.waitMs[i])
					}
				}
			}
		})
	}
}

// WouldRefillSatisfy appends to dst and agrees with Check limit by limit.
func TestWouldRefillSatisfyAgreesWithCheck(t *testing.T) {
	r := newRand(12)
	dst := make([]Status, 0, 8)
	for range 20_000 {
		now := 1_700_000_000_000 + r.Int64N(1<<40)
		rf := now - r.Int64N(1<<20) + r.Int64N(100)
		shards := 1 + r.Int64N(32)
		n := 1 + r.IntN(5)
		limits := make([]ImageLimit, n)
		wantSatisfy := true
		for i := range limits {
			p := Params{Capacity: positive(r, 40), RefillAmount: positive(r, 40), RefillPeriod: positive(r, 30)}
			limits[i] = ImageLimit{Present: true, Soft: r.IntN(5) == 0, Tokens: anyInt64(r) % (1 << 41), Params: p, Amount: r.Int64N(1 << 20)}
			st := Check(limits[i].Tokens, rf, now, Effective(p, shards), limits[i].Amount)
			if st.Exceeded && !limits[i].Soft {
				wantSatisfy = false
			}
		}
		satisfy, got := WouldRefillSatisfy(dst[:0], limits, rf, shards, now)
		if satisfy != wantSatisfy {
			t.Fatalf("satisfy = %v, want %v", satisfy, wantSatisfy)
		}
		for i, l := range limits {
			want := Check(l.Tokens, rf, now, Effective(l.Params, shards), l.Amount)
			if l.Soft {
				want.Exceeded, want.Retry = false, Retry{}
			}
			if got[i] != want {
				t.Fatalf("limit %d: %+v, want %+v", i, got[i], want)
			}
		}
	}
}
