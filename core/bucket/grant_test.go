package bucket_test

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

func TestGrantCovers(t *testing.T) {
	for _, tc := range []struct {
		shard, gc, slot int64
		want            bool
	}{
		{0, 1, 5, true},  // a grant sized at one shard covers every slot
		{1, 2, 3, true},  // odd slots
		{1, 2, 2, false}, // not the even ones
		{3, 4, 7, true},
		{3, 4, 3, true}, // its own slot
		{2, 4, 5, false},
		{0, 0, 0, false}, // no grant covers nothing
	} {
		if got := bucket.GrantCovers(tc.shard, tc.gc, tc.slot); got != tc.want {
			t.Errorf("GrantCovers(%d, %d, %d) = %v, want %v", tc.shard, tc.gc, tc.slot, got, tc.want)
		}
	}
}

// R7 worked examples: C = 100 tokens at 4 shards (25 a share).
func TestLegacyGrantShards(t *testing.T) {
	for _, tc := range []struct{ tk, count, want int64 }{
		{20_000, 4, 4},  // within one share at 4: granted at 4
		{25_000, 4, 4},  // exactly one share
		{30_000, 4, 2},  // above a quarter: granted at 2
		{60_000, 4, 1},  // above a half: granted at 1
		{-5_000, 8, 8},  // debt
		{100_000, 1, 1}, // one shard
		{100_000, 0, 1}, // absent count
	} {
		if got := bucket.LegacyGrantShards(tc.tk, 100_000, tc.count); got != tc.want {
			t.Errorf("LegacyGrantShards(%d, 100000, %d) = %d, want %d", tc.tk, tc.count, got, tc.want)
		}
	}
}

func TestDonor(t *testing.T) {
	sibs := []bucket.GrantSibling{{Shard: 0, GrantShards: 1, Tokens: 70}, {Shard: 1, GrantShards: 2, Tokens: 40}, {Shard: 2, GrantShards: 4, Tokens: 5}}
	for _, tc := range []struct {
		slot      int64
		want      int64
		wantFound bool
	}{
		{3, 1, true}, // shard 1 (gc 2) and shard 0 (gc 1) cover 3: the narrower cover funds it
		{6, 2, true}, // shard 2 (gc 4) covers 6
		{4, 0, true}, // only shard 0 covers 4 (shard 2 covers 2 and 6)
		{2, 0, true}, // a slot never funds itself
	} {
		d, ok := bucket.Donor(sibs, tc.slot)
		if ok != tc.wantFound || d.Shard != tc.want {
			t.Errorf("Donor(slot %d) = %+v %v, want shard %d", tc.slot, d, ok, tc.want)
		}
	}
	if _, ok := bucket.Donor([]bucket.GrantSibling{{Shard: 1, GrantShards: 2}}, 2); ok {
		t.Error("an uncovered slot found a donor")
	}
	// A tie on gc goes to the lowest shard.
	if d, _ := bucket.Donor([]bucket.GrantSibling{{Shard: 2, GrantShards: 2}, {Shard: 0, GrantShards: 2}}, 4); d.Shard != 0 {
		t.Errorf("tie went to shard %d", d.Shard)
	}
}

func TestMoveAmount(t *testing.T) {
	for _, tc := range []struct{ cp, s, tk, want int64 }{
		{100_000, 4, 20_000, 20_000}, // the donor has less than a share
		{100_000, 4, 90_000, 25_000}, // one share
		{100_000, 4, -5_000, 0},      // an indebted donor moves nothing
		{100_001, 2, 90_000, 50_000}, // C // S floors
	} {
		if got := bucket.MoveAmount(tc.cp, tc.s, tc.tk); got != tc.want {
			t.Errorf("MoveAmount(%d, %d, %d) = %d, want %d", tc.cp, tc.s, tc.tk, got, tc.want)
		}
	}
}

// Worked example: 1,000 over grants sized at 1, 2 and 4 shards (weights
// 4:2:1 of 7): 571, 285 and 142, the 2 left over to the lowest shard.
func TestTopUpPortions(t *testing.T) {
	got := bucket.TopUpPortions(1000, []bucket.GrantSibling{{Shard: 3, GrantShards: 4}, {Shard: 0, GrantShards: 1}, {Shard: 1, GrantShards: 2}})
	want := []int64{142, 573, 285}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("TopUpPortions = %v, want %v", got, want)
	}
	even := bucket.TopUpPortions(10, []bucket.GrantSibling{{Shard: 1, GrantShards: 4}, {Shard: 2, GrantShards: 4}, {Shard: 0, GrantShards: 4}, {Shard: 3, GrantShards: 4}})
	if even[2] != 4 || even[0]+even[1]+even[2]+even[3] != 10 {
		t.Fatalf("even split %v", even)
	}
	if bucket.TopUpPortions(0, []bucket.GrantSibling{{Shard: 0, GrantShards: 1}}) != nil || bucket.TopUpPortions(5, nil) != nil {
		t.Error("nothing to spread spread something")
	}
	big := bucket.TopUpPortions(9_000_000_000_000_000_000, []bucket.GrantSibling{{Shard: 0, GrantShards: 32}, {Shard: 1, GrantShards: 1}})
	if big[0]+big[1] != 9_000_000_000_000_000_000 {
		t.Fatalf("large top-up %v does not sum", big)
	}
}

func FuzzTopUpPortions(f *testing.F) {
	f.Add(int64(1000), uint8(3), uint8(0b1011))
	f.Fuzz(func(t *testing.T, n int64, count uint8, gcs uint8) {
		if n <= 0 {
			return
		}
		var shards []bucket.GrantSibling
		for i := int64(0); i < int64(count%8)+1; i++ {
			shards = append(shards, bucket.GrantSibling{Shard: i, GrantShards: 1 << ((gcs >> (i % 4)) & 3)})
		}
		var sum int64
		for _, p := range bucket.TopUpPortions(n, shards) {
			if p < 0 {
				t.Fatalf("negative portion")
			}
			sum += p
		}
		if sum != n {
			t.Fatalf("portions sum to %d, want %d", sum, n)
		}
	})
}
