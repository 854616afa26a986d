// Package control is the operators' side of the limiter (docs/design.md
// §8): the writers of the access settings (disable, carve-out, bypass),
// with the fan-out that re-stamps every affected bucket before a call
// returns, and the audit trail of those changes. Go services, the
// provisioner and a command line all call it.
//
// Every bucket stamp is derived, bucket by bucket, from config read
// uncached for that bucket's own entity and resource, so re-asserting a
// resource never clobbers an entity's carve-out, and every bypass stamp is
// a deadline at most StampTTL after that read.
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
	// AuditRetention is how long audit events live (default 90 days).
	AuditRetention time.Duration
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// BucketTTLMultiplier scales a bucket's recovery horizon into the TTL
	// a parameter sync gives a bucket whose limits now come from its
	// resource or the system (default 7, the limiter's; negative: none).
	BucketTTLMultiplier int64
	// Entropy feeds event ids (default crypto/rand).
	Entropy io.Reader
	// Caches are this process's limiters (anything with
	// InvalidateConfigCache): every operator call clears them before and
	// after it writes, so that no limiter here rejects locally from a
	// bucket state the call changed (docs/design.md §10).
	Caches []Cache
}

// Cache is a process-local cache an operator write makes stale;
// *limiter.Limiter is one.
type Cache interface {
	InvalidateConfigCache()
}

// Controls write the operator controls of one table. Safe for concurrent
// use.
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
		caches: slices.Clone(o.Caches), ttlMult: max(o.BucketTTLMultiplier, 0),
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

// Store is the config store the controls read through (its cache off:
// every read is fresh). Its writers are not for operators: every write
// goes through the Controls.
func (c *Controls) Store() *config.Store { return c.store }
