package bucket

// MilliPerToken is the number of millitokens in one token (ADR-002): every
// stored balance, capacity, refill amount and top-up is tokens × 1000.
const MilliPerToken = 1000

// Parameters of the reserved `wcu` limit every bucket carries (docs/design.md §2,
// docs/design.md §5): capacity 1000 tokens, refilled 1000 tokens per second, one
// token debited per fast-path write. It is never divided by shard count
// (see [Undivided]).
const (
	WCUCapacity     = 1000 * MilliPerToken // b_wcu_cp, millitokens
	WCURefillAmount = 1000 * MilliPerToken // b_wcu_ra, millitokens per period
	WCURefillPeriod = 1000                 // b_wcu_rp, ms
	WCUDebit        = 1 * MilliPerToken    // debited per fast-path write, millitokens
)

// Params are one limit's stored parameters, as they sit on the bucket item
// (docs/design.md §2): undivided across shards. A caller
// that evaluates schedules passes the schedule-effective values (C_eff,
// R_eff, P_eff of docs/design.md §3); this package evaluates no schedule.
//
// The zero value of GrantShards and TopUp means "attribute absent", which is
// exactly how docs/design.md §3 treats a missing b_{n}_gc (fall back to the shard
// count) and a missing b_{n}_tu (zero).
type Params struct {
	Capacity     int64 // b_{n}_cp: capacity, millitokens, undivided
	RefillAmount int64 // b_{n}_ra: millitokens per RefillPeriod, undivided; 0 for a quota
	RefillPeriod int64 // b_{n}_rp: refill period, ms
	GrantShards  int64 // b_{n}_gc: quota only; shard count the current grant was sized at; < 1 = absent
	TopUp        int64 // b_{n}_tu: quota only; allowance topped up this period, millitokens; 0 = absent
}

// WCUParams returns the stored parameters of the reserved `wcu` limit.
func WCUParams() Params {
	return Params{Capacity: WCUCapacity, RefillAmount: WCURefillAmount, RefillPeriod: WCURefillPeriod}
}

// IsQuota reports whether the limit is a quota: a zero refill amount.
// docs/design.md §2 admits refill_amount = 0 only together with a reset schedule or
// reset_after, so on a valid item "ra = 0" and "quota" (docs/design.md §3: "ra = 0
// with a reset schedule or rsa") coincide; deciding on ra alone keeps a stale
// gc/tu left on a limit that now drips from changing its ceiling.
func (p Params) IsQuota() bool { return p.RefillAmount == 0 }

// Share is one limit's per-shard effective parameters (docs/design.md §3): what
// [Materialise], [Refill] and [Check] take.
type Share struct {
	// Ceiling is the most a materialisation may leave in the balance,
	// millitokens: C // S for a dripping limit, C // gc + tu for a quota,
	// C for wcu.
	Ceiling int64
	// Target is the share a reset restores, C // S (phase 2: quota resets
	// and window rolls).
	Target int64
	// Rate is the drip, millitokens per Period: R // S (0 for a quota).
	Rate int64
	// Period is the refill period, ms (never divided).
	Period int64
}

// Effective returns the per-shard parameters of a limit that is not `wcu`
// on an item whose shard_count is shardCount (docs/design.md §3):
//
//	Target  = C // S
//	Ceiling = C // S            dripping limit
//	Ceiling = C // gc + tu      quota (gc absent or < 1 ⇒ S; tu absent ⇒ 0)
//	Rate    = R // S
//	Period  = P
//
// A shardCount below 1 (absent or corrupt) is treated as 1. A dripping limit
// ignores any GrantShards/TopUp it carries. The quota ceiling saturates
// instead of overflowing when tu is absurdly large.
func Effective(p Params, shardCount int64) Share {
	s := max(shardCount, 1)
	sh := Share{
		Target: FloorDiv(p.Capacity, s),
		Rate:   FloorDiv(p.RefillAmount, s),
		Period: p.RefillPeriod,
	}
	sh.Ceiling = sh.Target
	if p.IsQuota() {
		g := p.GrantShards
		if g < 1 {
			g = s
		}
		sh.Ceiling = AddSat(FloorDiv(p.Capacity, g), p.TopUp)
	}
	return sh
}

// Undivided returns the parameters of the reserved `wcu` limit, which is
// never divided by shard count (one partition per shard, docs/design.md §2, §3
// step 2): Ceiling = Target = cp, Rate = ra, Period = rp.
func Undivided(p Params) Share {
	return Share{Ceiling: p.Capacity, Target: p.Capacity, Rate: p.RefillAmount, Period: p.RefillPeriod}
}
