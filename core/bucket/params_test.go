package bucket

import (
	"math"
	"testing"
)

func TestEffective(t *testing.T) {
	// 100 tokens per minute, capacity 100 tokens.
	drip := Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}
	quota := Params{Capacity: 1_024_000, RefillPeriod: 86_400_000}
	withGC := func(p Params, gc, tu int64) Params { p.GrantShards, p.TopUp = gc, tu; return p }
	tests := []struct {
		name   string
		p      Params
		shards int64
		want   Share
	}{
		{"unsharded", drip, 1, Share{Ceiling: 100_000, Target: 100_000, Rate: 100_000, Period: 60_000}},
		{"shard count absent", drip, 0, Share{Ceiling: 100_000, Target: 100_000, Rate: 100_000, Period: 60_000}},
		{"negative shard count", drip, -4, Share{Ceiling: 100_000, Target: 100_000, Rate: 100_000, Period: 60_000}},
		{"three shards floor", drip, 3, Share{Ceiling: 33_333, Target: 33_333, Rate: 33_333, Period: 60_000}},
		{"rate floors to zero", Params{Capacity: 1000, RefillAmount: 31, RefillPeriod: 1000}, 32,
			Share{Ceiling: 31, Target: 31, Rate: 0, Period: 1000}},
		{"dripping ignores stale gc/tu", withGC(drip, 1, 5000), 4, Share{Ceiling: 25_000, Target: 25_000, Rate: 25_000, Period: 60_000}},
		{"quota gc absent ⇒ S", quota, 4, Share{Ceiling: 256_000, Target: 256_000, Rate: 0, Period: 86_400_000}},
		{"quota gc < 1 ⇒ S", withGC(quota, -2, 0), 4, Share{Ceiling: 256_000, Target: 256_000, Rate: 0, Period: 86_400_000}},
		{"quota granted at 2 before a doubling to 4", withGC(quota, 2, 0), 4, Share{Ceiling: 512_000, Target: 256_000, Rate: 0, Period: 86_400_000}},
		{"quota with top-up", withGC(quota, 4, 10_000), 4, Share{Ceiling: 266_000, Target: 256_000, Rate: 0, Period: 86_400_000}},
		{"quota top-up without gc", withGC(quota, 0, 7), 8, Share{Ceiling: 128_007, Target: 128_000, Rate: 0, Period: 86_400_000}},
		{"quota ceiling saturates", withGC(quota, 1, math.MaxInt64), 1, Share{Ceiling: math.MaxInt64, Target: 1_024_000, Rate: 0, Period: 86_400_000}},
		{"negative ra is not a quota (corrupt)", Params{Capacity: 1000, RefillAmount: -4, RefillPeriod: 1, GrantShards: 1, TopUp: 9}, 2,
			Share{Ceiling: 500, Target: 500, Rate: -2, Period: 1}},
		{"negative capacity floors (corrupt)", Params{Capacity: -5, RefillAmount: 1, RefillPeriod: 1}, 2,
			Share{Ceiling: -3, Target: -3, Rate: 0, Period: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Effective(tc.p, tc.shards); got != tc.want {
				t.Fatalf("Effective(%+v, %d) = %+v, want %+v", tc.p, tc.shards, got, tc.want)
			}
		})
	}
}

func TestUndividedWCU(t *testing.T) {
	want := Share{Ceiling: 1_000_000, Target: 1_000_000, Rate: 1_000_000, Period: 1000}
	if got := Undivided(WCUParams()); got != want {
		t.Fatalf("Undivided(WCUParams()) = %+v, want %+v", got, want)
	}
	if Effective(WCUParams(), 8) == want {
		t.Fatal("Effective divides; wcu must use Undivided")
	}
	// One fast-path write needs WCUDebit; a full wcu admits 1000 of them.
	if !Covers(WCUCapacity, WCUDebit/MilliPerToken) || WCUCapacity/WCUDebit != 1000 {
		t.Fatal("wcu constants disagree with docs/design.md §2")
	}
	if WCUParams().IsQuota() || !(Params{Capacity: 1}).IsQuota() {
		t.Fatal("IsQuota")
	}
}
