// Package aggregator is the DynamoDB Streams consumer of the limiter table
// (docs/design.md §6): it turns the tc counters of bucket records into usage
// snapshots, exactly once under redelivery, keeps hot buckets refilled under
// the rf lock, doubles and propagates shards, and copies stamps into clones
// without ever extending them. It reads only stream images and writes only
// conditional or commutative updates.
//
// Process takes one batch of stream records as a DynamoDB Streams event
// source mapping delivers it; functions/aggregator/handler serves it as the
// Lambda function and answers with partial batch failures.
//
// Exactly once. Each snapshot item carries one S attribute `seq#{shard}`
// per bucket shard: the padded sequence number of the last record of that
// shard applied to it. A run of consecutive records of one bucket shard that
// map to the same item is one UpdateItem conditioned on the mark being below
// the run's first record; when it is not, the records above the mark are
// written one by one, each under its own condition. Records at or below the
// mark are already applied, so a redelivered batch, a prefix, a suffix or a
// bisected half changes nothing.
//
// Reporting. A failed snapshot write leaves the first record of its run to
// be delivered again; so do runs not started near the deadline. Of those,
// Process returns only the lowest sequence number (Result.RedeliverFrom):
// for a stream, Lambda uses the reported identifiers as a checkpoint,
// restarting from the lowest and redelivering everything after it, so
// further identifiers change nothing, and a single one states exactly what
// happens. Every record before it has all its snapshot work applied (a
// record's runs can only fail with the record or an earlier one reported),
// which is what makes the checkpoint safe. Poison records are never
// reported.
package aggregator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// Window is a snapshot window.
type Window string

// The snapshot windows (docs/design.md §6).
const (
	Hourly  Window = "hourly"
	Daily   Window = "daily"
	Monthly Window = "monthly"
)

// Config is the aggregator's configuration (docs/design.md §6). The Lambda
// function reads the first three fields from its environment, under the
// names given (functions/aggregator/handler.SettingsFromEnv).
type Config struct {
	// TableName is the limiter table (TABLE_NAME).
	TableName string
	// Windows are the snapshot windows (SNAPSHOT_WINDOWS, default hourly,daily).
	// Each gets its own item per window start; where a finer window starts
	// with a coarser configured one, its key is suffixed (see SnapshotKey).
	Windows []Window
	// SnapshotTTL is how long a snapshot lives (SNAPSHOT_TTL_DAYS, default 90 days).
	SnapshotTTL time.Duration
	// DeadlineMargin: with less than this left on the invocation's context,
	// no new write starts and unfinished must-succeed work is reported
	// (default 5 s, docs/design.md §6).
	DeadlineMargin time.Duration
	// Workers bounds the snapshot writes in flight (default 8).
	Workers int
}

// DB is the part of the DynamoDB client the aggregator uses.
type DB interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Options carry the aggregator's collaborators; zero values are defaults.
type Options struct {
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
	// Logger receives the JSON log lines (default slog.Default()).
	Logger *slog.Logger
	// Metrics receives one EMF document per batch; the Lambda function
	// passes WriterSink(os.Stdout). Nil disables metrics.
	Metrics MetricsSink
	// Maintainer does the best-effort refill, doubling and propagation
	// after the snapshots (the Lambda function wires *maintenance.Maintainer).
	// Nil: no maintenance.
	Maintainer Maintainer
}

// Aggregator processes stream batches. It is safe for concurrent use.
type Aggregator struct {
	db      DB
	cfg     Config
	now     func() time.Time
	log     *slog.Logger
	metrics MetricsSink
	maint   Maintainer
}

// New returns an aggregator writing to cfg.TableName through db.
func New(db DB, cfg Config, o Options) (*Aggregator, error) {
	if db == nil {
		return nil, errors.New("aggregator: no DynamoDB client")
	}
	if cfg.TableName == "" {
		return nil, errors.New("aggregator: no table name")
	}
	if len(cfg.Windows) == 0 {
		cfg.Windows = DefaultWindows()
	}
	var windows []Window
	for _, w := range cfg.Windows {
		if windowRank(w) == 0 {
			return nil, fmt.Errorf("aggregator: unknown snapshot window %q (hourly, daily, monthly)", w)
		}
		if !slices.Contains(windows, w) {
			windows = append(windows, w)
		}
	}
	cfg.Windows = windows
	if cfg.SnapshotTTL == 0 {
		cfg.SnapshotTTL = 90 * 24 * time.Hour
	}
	if cfg.DeadlineMargin == 0 {
		cfg.DeadlineMargin = 5 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("logger", "aggregator")
	return &Aggregator{db: db, cfg: cfg, now: o.Clock, log: o.Logger, metrics: o.Metrics, maint: o.Maintainer}, nil
}

// Result is what Process did with one batch.
type Result struct {
	// RedeliverFrom is the sequence number of the lowest record whose
	// snapshot work is not done, from which the batch must be delivered
	// again; "" when all of it is done (see the package doc). The Lambda
	// function reports it as the batch's one BatchItemFailure.
	RedeliverFrom string
}

// Process processes one batch of stream records, in stream order
// (docs/design.md §6): parse and classify the records, write the snapshots
// (must succeed), then refill, double and propagate (best effort). When
// some must-succeed work is not done, the result names the lowest sequence
// number to redeliver from (see the package doc); poison records are
// logged and skipped, never reported. A panic inside becomes an error,
// never a crash of the caller.
func (a *Aggregator) Process(ctx context.Context, records []events.DynamoDBEventRecord) (Result, error) {
	return a.guarded(ctx, eventBatch(records))
}

// ProcessText is Process for the records streamimage.ReadEvent read from
// an event's JSON: their images are decoded straight from the text, with
// no map of attribute values per image (docs/design.md §6, "Memory per
// record"). The result is Process's for the same event. The records'
// strings are views of the event's bytes, which must not change until
// ProcessText returns; nothing of them is kept after it.
func (a *Aggregator) ProcessText(ctx context.Context, records []streamimage.Record) (Result, error) {
	res, err := a.guarded(ctx, textBatch(records))
	// The sequence number to redeliver from is a view of the event's
	// bytes: the result gets a copy of its own.
	res.RedeliverFrom = strings.Clone(res.RedeliverFrom)
	return res, err
}

// guarded is process with a panic inside turned into an error.
func (a *Aggregator) guarded(ctx context.Context, records batch) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			a.log.ErrorContext(ctx, "aggregator panic", "panic", fmt.Sprint(r))
			err = fmt.Errorf("aggregator: panic: %v", r)
		}
	}()
	return a.process(ctx, records)
}
