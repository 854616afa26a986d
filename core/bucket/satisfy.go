package bucket

// ImageLimit is one declared limit of a request as a failed fast-path
// write's ALL_OLD image shows it (the input of docs/design.md §3). The caller decodes
// the image; rf and shard_count are item-level and passed separately.
type ImageLimit struct {
	// Present reports that the image carries the limit: both b_{n}_tk and
	// b_{n}_cp exist (docs/design.md §2 discovery rule). A declared limit that is not
	// present sends the request to the slow path (it will be seeded).
	Present bool
	// Soft reports that the limit must be skipped: it carries a live soft
	// stamp (docs/design.md §3), or any soft stamp when the caller is the rejection cache
	// (docs/design.md §10). A soft limit is still materialised for its status but never
	// exceeded.
	Soft bool
	// Tokens is the stored balance b_{n}_tk, millitokens.
	Tokens int64
	// Params are the stored parameters, schedule-effective when a schedule
	// is in force.
	Params Params
	// Amount is the requested amount, whole tokens.
	Amount int64
	// ResetPending (quota only) reports that a calendar reset edge or a
	// window roll would fire at now (prev_edge(rsched, now) > rf, or
	// ws > wa). The request then goes to the slow path, which applies it.
	ResetPending bool
	// ResetsAtMs (quota only) is the next reset instant after now (next
	// calendar edge, or ws + rsa×1000 of a live window); 0 when unknown. A
	// quota whose next reset is unknown or not after now goes to the slow
	// path.
	ResetsAtMs int64
}

// WouldRefillSatisfy is the fast-rejection test of docs/design.md §3. Given the
// declared limits of a request as a failed write's old image shows them, the
// image's rf and shard_count, and now, it materialises every declared hard
// limit (docs/design.md §3–docs/design.md §3) and applies the consume check (docs/design.md §3).
//
// satisfy is true — take the slow path — when every hard limit would pass,
// when a declared limit is missing from the image, or when a quota has a
// reset pending or an unknown next reset (the slow path applies resets; a
// fast rejection must never be built from a state a reset is about to
// replace). satisfy is false — raise RateLimitExceeded from the statuses, with
// no further calls — when some hard limit would still be short.
//
// statuses is dst extended with one Status per limit, in order (pass
// dst[:0] of a reused slice for zero allocations). Soft limits get their
// balance and Available but are never Exceeded and never decide the verdict,
// except that a missing one still means the slow path (it must be seeded).
// The entry of a limit whose state at now is unknown here (missing, or a
// quota with a reset pending or an unknown next reset) is zero.
// `wcu` is never a declared limit (docs/design.md §5 row 7 handles it before docs/design.md §3).
func WouldRefillSatisfy(dst []Status, limits []ImageLimit, rf, shardCount, now int64) (satisfy bool, statuses []Status) {
	slow, short := false, false
	for i := range limits {
		l := &limits[i]
		var st Status
		switch {
		case !l.Present:
			slow = true
		case l.Params.IsQuota() && (l.ResetPending || l.ResetsAtMs <= now):
			// The balance at now depends on a reset this package does not
			// apply. A soft quota is skipped; a hard one goes slow.
			slow = slow || !l.Soft
		case l.Params.IsQuota():
			s := Effective(l.Params, shardCount)
			balance, _ := Refill(l.Tokens, rf, now, s.Ceiling, s.Rate, s.Period)
			st = Status{Balance: balance, Available: Available(balance)}
			if !l.Soft && !Covers(balance, l.Amount) {
				st.Exceeded = true
				st.Retry = QuotaRetryAfter(balance, l.Amount, l.ResetsAtMs, now)
			}
		default:
			st = Check(l.Tokens, rf, now, Effective(l.Params, shardCount), l.Amount)
			if l.Soft {
				st.Exceeded, st.Retry = false, Retry{}
			}
		}
		short = short || st.Exceeded
		dst = append(dst, st)
	}
	return slow || !short, dst
}
