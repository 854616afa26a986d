package bucketwrite

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
)

// Reason is why a fast-path write failed (docs/design.md §5). The values are in
// precedence order: when several observations hold, the first one listed is
// the reason.
type Reason uint8

// Failure reasons of docs/design.md §5, plus ReasonUnexplained.
const (
	// ReasonBucketMissing: no item (row 1). Slow path on this shard (create).
	ReasonBucketMissing Reason = iota + 1
	// ReasonDisabled: the item carries disabled = true (row 2). Raise
	// ResourceDisabled(level = "bucket"); no slow path, no retry.
	ReasonDisabled
	// ReasonBypassCleared: a bypass-shaped write found no live bypass stamp
	// (row 3). Drop the bypass-cache entry; see Classification.BypassStamp.
	ReasonBypassCleared
	// ReasonScheduleBoundary: vu present and ≤ now (row 4, enforce shape
	// only: the bypass shape has no vu guard). Slow path; never a shard
	// retry.
	ReasonScheduleBoundary
	// ReasonExpired: ttl present and ≤ now // 1000 (row 5). Slow path.
	ReasonExpired
	// ReasonStampExpired: a declared limit's term failed and the limit
	// carries an expired soft stamp, or the item an expired bypass stamp
	// (row 6). Slow path; never a 429.
	ReasonStampExpired
	// ReasonWCUExhausted: b_wcu_tk < 1000 (row 7). Double, then slow path.
	ReasonWCUExhausted
	// ReasonBothExhausted: b_wcu_tk < 1000 and a declared hard limit is
	// short (row 7). Double, then slow path.
	ReasonBothExhausted
	// ReasonSeed: a declared limit is missing on the item (row 8), or the
	// item lacks b_wcu_tk. Slow path (seeds it).
	ReasonSeed
	// ReasonAppLimitExhausted: a declared hard limit is short (row 9). Shard
	// retry (docs/design.md §5) when allowed, then docs/design.md §3.
	ReasonAppLimitExhausted
	// ReasonUnexplained: the image satisfies every term the write tests
	// except through a value no writer stores (such as disabled = false), so
	// nothing of rows 1–9 explains the failure. Slow path, never a
	// rejection. Not a row of docs/design.md §5: the safe default for an image the
	// table does not foresee.
	ReasonUnexplained
)

// String returns the docs/design.md §5 name, e.g. "WCU_EXHAUSTED".
func (r Reason) String() string {
	switch r {
	case ReasonBucketMissing:
		return "BUCKET_MISSING"
	case ReasonDisabled:
		return "DISABLED"
	case ReasonBypassCleared:
		return "BYPASS_CLEARED"
	case ReasonScheduleBoundary:
		return "SCHEDULE_BOUNDARY"
	case ReasonExpired:
		return "EXPIRED"
	case ReasonStampExpired:
		return "STAMP_EXPIRED"
	case ReasonWCUExhausted:
		return "WCU_EXHAUSTED"
	case ReasonBothExhausted:
		return "BOTH_EXHAUSTED"
	case ReasonSeed:
		return "SEED"
	case ReasonAppLimitExhausted:
		return "APP_LIMIT_EXHAUSTED"
	case ReasonUnexplained:
		return "UNEXPLAINED"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Action is what the limiter does next after a failed fast-path write
// (the Action column of docs/design.md §5).
type Action uint8

// Actions.
const (
	// ActionReadThenWrite: the read-then-write path (the slow path of
	// docs/design.md §5) on the shard written.
	ActionReadThenWrite Action = iota + 1
	// ActionRaiseDisabled: raise ResourceDisabled(level = "bucket").
	ActionRaiseDisabled
	// ActionRetryEnforce: retry once, immediately, with the enforce shape.
	ActionRetryEnforce
	// ActionDouble: double shard_count (docs/design.md §5), then the slow path.
	ActionDouble
	// ActionShardRetryOrReject: docs/design.md §5 shard retry when shard_count > 1 and
	// the entity does not cascade on the resource; then docs/design.md §3 (refill would
	// satisfy ⇒ slow path, else RateLimitExceeded).
	ActionShardRetryOrReject
)

// String returns a short lower-case name, e.g. "slow-path".
func (a Action) String() string {
	switch a {
	case ActionReadThenWrite:
		return "slow-path"
	case ActionRaiseDisabled:
		return "raise-disabled"
	case ActionRetryEnforce:
		return "retry-enforce"
	case ActionDouble:
		return "double"
	case ActionShardRetryOrReject:
		return "shard-retry-or-reject"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Classification is the verdict on a failed fast-path write.
type Classification struct {
	Reason Reason

	// Short are the declared limits (enforce shape) whose stored b_{n}_tk
	// is below amount×1000 while neither a live soft stamp nor a live
	// bypass stamp excuses them: the hard limits that failed the condition.
	// In declaration order.
	Short []string

	// Missing are the declared limits (enforce shape) the item does not
	// carry by the discovery rule (docs/design.md §2), whatever the reason: the
	// slow path seeds them. In declaration order.
	Missing []string

	// BypassStamp reports, for ReasonBypassCleared, that a bypass stamp is
	// present but expired (slow path: it renews or removes the stamp);
	// false means absent (retry with the enforce shape).
	BypassStamp bool

	// WCUShort reports b_wcu_tk < 1000; WCUMissing that the item has no
	// b_wcu_tk at all (never the case for an item any writer created).
	WCUShort, WCUMissing bool
}

// Action returns what the limiter does next (docs/design.md §5).
func (c Classification) Action() Action {
	switch c.Reason {
	case ReasonDisabled:
		return ActionRaiseDisabled
	case ReasonBypassCleared:
		if c.BypassStamp {
			return ActionReadThenWrite
		}
		return ActionRetryEnforce
	case ReasonWCUExhausted, ReasonBothExhausted:
		return ActionDouble
	case ReasonAppLimitExhausted:
		return ActionShardRetryOrReject
	}
	return ActionReadThenWrite
}

// Classify is docs/design.md §5: why a fast-path write of the given shape, with
// the declared limits and clock reading now (epoch ms) it was sent with,
// failed, judged from the ALL_OLD image (nil: no item). It evaluates the
// terms the shape's condition tests (see Writes.Speculative) exactly as
// DynamoDB does — on stored values, without refill — and reports the first
// row of the docs/design.md §5 table that holds:
//
//  1. no item: BUCKET_MISSING
//  2. disabled = true: DISABLED
//  3. bypass shape, no live bypass stamp: BYPASS_CLEARED
//  4. enforce shape, vu ≤ now: SCHEDULE_BOUNDARY
//  5. ttl ≤ now // 1000: EXPIRED
//  6. enforce shape, a declared limit's term failed and the limit has a
//     soft stamp or the item a bypass stamp (necessarily expired):
//     STAMP_EXPIRED
//  7. b_wcu_tk < 1000: WCU_EXHAUSTED, or BOTH_EXHAUSTED when Short is not
//     empty (enforce shape)
//  8. enforce shape, a declared limit missing while some declared limit's
//     term failed (or no b_wcu_tk, any shape): SEED
//  9. enforce shape, Short not empty: APP_LIMIT_EXHAUSTED
//
// and UNEXPLAINED when none does. It is a pure function.
func Classify(old *bucketitem.Image, shape Shape, declared []Declared, now int64) Classification {
	var c Classification
	if old == nil {
		c.Reason = ReasonBucketMissing
		return c
	}
	enforce := shape == ShapeEnforce
	bypassLive := old.Bypass.Live(now)
	stampExpired, termFailed := false, false
	if enforce {
		for _, d := range declared {
			l := old.Lookup(d.Name)
			if l == nil || !l.Present() {
				c.Missing = append(c.Missing, d.Name)
			}
			if bypassLive || (l != nil && l.Soft.Live(now)) {
				continue // the term passes on a stamp
			}
			hasTk := l != nil && l.Fields.Has(bucketitem.FieldTokens)
			if hasTk && bucket.Covers(l.Tokens, d.Amount) {
				continue // the term passes on the balance
			}
			termFailed = true
			if hasTk {
				c.Short = append(c.Short, d.Name)
			}
			if old.Bypass.Present || (l != nil && l.Soft.Present) {
				stampExpired = true
			}
		}
	}
	c.WCUMissing = !old.WCU.Fields.Has(bucketitem.FieldTokens)
	c.WCUShort = !c.WCUMissing && old.WCU.Tokens < bucket.WCUDebit
	switch {
	case old.Disabled:
		c.Reason = ReasonDisabled
	case !enforce && !bypassLive:
		c.Reason = ReasonBypassCleared
		c.BypassStamp = old.Bypass.Present
	case enforce && old.HasVU && old.VU <= now:
		c.Reason = ReasonScheduleBoundary
	case old.HasTTL && old.TTL <= bucket.FloorDiv(now, 1000):
		c.Reason = ReasonExpired
	case stampExpired:
		c.Reason = ReasonStampExpired
	case c.WCUShort && len(c.Short) > 0:
		c.Reason = ReasonBothExhausted
	case c.WCUShort:
		c.Reason = ReasonWCUExhausted
	case (termFailed && len(c.Missing) > 0) || c.WCUMissing:
		c.Reason = ReasonSeed
	case len(c.Short) > 0:
		c.Reason = ReasonAppLimitExhausted
	default:
		c.Reason = ReasonUnexplained
	}
	return c
}

// ClassifyItem decodes a failed write's ALL_OLD item (the Item of the
// ConditionalCheckFailedException; nil or empty when there was no item) and
// classifies it. The decoded image is returned for the caches (nil when
// there was no item). A corrupt item is a *bucketitem.CorruptItemError and no
// classification.
func ClassifyItem(old map[string]types.AttributeValue, shape Shape, declared []Declared, now int64) (Classification, *bucketitem.Image, error) {
	if len(old) == 0 {
		return Classify(nil, shape, declared, now), nil, nil
	}
	img, err := bucketitem.Decode(old)
	if err != nil {
		return Classification{}, nil, err
	}
	return Classify(&img, shape, declared, now), &img, nil
}
