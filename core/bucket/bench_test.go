package bucket

import "testing"

// Realistic inputs: an indebted tpm limit on a 4-shard item, 1.5 s after
// its last rf-moving write.
const (
	benchNow = 1_700_000_001_500
	benchRF  = 1_700_000_000_000
)

func benchParams() Params {
	return Params{Capacity: 10_000_000, RefillAmount: 10_000_000, RefillPeriod: 60_000}
}

func benchLimits() []ImageLimit {
	return []ImageLimit{
		{Present: true, Tokens: -4_000_000, Params: benchParams(), Amount: 1500},
		{Present: true, Tokens: 12_000, Params: Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}, Amount: 1},
		{Present: true, Soft: true, Tokens: -1, Params: benchParams(), Amount: 1500},
	}
}

func BenchmarkRefill(b *testing.B) {
	s := Effective(benchParams(), 4)
	for b.Loop() {
		Refill(-4_000_000, benchRF, benchNow, s.Ceiling, s.Rate, s.Period)
	}
}

func BenchmarkMaterialise(b *testing.B) {
	s := Effective(benchParams(), 4)
	for b.Loop() {
		Materialise(-4_000_000, benchRF, benchNow, s.Ceiling, s.Rate, s.Period)
	}
}

// BenchmarkCheck is the consume check of one limit: refill, docs/design.md §3 and, on a
// rejection, the docs/design.md §3 hint.
func BenchmarkCheck(b *testing.B) {
	s := Effective(benchParams(), 4)
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			Check(2_000_000, benchRF, benchNow, s, 1500)
		}
	})
	b.Run("reject", func(b *testing.B) {
		for b.Loop() {
			Check(-4_000_000, benchRF, benchNow, s, 1500)
		}
	})
}

func BenchmarkWouldRefillSatisfy(b *testing.B) {
	limits := benchLimits()
	dst := make([]Status, 0, len(limits))
	for b.Loop() {
		WouldRefillSatisfy(dst[:0], limits, benchRF, 4, benchNow)
	}
}

// The hot-path functions allocate nothing.
func TestZeroAllocs(t *testing.T) {
	s := Effective(benchParams(), 4)
	limits := benchLimits()
	dst := make([]Status, 0, len(limits))
	var sink int64
	for name, fn := range map[string]func(){
		"Refill": func() {
			tk, rf := Refill(-4_000_000, benchRF, benchNow, s.Ceiling, s.Rate, s.Period)
			sink += tk + rf
		},
		"Materialise": func() {
			bal, c := Materialise(-4_000_000, benchRF, benchNow, s.Ceiling, s.Rate, s.Period)
			sink += bal + c
		},
		"Check":          func() { sink += Check(-4_000_000, benchRF, benchNow, s, 1500).Retry.WaitMs },
		"DripRetryAfter": func() { sink += DripRetryAfter(-4_000_000, 1500, s.Ceiling, s.Rate, s.Period).WaitMs },
		"WouldRefillSatisfy": func() {
			_, st := WouldRefillSatisfy(dst[:0], limits, benchRF, 4, benchNow)
			sink += st[0].Balance
		},
		"Effective": func() { sink += Effective(benchParams(), 4).Ceiling },
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, a)
		}
	}
	_ = sink
}
