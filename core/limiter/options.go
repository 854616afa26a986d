package limiter

import (
	"context"
	"log/slog"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// Options configure a Limiter. The zero value of every field is its
// default; where a negative value means something (off), the field says so.
type Options struct {
	// Clock is the wall clock (default time.Now). Inject a fake one in tests.
	Clock func() time.Time
	// Rand draws shards: it returns a uniform integer in [0, n). The default
	// is math/rand/v2.IntN. Never derive a shard from a hash (docs/design.md §5).
	Rand func(n int) int
	// DisableSpeculativeWrites skips the fast path: every acquire takes the
	// slow path (and never consumes wcu, so never doubles). Default false.
	DisableSpeculativeWrites bool
	// OnUnavailable is the default action on an infrastructure error when
	// neither the call nor the system config says (docs/design.md §7); default block.
	OnUnavailable config.OnUnavailable
	// StampTTL bounds the deadline of every soft or bypass stamp this
	// process writes (docs/design.md §8); default 60 s.
	StampTTL time.Duration
	// ConfigCacheTTL is the config cache lifetime; zero means the default
	// (config.DefaultCacheTTL, 60 s), negative disables the cache.
	ConfigCacheTTL time.Duration
	// PairCacheSize bounds how many (entity, resource) pairs the limiter
	// remembers (shard count, cascade, bypass, the last bucket image);
	// least recently used pairs are forgotten first. Zero means
	// DefaultPairCacheSize; negative keeps none (every acquire starts
	// cold: correct, but more calls).
	PairCacheSize int
	// PairCacheTTL is how long a pair is remembered after the last image
	// that taught it. Zero means DefaultPairCacheTTL; negative, no age
	// bound (the size still bounds memory).
	PairCacheTTL time.Duration
	// RejectionCacheTTL is how long a bucket state seen in a DynamoDB
	// response may ground a local rejection (docs/design.md §10). Zero means
	// DefaultRejectionCacheTTL (1 s); negative turns the cache off (every
	// rejection is decided by DynamoDB).
	RejectionCacheTTL time.Duration
	// RejectionCacheSize bounds how many bucket shards the rejection cache
	// holds, least recently stored evicted. Zero means
	// DefaultRejectionCacheSize; negative turns the cache off.
	RejectionCacheSize int
	// BucketTTLMultiplier scales the recovery horizon into the TTL of
	// buckets whose limits come from resource or system config (docs/design.md §2);
	// default 7. Negative disables bucket TTL.
	BucketTTLMultiplier int64
	// Logger receives warnings (default slog.Default()). Entity ids are
	// never logged at warning level or above.
	Logger *slog.Logger
	// Sleep waits between transaction-conflict and throttle retries (default a timer
	// that honours ctx). Tests inject one that does not sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Pair cache bounds (Options.PairCacheSize, Options.PairCacheTTL).
const (
	// DefaultPairCacheSize is how many (entity, resource) pairs a limiter
	// remembers by default.
	DefaultPairCacheSize = 10_000
	// DefaultPairCacheTTL is how long a pair is remembered after the last
	// image that taught it.
	DefaultPairCacheTTL = 10 * time.Minute
)

// Rejection cache bounds (Options.RejectionCacheTTL, Options.RejectionCacheSize).
const (
	// DefaultRejectionCacheTTL is how long a bucket state seen in a
	// DynamoDB response may ground a local rejection.
	DefaultRejectionCacheTTL = time.Second
	// DefaultRejectionCacheSize is how many (entity, resource) pairs the
	// rejection cache holds by default (each with the shards seen).
	DefaultRejectionCacheSize = 10_000
)
