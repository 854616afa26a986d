// Package control is the operator API of the limiter, and the one door for
// every operator write (docs/design.md §8): registering a namespace,
// creating and deleting entities, the limits of the four levels (system,
// resource, an entity's default for every resource, an entity on one
// resource), access (disable a resource, carve an entity out of it, bypass
// its limits), the cascade to parents and on_unavailable. Every write is
// recorded in the namespace's audit trail (AuditEvents reads it) and, before
// the call returns, reaches the buckets already in use: the stamps a bucket
// carries of the operator's decisions (disabled, a bypass or soft-limit
// deadline, the cascade to a parent), which every acquire's write checks,
// and its limits are brought in line, so no acquire goes on from a
// decision the operator has just changed. Reset and TopUp change the
// balances of one bucket, once per operation id.
//
// The writes take the namespace's id (ns), which RegisterNamespace returns
// and Store().ResolveNamespace looks up by name. A service that also
// acquires in the same process passes its limiters in Options.Caches.
// core/provision applies whole manifests through the same writes, the same
// audit trail and the same fan-outs.
//
// Every bucket stamp is derived, bucket by bucket, from config read
// uncached for that bucket's own entity and resource, so re-asserting a
// resource never clobbers an entity's carve-out, and every bypass or soft
// stamp is a deadline at most StampTTL after that read.
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package control

import (
	"crypto/rand"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/internal/ulid"
)

// DB is the part of the DynamoDB API the controls use. *dynamodb.Client
// satisfies it.
type DB interface {
	config.DB
}

// Options configure Controls. The zero value of every field is its default.
type Options struct {
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
	// StampTTL bounds every bypass or soft stamp's deadline after the
	// config read that justified it (default 60 s, as the limiter's).
	StampTTL time.Duration
	// Workers bounds the bucket writes of a fan-out in flight (default 8).
	Workers int
	// AuditRetention is how long audit events are kept (default 90 days).
	AuditRetention time.Duration
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// BucketTTLMultiplier sets when a bucket whose limits a parameter
	// sync moves back to its resource or the system expires if left idle:
	// this many times the longest time one of its limits takes to refill
	// from empty (default 7, as the limiter's; negative: never).
	BucketTTLMultiplier int64
	// Entropy feeds the ids of audit events and of operations minted
	// for a Reset or TopUp without one (default crypto/rand).
	Entropy io.Reader
	// Caches are this process's limiters (anything with
	// InvalidateConfigCache): every operator call clears them before and
	// after it writes, so that no limiter here rejects locally from a
	// bucket state the call changed (docs/design.md §10).
	Caches []Cache
	// OnProgress, when set, is told a fan-out's counts as they change: after
	// each discovery pass has counted the buckets it found (Buckets grows)
	// and after each bucket's outcome, with the scope being fanned out. The
	// last call of a fan-out carries the counts the write returns. Calls are
	// serialised but come from the fan-out's workers: keep them quick (a
	// progress bar, a log line).
	OnProgress func(Scope, Progress)
}

// Cache is a process-local cache an operator write makes stale: what a
// limiter remembers of limits and of the buckets it rejected from.
// *limiter.Limiter is one.
type Cache interface {
	InvalidateConfigCache()
}

// Controls are the operator API of one table: every operator write goes
// through them. Safe for concurrent use.
type Controls struct {
	db      DB
	table   string
	store   *config.Store
	writer  *config.Writer // the storage half of every write (docs/design.md §8)
	now     func() time.Time
	ttl     time.Duration
	workers int
	audit   time.Duration
	log     *slog.Logger
	entropy io.Reader
	ids     ulid.Monotonic // event ids sort in the order events happen
	caches  []Cache
	ttlMult int64
	onProg  func(Scope, Progress)
}

// New returns the controls of table through db.
func New(db DB, table string, o Options) *Controls {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.StampTTL <= 0 {
		o.StampTTL = 60 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.AuditRetention <= 0 {
		o.AuditRetention = 90 * 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Entropy == nil {
		o.Entropy = rand.Reader
	}
	if o.BucketTTLMultiplier == 0 {
		o.BucketTTLMultiplier = 7
	}
	c := &Controls{
		db: db, table: table,
		now: o.Clock, ttl: o.StampTTL, workers: o.Workers, audit: o.AuditRetention, log: o.Logger, entropy: o.Entropy,
		caches: slices.Clone(o.Caches), ttlMult: max(o.BucketTTLMultiplier, 0), onProg: o.OnProgress,
	}
	c.store = config.NewStore(db, table, config.WithClock(o.Clock), config.WithLogger(o.Logger), config.WithCacheTTL(-1),
		config.WithOnChange(c.invalidate))
	c.writer = c.store.Writer(capability.ConfigWrite{})
	return c
}

// invalidate clears the process's caches (Options.Caches).
func (c *Controls) invalidate() {
	for _, k := range c.caches {
		k.InvalidateConfigCache()
	}
}

// changing clears the caches now and returns the function a writer defers
// to clear them again when it is done (fan-out included).
func (c *Controls) changing() func() {
	c.invalidate()
	return c.invalidate
}

// Store is the config store the controls read through, its cache off
// (every read is fresh): for reading limits, entities and namespaces. It
// writes no config; every operator write goes through the Controls.
func (c *Controls) Store() *config.Store { return c.store }
