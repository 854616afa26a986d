package limiter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/metric"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Version is this library's protocol version, compared with the table's
// version record (docs/design.md §2). It claims the 0.17 generation of the table
// layout (docs/compatibility.md).
const Version = config.BuildVersion

// DB is the part of the DynamoDB client the limiter uses; *dynamodb.Client
// satisfies it. A DB that wraps the SDK's client passes the call options
// on: the fast path's UpdateItem carries one that reads the returned image
// straight from the response body (docs/design.md §5, "The answer's
// decoding"), so its output then holds no Attributes.
type DB interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Limiter acquires capacity for (entity, resource) pairs of one namespace of
// one table. It is safe for concurrent use by any number of goroutines.
type Limiter struct {
	db       onceWrites
	table    string
	ns       string
	store    *config.Store
	resolver *config.Resolver
	writes   *bucketwrite.Writes
	pairs    *pairCache
	rejects  *rejectionCache // nil: off
	// degraded is set while the last acquire ended in an infrastructure
	// error: no local rejection then (docs/design.md §10).
	degraded atomic.Bool
	stats    counters
	tel      *telemetry
	now      func() time.Time
	intn     func(int) int
	log      *slog.Logger
	sleep    func(context.Context, time.Duration) error

	speculative   bool
	stampTTL      int64 // ms
	ttlMultiplier int64
	onUnavailable config.OnUnavailable

	// gatePassed is the latest reader version the writer gate admitted
	// for this limiter's overrides (requireReaders), under gateMu.
	gateMu     sync.Mutex
	gatePassed string
}

// New returns a limiter for namespace ns (its id, as stored in keys) of
// table. It makes no call; use Open to also check the table's version
// record.
func New(db DB, table, ns string, o Options) (*Limiter, error) {
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return nil, err
	}
	l, err := newLimiter(db, table, ns, o)
	if err != nil {
		return nil, err
	}
	if err := l.observeCache(); err != nil {
		return nil, err
	}
	return l, nil
}

// newLimiter is New without the namespace check: Open sets the namespace
// once it has resolved it.
func newLimiter(db DB, table, ns string, o Options) (*Limiter, error) {
	if table == "" {
		return nil, schema.NewValidationError("table", table, "must not be empty")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(o, table)
	if err != nil {
		return nil, err
	}
	// Every call, the config store's included, is observed (docs/design.md §18).
	db = observedDB{DB: db, t: tel}
	rejects := newRejectionCache(o.RejectionCacheSize, o.RejectionCacheTTL, o.Clock)
	// This process's config and entity writes through Store() clear the
	// rejection cache before and after (docs/design.md §10).
	store := config.NewStore(db, table, config.WithClock(o.Clock), config.WithCacheTTL(o.ConfigCacheTTL), config.WithLogger(o.Logger),
		config.WithOnChange(rejects.clear))
	return &Limiter{
		db: newOnceWrites(db, o.Sleep), table: table, ns: ns,
		store: store, resolver: store.Resolver(), rejects: rejects, tel: tel,
		writes: bucketwrite.NewWrites(table), pairs: newPairCache(o.PairCacheSize, o.PairCacheTTL, o.Clock),
		now: o.Clock, intn: o.Rand, log: o.Logger, sleep: o.Sleep,
		speculative:   !o.DisableSpeculativeWrites,
		stampTTL:      o.StampTTL.Milliseconds(),
		ttlMultiplier: max(o.BucketTTLMultiplier, 0),
		onUnavailable: o.OnUnavailable,
	}, nil
}

// Open opens a limiter on namespace (its name, as users and the Python
// client call it; an id, as keys store it, is accepted too) of table. It is
// New after two reads: the client version check of docs/design.md §2, which
// refuses to run below the table's client_min_version
// (VersionMismatchError), against another schema major
// (IncompatibleSchemaError), or on a table nothing has stamped
// (MissingVersionError, which says how to stamp it); then the namespace,
// resolved once: a registered name gives its id; otherwise a string that
// is the id of a live namespace is taken as it is. Neither is a
// *config.NamespaceNotFoundError naming it; a deleted namespace is a
// *config.NamespaceStateError.
func Open(ctx context.Context, db DB, table, namespace string, o Options) (*Limiter, error) {
	l, err := newLimiter(db, table, "", o)
	if err != nil {
		return nil, err
	}
	vc, err := l.store.CheckVersion(ctx, Version)
	if err != nil {
		return nil, err
	}
	if !vc.Found {
		return nil, &config.MissingVersionError{Table: table}
	}
	if l.ns, err = resolveNamespace(ctx, l.store, namespace); err != nil {
		return nil, err
	}
	if err := l.observeCache(); err != nil {
		return nil, err
	}
	return l, nil
}

// observeCache has the rejection cache's counters reported to the meter
// provider (telemetry.go) until the limiter is collected: the callback
// holds the cache, and a cleanup on the limiter drops the registration.
func (l *Limiter) observeCache() error {
	if l.rejects == nil {
		return nil
	}
	reg, err := l.tel.observeCache(l.rejects, l.ns)
	if err != nil {
		return fmt.Errorf("limiter: telemetry: %w", err)
	}
	runtime.AddCleanup(l, func(r metric.Registration) { _ = r.Unregister() }, reg)
	return nil
}

// resolveNamespace is the namespace id of namespace, a name or an id (see
// Open).
func resolveNamespace(ctx context.Context, store *config.Store, namespace string) (string, error) {
	id, err := store.ResolveNamespace(ctx, namespace)
	var nf *config.NamespaceNotFoundError
	var bad *schema.InvalidNameError
	switch {
	case err == nil:
		return id, nil
	case !errors.As(err, &nf) && !errors.As(err, &bad):
		return "", err
	case schema.ValidateNamespaceID(namespace) != nil:
		return "", err
	}
	if _, idErr := store.NamespaceName(ctx, namespace); idErr != nil {
		if errors.As(idErr, &nf) {
			return "", &config.NamespaceNotFoundError{Name: namespace}
		}
		return "", idErr
	}
	return namespace, nil
}

// Store is the config store the limiter reads config through (the cache
// it holds is the limiter's). Operators change config through core/control,
// passing the limiter in control.Options.Caches so that their writes clear
// its caches (docs/design.md §8).
func (l *Limiter) Store() *config.Store { return l.store }

// Namespace is the namespace id the limiter works in.
func (l *Limiter) Namespace() string { return l.ns }

// InvalidateConfigCache drops every cached config entry and every state
// in the rejection cache. An operator tool that writes through another
// client in this process (core/control) calls it before and after each
// write, so this process never rejects locally from a state the write
// changed.
func (l *Limiter) InvalidateConfigCache() {
	l.rejects.clear()
	l.resolver.Invalidate()
}

// Stats are a limiter's counters since it was made.
type Stats struct {
	// LocalRejections counts RateLimitExceeded decided by the rejection
	// cache with no DynamoDB call (RateLimitExceeded.Local).
	LocalRejections int64
	// ServerRejections counts RateLimitExceeded decided from a DynamoDB
	// response.
	ServerRejections int64
	// RejectionCacheEntries is the number of bucket shards the rejection
	// cache holds now.
	RejectionCacheEntries int
	// RejectionCacheHits counts the rejection cache's lookups that found a
	// trusted state of the pair (one per pair judged: an acquire judges
	// its pair, and the parent's when the child's state names one),
	// whether or not the state then rejected.
	RejectionCacheHits int64
	// RejectionCacheEvictions counts the pairs the rejection cache dropped
	// to stay within Options.RejectionCacheSize, least recently stored
	// first.
	RejectionCacheEvictions int64
}

type counters struct {
	localRejections, serverRejections atomic.Int64
}

// Stats returns the limiter's counters, for a caller's metrics.
func (l *Limiter) Stats() Stats {
	rc := l.rejects.stats()
	return Stats{
		LocalRejections:         l.stats.localRejections.Load(),
		ServerRejections:        l.stats.serverRejections.Load(),
		RejectionCacheEntries:   rc.entries,
		RejectionCacheHits:      rc.hits,
		RejectionCacheEvictions: rc.evictions,
	}
}

func (l *Limiter) nowMs() int64 { return l.now().UnixMilli() }
