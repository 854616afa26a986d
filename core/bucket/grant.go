package bucket

// Quota grants across shards (ADR-145, docs/design.md §15): which shard's
// current-period grant covers a slot, which sibling funds a new shard, how
// much moves, how a legacy grant without gc is read, and how a top-up is
// spread. Plain functions of the state read; the writers pin what they
// read.

// GrantCovers reports whether shard, whose current-period grant was sized
// at grantShards shards, covers slot: slot mod gc == shard mod gc. A grant
// sized at gc shards is one gc-th of the allowance and stands for every
// slot of its residue class. A gc below 1 covers nothing.
func GrantCovers(shard, grantShards, slot int64) bool {
	if grantShards < 1 || shard < 0 || slot < 0 {
		return false
	}
	return slot%grantShards == shard%grantShards
}

// LegacyGrantShards reads the grant of a quota shard that carries no gc
// (rule R7 of ADR-145: a writer before grants): granted at its stored
// shard count, halved while its balance exceeds one share at that count,
// since a balance above C // g can only have come from a grant sized at
// fewer shards.
func LegacyGrantShards(tokens, capacity, shardCount int64) int64 {
	g := max(shardCount, 1)
	for g > 1 && tokens > FloorDiv(capacity, g) {
		g /= 2
	}
	return g
}

// GrantSibling is one current-period shard carrying a quota, as a planner
// read it: its shard number, the shard count its grant was sized at (gc,
// or LegacyGrantShards for an item without one) and its balance,
// millitokens.
type GrantSibling struct {
	Shard       int64
	GrantShards int64
	Tokens      int64
}

// Donor returns the sibling that funds slot (ADR-145 create or seed):
// among siblings covering slot, the one whose grant was sized at the most
// shards (the narrowest cover), the lowest shard number on a tie. ok is
// false when none covers slot: the slot is then granted a fresh share.
func Donor(siblings []GrantSibling, slot int64) (donor GrantSibling, ok bool) {
	for _, s := range siblings {
		if s.Shard == slot || !GrantCovers(s.Shard, s.GrantShards, slot) {
			continue
		}
		if !ok || s.GrantShards > donor.GrantShards || (s.GrantShards == donor.GrantShards && s.Shard < donor.Shard) {
			donor, ok = s, true
		}
	}
	return donor, ok
}

// MoveAmount is what a covered slot takes off its donor: one share at the
// planned count, C // S, or what the donor holds when that is less; never
// negative (an indebted donor moves nothing).
func MoveAmount(capacity, shardCount, donorTokens int64) int64 {
	return max(0, min(FloorDiv(capacity, max(shardCount, 1)), donorTokens))
}

// TopUpPortions spreads a top-up of n millitokens over the current-period
// shards of a quota (ADR-149, docs/design.md §15): each shard's weight is
// the part of the allowance its grant stands for, 1/gc; portion i is
// floor(n × w_i / Σw) and the remainder goes to the lowest shard number,
// so the portions sum to n exactly. Weights are counted in units of
// 1/L, L the largest gc (grants are powers of two, so every 1/gc is a
// whole number of units). out[i] is shards[i]'s portion; nil for no
// shards or n ≤ 0.
func TopUpPortions(n int64, shards []GrantSibling) []int64 {
	if len(shards) == 0 || n <= 0 {
		return nil
	}
	var l int64 = 1
	for _, s := range shards {
		l = max(l, s.GrantShards)
	}
	weights := make([]int64, len(shards))
	var sum int64
	for i, s := range shards {
		weights[i] = l / max(s.GrantShards, 1)
		sum += weights[i]
	}
	out := make([]int64, len(shards))
	var given int64
	lowest := 0
	for i, s := range shards {
		out[i], _ = MulDiv(n, weights[i], sum)
		given += out[i]
		if s.Shard < shards[lowest].Shard {
			lowest = i
		}
	}
	out[lowest] += n - given
	return out
}
