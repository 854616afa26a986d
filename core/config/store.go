package config

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// ReadDB is the part of the DynamoDB API the Resolver uses.
// *dynamodb.Client satisfies it.
type ReadDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// DB is the part of the DynamoDB API the Store uses. *dynamodb.Client
// satisfies it.
type DB interface {
	ReadDB
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// DefaultCacheTTL is the config cache TTL (docs/design.md §7, §5).
const DefaultCacheTTL = 60 * time.Second

// Defaults of the retry loop for BatchGetItem UnprocessedKeys and
// BatchWriteItem UnprocessedItems.
const (
	DefaultBatchRetries = 5
	DefaultBatchBackoff = 25 * time.Millisecond
	maxBatchBackoff     = time.Second
)

// maxWriteAttempts bounds a read-modify-write loop that loses to concurrent
// writers (then ErrConflict).
const maxWriteAttempts = 4

// Option configures a Store or a Resolver.
type Option func(*options)

type options struct {
	cacheTTL     time.Duration
	now          func() time.Time
	entropy      io.Reader
	logger       *slog.Logger
	batchRetries int
	batchBackoff time.Duration
	onChange     []func()
}

func buildOptions(opts []Option) options {
	o := options{
		cacheTTL:     DefaultCacheTTL,
		now:          time.Now,
		entropy:      rand.Reader,
		batchRetries: DefaultBatchRetries,
		batchBackoff: DefaultBatchBackoff,
	}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}

// WithCacheTTL sets the config cache TTL. As everywhere in this module,
// zero means the default (DefaultCacheTTL); a negative value disables the
// cache.
func WithCacheTTL(d time.Duration) Option {
	return func(o *options) {
		switch {
		case d == 0:
			o.cacheTTL = DefaultCacheTTL
		case d < 0:
			o.cacheTTL = 0 // off
		default:
			o.cacheTTL = d
		}
	}
}

// WithClock sets the clock (default time.Now). Cache expiry, `created_at`,
// ULIDs, `updated_at` and ResolveAccess's readAt all read it.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithEntropy sets the source of ULID randomness (default crypto/rand).
func WithEntropy(r io.Reader) Option {
	return func(o *options) {
		if r != nil {
			o.entropy = r
		}
	}
}

// WithLogger sets where corrupt config items are reported (default
// slog.Default() at construction).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithBatchRetries sets how many times a BatchGetItem's UnprocessedKeys or a
// BatchWriteItem's UnprocessedItems are re-sent (default
// DefaultBatchRetries), and the first backoff (default DefaultBatchBackoff;
// it doubles per attempt up to one second, with jitter). Negative values
// are treated as 0.
func WithBatchRetries(retries int, backoff time.Duration) Option {
	return func(o *options) {
		o.batchRetries = max(retries, 0)
		o.batchBackoff = max(backoff, 0)
	}
}

// WithOnChange registers f to run before and after every write the Store
// makes to a config item or an entity (a limiter passes
// the clearing of its rejection cache, docs/design.md §10). f must be cheap
// and must not call back into the Store.
func WithOnChange(f func()) Option {
	return func(o *options) {
		if f != nil {
			o.onChange = append(o.onChange, f)
		}
	}
}

// changing runs the OnChange hooks, then returns the function a writer
// defers: it evicts k from the resolver (when k is non-empty) and runs
// the hooks again.
func (s *Store) changing(k schema.Key) func() {
	s.notify()
	return func() {
		if !k.IsZero() {
			s.resolver.evictKey(k)
		}
		s.notify()
	}
}

func (s *Store) notify() {
	for _, f := range s.opts.onChange {
		f()
	}
}

// Store reads the entities, namespaces and config items of one table, and
// reads and stamps its version record. It owns a Resolver whose cache the
// config writes of its Writer keep fresh (only in this process: other
// writers' changes show after the TTL). Operators write config through
// core/control, not through a Store (docs/design.md §8). A Store is safe for
// concurrent use.
type Store struct {
	db       DB
	table    string
	opts     options
	resolver *Resolver
}

// NewStore returns a Store for table through db.
func NewStore(db DB, table string, opts ...Option) *Store {
	o := buildOptions(opts)
	return &Store{db: db, table: table, opts: o, resolver: newResolver(db, table, o)}
}

// Resolver returns the Store's resolver, whose cache the Store's own config
// writes evict.
func (s *Store) Resolver() *Resolver { return s.resolver }

// validateNamespace checks a namespace id used in a key: non-empty, at most
// 64 bytes, free of `/` and `#`, and not the reserved `_`. Namespace ids
// are opaque (docs/design.md §2); registration, which mints them, applies the full
// schema.ValidateNamespaceID.
func validateNamespace(ns string) error {
	const field = "namespace_id"
	switch {
	case ns == "":
		return schema.NewInvalidIdentifierError(field, ns, "cannot be empty")
	case len(ns) > 64:
		return schema.NewInvalidIdentifierError(field, ns, "exceeds maximum length of 64")
	case ns == schema.ReservedNamespace:
		return schema.NewInvalidIdentifierError(field, ns, "the reserved namespace '_' holds only table-level records")
	case strings.ContainsAny(ns, "/#"):
		return schema.NewInvalidIdentifierError(field, ns, "cannot contain '/' or '#'")
	}
	return nil
}

// isoSeconds formats t as `YYYY-MM-DDTHH:MM:SSZ` in UTC (docs/design.md §2).
func isoSeconds(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
