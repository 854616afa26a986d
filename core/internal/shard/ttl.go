package shard

import (
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// TTL is the expiry a write stamps on a shard whose limits are limits
// (docs/design.md §2), epoch seconds: none (0) when the limits come from
// the entity's own config (entityLevel) or the multiplier is off (mult ≤
// 0); otherwise the instant now (epoch ms) plus mult times the longest
// time one of the limits' state matters when idle (limit.RecoverySeconds:
// a dripping limit's time to fill from empty under each of its schedule's
// entries, a calendar quota's current period, a session quota's window).
//
// Worked: rpm 100 a minute and tpm 10,000 a minute, mult 7, now
// 1,000,000,000,500 ms: 1,000,000,000 + 7 × 60 = 1,000,000,420.
func TTL(limits []limit.Limit, entityLevel bool, mult, now int64) int64 {
	if mult <= 0 || entityLevel {
		return 0
	}
	var horizon int64 // seconds
	at := time.UnixMilli(now)
	for _, l := range limits {
		horizon = max(horizon, l.RecoverySeconds(at))
	}
	return now/1000 + horizon*mult
}
