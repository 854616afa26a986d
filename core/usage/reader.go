package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// DB is the part of the DynamoDB client the reader uses: it only reads.
// *dynamodb.Client satisfies it.
type DB interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Page sizes of a snapshot Query (Options.PageSize).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Options configure a Reader; the zero value is the defaults. New copies
// them.
type Options struct {
	// PageSize is how many items one Query reads (its Limit): the snapshots
	// a page holds at most, before the window and limit filters. Default
	// DefaultPageSize; at most MaxPageSize.
	PageSize int
	// ConsistentRead makes the reads of the table strongly consistent:
	// an entity's snapshots, the items behind a KEYS_ONLY index page, the
	// bucket shards. It doubles their read units. Queries of an index are
	// always eventually consistent (DynamoDB offers nothing else there).
	ConsistentRead bool
	// Clock is the instant live state is projected to (default time.Now).
	Clock func() time.Time
	// Logger receives a warning for every stored item skipped as corrupt,
	// naming the attribute and the reason, never the entity (default
	// slog.Default()).
	Logger *slog.Logger
}

// Reader reads usage: the snapshots the aggregator writes and the live
// state of buckets, in one namespace of one table. It only reads, and it
// is safe for concurrent use.
type Reader struct {
	db         DB
	table, ns  string
	pageSize   int32
	consistent bool
	now        func() time.Time
	log        *slog.Logger
}

// New returns a reader of namespace ns (its id, as core/control takes it)
// in table through db.
func New(db DB, table, ns string, o Options) (*Reader, error) {
	switch {
	case db == nil:
		return nil, errors.New("usage: no DynamoDB client")
	case table == "":
		return nil, errors.New("usage: no table name")
	case o.PageSize < 0 || o.PageSize > MaxPageSize:
		return nil, fmt.Errorf("usage: page size %d outside 1..%d", o.PageSize, MaxPageSize)
	}
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Reader{
		db: db, table: table, ns: ns, pageSize: int32(o.PageSize), consistent: o.ConsistentRead,
		now: o.Clock, log: o.Logger.With("logger", "usage"),
	}, nil
}

// Namespace returns the namespace id the reader reads.
func (r *Reader) Namespace() string { return r.ns }

type item = map[string]types.AttributeValue

// BatchGetItem limits and the retry of its UnprocessedKeys.
const (
	batchGetChunk = 100
	batchRetries  = 5
	batchBackoff  = 25 * time.Millisecond
)

// errUnprocessed reports keys DynamoDB still left unprocessed after the
// retries.
var errUnprocessed = errors.New("unprocessed after retries")

// batchGet reads keys with BatchGetItem, 100 at a time, re-sending
// UnprocessedKeys with a doubling wait; projection, when not "", is the
// ProjectionExpression over names. It returns the items found by key;
// keys with no item are missing from the map.
func (r *Reader) batchGet(ctx context.Context, keys []schema.Key, projection string, names map[string]string) (map[schema.Key]item, error) {
	found := make(map[schema.Key]item, len(keys))
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), batchGetChunk)]
		keys = keys[len(chunk):]
		req := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			req[i] = k.AttributeValues()
		}
		for attempt := 0; ; attempt++ {
			ka := types.KeysAndAttributes{Keys: req, ConsistentRead: aws.Bool(r.consistent)}
			if projection != "" {
				ka.ProjectionExpression, ka.ExpressionAttributeNames = aws.String(projection), names
			}
			out, err := r.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{r.table: ka}})
			if err != nil {
				return nil, fmt.Errorf("BatchGetItem: %w", err)
			}
			for _, it := range out.Responses[r.table] {
				found[keyOf(it)] = it
			}
			req = out.UnprocessedKeys[r.table].Keys
			if len(req) == 0 {
				break
			}
			if attempt >= batchRetries {
				return nil, fmt.Errorf("BatchGetItem: %d keys %w", len(req), errUnprocessed)
			}
			if err := wait.Sleep(ctx, batchBackoff<<attempt); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

// keyOf returns an item's primary key ("" parts when missing).
func keyOf(it item) schema.Key {
	pk, _ := str(it[schema.AttrPK])
	sk, _ := str(it[schema.AttrSK])
	return schema.Key{PK: pk, SK: sk}
}

// warnCorrupt logs a stored item skipped because it does not decode: the
// attribute and the reason, not the key, which holds an entity id.
func (r *Reader) warnCorrupt(ctx context.Context, err error) {
	var ce *CorruptSnapshotError
	if errors.As(err, &ce) {
		r.log.WarnContext(ctx, "skipping a stored snapshot that does not decode", "attribute", ce.Attribute, "reason", ce.Reason)
		return
	}
	r.log.WarnContext(ctx, "skipping a stored snapshot that does not decode")
}
