// Package streampoll reads a DynamoDB stream through the Streams API and
// hands its records to a Lambda-style handler the way an event source
// mapping with FunctionResponseTypes=ReportBatchItemFailures does. It stands
// in for Lambda wherever there is no Lambda: integration tests on DynamoDB
// Local and `make run`.
//
// What it mirrors:
//
//   - Shards are read in order, one batch at a time; a child shard is read
//     only after its parent is finished. A closed shard (GetRecords returns
//     no NextShardIterator) is finished once its last batch succeeds or is
//     dropped.
//   - Records are converted with streamimage.RecordFromStreams, with the
//     stream ARN as eventSourceARN.
//   - A response with BatchItemFailures checkpoints the records before the
//     failed record with the lowest sequence number and re-delivers from that
//     record, re-read with an AT_SEQUENCE_NUMBER iterator, so the re-delivered
//     batch is filled up to the batch size with later records. An
//     ItemIdentifier that is empty or names no record of the batch fails the
//     whole batch.
//   - A handler error (or panic, or a whole-batch failure) re-delivers the
//     whole batch, or, with BisectOnError, its first half and then its
//     second half.
//   - After MaxRetries re-deliveries the failing records go to OnFailure and
//     are skipped.
//
// What it does not: parallel shards (shards are visited in turn in one
// goroutine), batching windows, MaximumRecordAgeInSeconds and payload
// limits.
package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
)

// StreamsAPI is the part of the DynamoDB Streams API the poller uses.
// *dynamodbstreams.Client satisfies it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Handler is the Lambda handler signature for DynamoDB stream events with
// ReportBatchItemFailures.
type Handler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// StartingPosition is where reading starts in the shards that exist when the
// poller starts (event source mapping StartingPosition). Shards found later
// are always read from their start, as Lambda does.
type StartingPosition string

// Starting positions.
const (
	// TrimHorizon starts at the oldest record still in the stream.
	TrimHorizon StartingPosition = "TRIM_HORIZON"
	// Latest starts after the newest record at Start; shards already closed
	// at that time are skipped.
	Latest StartingPosition = "LATEST"
)

// Defaults and limits of Options.
const (
	DefaultBatchSize    = 100
	MaxBatchSize        = 10000 // Lambda's limit for DynamoDB streams
	DefaultPollInterval = 100 * time.Millisecond
	// RetryForever as MaxRetries re-delivers a failing batch until it
	// succeeds (Lambda's MaximumRetryAttempts = -1).
	RetryForever = -1
	// maxGetRecords is the Streams API's GetRecords limit.
	maxGetRecords = 1000
	// shardRefreshIdlePolls is how many idle polls Poll makes between
	// DescribeStream calls (besides the one after a shard closes).
	shardRefreshIdlePolls = 50
)

// Options configure a Poller. Handler is required; every other zero value
// has a default.
type Options struct {
	// Handler receives the batches.
	Handler Handler
	// BatchSize is the most records per invocation (default 100, at most
	// 10000). A batch may hold fewer: one is delivered as soon as a shard
	// has no more records to read.
	BatchSize int
	// StartingPosition defaults to TrimHorizon, so that DrainOnce delivers
	// everything in the stream. The stack's mapping uses LATEST
	// (docs/design.md §6); call Start before writing to anchor Latest.
	StartingPosition StartingPosition
	// MaxRetries is Lambda's MaximumRetryAttempts: how many times a failing
	// batch is re-delivered before its records go to OnFailure and are
	// skipped. Zero means no retries, as in Lambda; RetryForever (any
	// negative value) never gives up. The stack uses 3 (docs/design.md §6).
	//
	// The count restarts whenever the checkpoint moves: a partial failure
	// that checkpoints earlier records counts as the failed record's first
	// failure, and a bisected half that succeeds resets it.
	MaxRetries int
	// BisectOnError is Lambda's BisectBatchOnFunctionError: a batch that
	// fails as a whole is split in two and the halves are re-delivered in
	// turn; splitting does not count as a retry.
	BisectOnError bool
	// OnFailure receives the records skipped after MaxRetries (Lambda's
	// on-failure destination). Nil logs them at Warn level instead.
	OnFailure func(ctx context.Context, f Failure)
	// Filter, when set, keeps only the records for which it returns true,
	// as event filtering on the mapping does: the others are checkpointed
	// without being delivered.
	Filter func(rec events.DynamoDBEventRecord) bool
	// Timeout, when positive, bounds each invocation's context like a
	// Lambda function timeout.
	Timeout time.Duration
	// PollInterval is how long Poll waits when no shard has new records
	// (default 100 ms).
	PollInterval time.Duration
	// Wait performs that wait; it must return ctx.Err() when ctx ends
	// first. The default uses a timer. Tests inject their own so that they
	// never sleep.
	Wait func(ctx context.Context, d time.Duration) error
	// Logger receives progress (Debug), failures and drops (Warn) and data
	// loss (Error). Nil means slog.Default().
	Logger *slog.Logger
	// Resume, when set, is a checkpoint of this stream saved by an earlier
	// poller (Poller.Checkpoint, OnCheckpoint): the shards it lists resume
	// where it says, and StartingPosition applies to none (a shard it does
	// not list is newer than the checkpoint and is read from its start). A
	// position whose records the stream has trimmed restarts at the trim
	// horizon, and a shard the stream no longer has is finished, as on any
	// read.
	Resume *Checkpoint
	// OnCheckpoint, when set, is called with the whole checkpoint each
	// time it moves (after Start, after each delivery that moves it,
	// after a shard finishes or is found), from the goroutine of Start,
	// Poll or DrainOnce. Saving it and passing it as Resume makes a
	// restart go on where this poller stopped.
	OnCheckpoint func(ctx context.Context, c Checkpoint)
}

// Failure describes records skipped after MaxRetries.
type Failure struct {
	// ShardID is the shard the records came from.
	ShardID string
	// Records are the records of the last failing delivery, from the
	// failed record on.
	Records []events.DynamoDBEventRecord
	// Attempts counts the failed deliveries of the first of Records.
	Attempts int
	// Err is why the last delivery failed: the handler's error, a
	// *PanicError or an *ItemFailuresError.
	Err error
}

// ItemFailuresError reports an invocation whose response listed batch item
// failures.
type ItemFailuresError struct {
	// Identifiers are the ItemIdentifiers of the response, in its order.
	Identifiers []string
	// Invalid is true when some identifier was empty or named no record of
	// the batch, which fails the whole batch (Lambda's rule).
	Invalid bool
}

// Error implements error.
func (e *ItemFailuresError) Error() string {
	if e.Invalid {
		return fmt.Sprintf("streampoll: handler reported batch item failures with an invalid identifier: %q", e.Identifiers)
	}
	return fmt.Sprintf("streampoll: handler reported batch item failures: %s", strings.Join(e.Identifiers, ", "))
}

// PanicError is a handler panic, recovered the way the Lambda runtime does
// and treated as a handler error.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("streampoll: handler panic: %v", e.Value) }

// Stats count what a Poller did.
type Stats struct {
	// Batches is the number of handler invocations.
	Batches int
	// Records is the number of records delivered, re-deliveries included.
	Records int
	// Redeliveries is the number of invocations that re-delivered records
	// after a failed invocation.
	Redeliveries int
	// Failures is the number of invocations that failed: an error, a panic
	// or reported batch item failures.
	Failures int
	// Dropped is the number of records handed to OnFailure and skipped.
	Dropped int
	// Filtered is the number of records Filter discarded.
	Filtered int
}

func (s Stats) sub(o Stats) Stats {
	return Stats{
		Batches:      s.Batches - o.Batches,
		Records:      s.Records - o.Records,
		Redeliveries: s.Redeliveries - o.Redeliveries,
		Failures:     s.Failures - o.Failures,
		Dropped:      s.Dropped - o.Dropped,
		Filtered:     s.Filtered - o.Filtered,
	}
}

// ErrInvalidOptions reports Options New cannot use.
var ErrInvalidOptions = errors.New("streampoll: invalid options")

// Poller delivers one stream's records to a handler. Its methods serialise
// on an internal lock: one of Start, Poll and DrainOnce runs at a time, and
// the handler and OnFailure must not call them (Stats they may call).
type Poller struct {
	client    StreamsAPI
	streamARN string
	opts      Options
	log       *slog.Logger

	mu      sync.Mutex // held by Start, Poll and DrainOnce
	started bool
	shards  []*shard
	byID    map[string]*shard

	statsMu sync.Mutex
	stats   Stats
	saved   map[string]ShardCheckpoint // the checkpoint as of its last move
}

// New returns a poller for the stream streamARN. It makes no calls; the
// first Start, Poll or DrainOnce discovers the shards.
func New(client StreamsAPI, streamARN string, opts Options) (*Poller, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	if streamARN == "" {
		return nil, fmt.Errorf("%w: empty stream ARN", ErrInvalidOptions)
	}
	if opts.Handler == nil {
		return nil, fmt.Errorf("%w: no Handler", ErrInvalidOptions)
	}
	switch {
	case opts.BatchSize == 0:
		opts.BatchSize = DefaultBatchSize
	case opts.BatchSize < 0 || opts.BatchSize > MaxBatchSize:
		return nil, fmt.Errorf("%w: BatchSize %d outside 1..%d", ErrInvalidOptions, opts.BatchSize, MaxBatchSize)
	}
	switch opts.StartingPosition {
	case "":
		opts.StartingPosition = TrimHorizon
	case TrimHorizon, Latest:
	default:
		return nil, fmt.Errorf("%w: StartingPosition %q", ErrInvalidOptions, opts.StartingPosition)
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = RetryForever
	}
	saved := map[string]ShardCheckpoint{}
	if opts.Resume != nil {
		if err := opts.Resume.validate(streamARN); err != nil {
			return nil, err
		}
		saved = maps.Clone(opts.Resume.Shards)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Wait == nil {
		opts.Wait = wait.Sleep
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Poller{
		client:    client,
		streamARN: streamARN,
		opts:      opts,
		log:       log.With("stream", streamARN),
		byID:      map[string]*shard{},
		saved:     saved,
	}, nil
}

// Stats returns the totals since New.
func (p *Poller) Stats() Stats {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.stats
}

func (p *Poller) count(f func(*Stats)) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	f(&p.stats)
}

// Start discovers the shards and fixes the starting position: with Latest,
// records written after Start returns are delivered and earlier ones are
// not. Poll and DrainOnce call it on first use; calling it again does
// nothing.
func (p *Poller) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start(ctx)
}

func (p *Poller) start(ctx context.Context) error {
	if p.started {
		return nil
	}
	if _, err := p.refresh(ctx, true); err != nil {
		return err
	}
	for _, sh := range p.shards {
		if sh.done || sh.pos.kind != iterLatest {
			continue
		}
		// Anchor LATEST now rather than at the first read.
		if err := p.ensureIterator(ctx, sh); err != nil {
			return err
		}
	}
	p.started = true
	p.checkpointed(ctx)
	return nil
}

// Poll delivers records until ctx ends, waiting PollInterval whenever no
// shard has anything new (and before re-delivering a failed batch). It
// returns ctx.Err() when ctx ends, or the first Streams API or conversion
// error.
func (p *Poller) Poll(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.start(ctx); err != nil {
		return p.ctxErr(ctx, err)
	}
	idle := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := p.pass(ctx)
		if err != nil {
			return p.ctxErr(ctx, err)
		}
		added := 0
		if r.closed {
			if added, err = p.refresh(ctx, false); err != nil {
				return p.ctxErr(ctx, err)
			}
		}
		if r.committed || r.closed || added > 0 {
			p.checkpointed(ctx)
		}
		if r.committed || r.closed {
			idle = 0
			continue
		}
		idle++
		if idle%shardRefreshIdlePolls == 0 {
			if added, err := p.refresh(ctx, false); err != nil {
				return p.ctxErr(ctx, err)
			} else if added > 0 {
				p.checkpointed(ctx)
			}
		}
		if err := p.opts.Wait(ctx, p.opts.PollInterval); err != nil {
			return err
		}
	}
}

// DrainOnce delivers every record the stream holds now and returns what it
// did. Failed batches are re-delivered at once, without waiting, until they
// succeed or are dropped, so with RetryForever and a handler that keeps
// failing it returns only when ctx ends. It finishes when every shard is
// either finished or has nothing more to read; on a real stream, where an
// open shard can answer empty before its newest records, that is a best
// effort, but DynamoDB Local shows records as soon as they are written.
func (p *Poller) DrainOnce(ctx context.Context) (Stats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.Stats()
	delta := func() Stats { return p.Stats().sub(before) }
	fresh := !p.started
	if err := p.start(ctx); err != nil {
		return delta(), err
	}
	if !fresh {
		if added, err := p.refresh(ctx, false); err != nil {
			return delta(), err
		} else if added > 0 {
			p.checkpointed(ctx)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return delta(), err
		}
		r, err := p.pass(ctx)
		if err != nil {
			return delta(), err
		}
		added := 0
		if r.closed {
			if added, err = p.refresh(ctx, false); err != nil {
				return delta(), err
			}
		}
		if r.committed || r.closed || added > 0 {
			p.checkpointed(ctx)
		}
		if !r.committed && !r.retry && !r.closed && added == 0 {
			return delta(), nil
		}
	}
}

func (p *Poller) ctxErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// passResult summarises one visit of every ready shard.
type passResult struct {
	committed bool // some shard moved its checkpoint
	retry     bool // some shard has a failed batch to re-deliver
	closed    bool // some shard finished
}

// pass makes one step on every shard that is ready to be read.
func (p *Poller) pass(ctx context.Context) (passResult, error) {
	var r passResult
	for _, sh := range p.shards {
		if !p.ready(sh) {
			continue
		}
		sr, err := p.step(ctx, sh)
		if err != nil {
			return r, err
		}
		r.committed = r.committed || sr.committed
		r.retry = r.retry || sr.retry
		r.closed = r.closed || sh.done
	}
	return r, nil
}

// ready reports whether sh may be read: not finished, and its parent (when
// the stream still lists it) finished.
func (p *Poller) ready(sh *shard) bool {
	if sh.done {
		return false
	}
	if sh.parent == "" {
		return true
	}
	parent, ok := p.byID[sh.parent]
	return !ok || parent.done
}

// invoke calls the handler, turning a panic into a *PanicError.
func (p *Poller) invoke(ctx context.Context, recs []events.DynamoDBEventRecord) (resp events.DynamoDBEventResponse, err error) {
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return p.opts.Handler(ctx, events.DynamoDBEvent{Records: recs})
}
