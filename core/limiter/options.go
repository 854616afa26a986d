package limiter

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
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
	// MeterProvider receives the limiter's metrics: acquisitions by
	// result, acquire durations by path, DynamoDB calls and write units,
	// lease commits, rollbacks and changes, the rejection cache's entries,
	// hits and evictions (README "Metrics and traces", docs/design.md §18).
	// Nil means the global provider (otel.GetMeterProvider()), which
	// records nothing until the program sets one.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per Acquire, Commit, Rollback and
	// lease change, with a child span per DynamoDB call. Nil means the
	// global provider (otel.GetTracerProvider()): no span is started
	// until the program sets one, and one set after the limiter was made
	// is used from then on.
	TracerProvider trace.TracerProvider
	// TelemetryEntityIDs adds the entity id (zae_limiter.entity) to the
	// acquisition and lease metrics and to the spans. Off by default: a
	// series per entity can be unbounded, and an entity id may be a key a
	// service keeps to itself.
	TelemetryEntityIDs bool
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

// withDefaults returns o with every zero field set to its default, or the
// validation error of a field no default can mend.
func (o Options) withDefaults() (Options, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.IntN
	}
	if o.StampTTL == 0 {
		o.StampTTL = 60 * time.Second
	}
	if o.StampTTL < 0 {
		return o, schema.NewValidationError("stamp_ttl", o.StampTTL.String(), "must be positive")
	}
	if o.BucketTTLMultiplier == 0 {
		o.BucketTTLMultiplier = 7
	}
	if o.OnUnavailable == "" {
		o.OnUnavailable = config.OnUnavailableBlock
	}
	if !o.OnUnavailable.Valid() {
		return o, schema.NewValidationError("on_unavailable", string(o.OnUnavailable), "must be allow or block")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Sleep == nil {
		o.Sleep = wait.Sleep
	}
	switch {
	case o.PairCacheSize == 0:
		o.PairCacheSize = DefaultPairCacheSize
	case o.PairCacheSize < 0:
		o.PairCacheSize = 0
	}
	if o.PairCacheTTL == 0 {
		o.PairCacheTTL = DefaultPairCacheTTL
	}
	if o.RejectionCacheTTL == 0 {
		o.RejectionCacheTTL = DefaultRejectionCacheTTL
	}
	if o.RejectionCacheSize == 0 {
		o.RejectionCacheSize = DefaultRejectionCacheSize
	}
	return o, nil
}
