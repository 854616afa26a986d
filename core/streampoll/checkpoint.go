package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Checkpoint is where a poller stands in a stream: for every shard it has
// seen, where reading resumes. It is what a long-running process saves so
// that a restart goes on where the last run stopped, as an event source
// mapping does, instead of from StartingPosition (Options.Resume,
// Options.OnCheckpoint). Its JSON form is stable.
//
// A checkpoint moves only after the records before it are done with:
// delivered successfully, filtered out, or dropped after MaxRetries. A
// process that stops between a delivery and saving the checkpoint that
// follows re-delivers that batch on restart; delivery is at least once,
// as in Lambda.
type Checkpoint struct {
	// StreamARN is the stream the positions belong to.
	StreamARN string `json:"stream_arn"`
	// Shards maps a shard id to where reading resumes in it.
	Shards map[string]ShardCheckpoint `json:"shards"`
}

// ShardCheckpoint is where reading resumes in one shard.
type ShardCheckpoint struct {
	// Position is an iterator type: TRIM_HORIZON (nothing read yet),
	// LATEST (anchored at the first start, nothing read since),
	// AFTER_SEQUENCE_NUMBER (the records up to Sequence are done) or
	// AT_SEQUENCE_NUMBER (the record Sequence waits for re-delivery).
	Position string `json:"position"`
	// Sequence is the sequence number of the AT_ and AFTER_ positions.
	Sequence string `json:"sequence,omitempty"`
	// Done is true for a shard read to its end, skipped, or gone.
	Done bool `json:"done,omitempty"`
}

// position is the shard position c resumes at.
func (c ShardCheckpoint) position() position {
	return position{kind: streamtypes.ShardIteratorType(c.Position), seq: c.Sequence}
}

// validate reports what makes c unusable as Options.Resume for streamARN.
func (c *Checkpoint) validate(streamARN string) error {
	if c.StreamARN != streamARN {
		return fmt.Errorf("%w: Resume is a checkpoint of stream %q, not %q", ErrInvalidOptions, c.StreamARN, streamARN)
	}
	for id, s := range c.Shards {
		switch streamtypes.ShardIteratorType(s.Position) {
		case iterTrimHorizon, iterLatest:
		case iterAt, iterAfter:
			if s.Sequence == "" {
				return fmt.Errorf("%w: Resume: shard %s: %s with no sequence number", ErrInvalidOptions, id, s.Position)
			}
		default:
			if !s.Done {
				return fmt.Errorf("%w: Resume: shard %s: position %q", ErrInvalidOptions, id, s.Position)
			}
		}
	}
	return nil
}

// Checkpoint returns the poller's checkpoint as of the last time it moved
// (before the first Start: Options.Resume, or an empty one). It may be
// called at any time, from the handler too.
func (p *Poller) Checkpoint() Checkpoint {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return Checkpoint{StreamARN: p.streamARN, Shards: maps.Clone(p.saved)}
}

// checkpointed records the shards' positions after they moved and hands
// them to OnCheckpoint. Only Start, Poll and DrainOnce call it, holding mu.
func (p *Poller) checkpointed(ctx context.Context) {
	shards := make(map[string]ShardCheckpoint, len(p.shards))
	for _, sh := range p.shards {
		shards[sh.id] = ShardCheckpoint{Position: string(sh.pos.kind), Sequence: sh.pos.seq, Done: sh.done}
	}
	p.statsMu.Lock()
	p.saved = shards
	p.statsMu.Unlock()
	if p.opts.OnCheckpoint != nil {
		p.opts.OnCheckpoint(ctx, Checkpoint{StreamARN: p.streamARN, Shards: maps.Clone(shards)})
	}
}

// Backlog counts the records a poller resuming from c has yet to read: in
// each shard c lists and has not finished, those after its position (from
// the record itself for AT_SEQUENCE_NUMBER, none for LATEST), and every
// record of the shards the stream lists that c does not. It stops counting
// at most, and reports whether it did (the count is then a lower bound).
// It reads the stream with GetRecords as a poller does, without delivering
// anything: a measure of a poller's lag in records, for a stream small
// enough to read through (DynamoDB Local, whose records' creation times
// are too coarse to time the lag; docs/decisions.md P51).
func Backlog(ctx context.Context, client StreamsAPI, c Checkpoint, most int) (n int, capped bool, err error) {
	p, err := New(client, c.StreamARN, Options{Handler: func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, errors.New("streampoll: Backlog delivers nothing")
	}, Resume: &c, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, false, err
	}
	if _, err := p.refresh(ctx, true); err != nil {
		return 0, false, err
	}
	for _, sh := range p.shards {
		if sh.done || sh.pos.kind == iterLatest {
			continue
		}
		for n < most && !sh.done {
			rd, err := p.fill(ctx, sh, min(most-n, maxGetRecords))
			if err != nil {
				return n, false, err
			}
			n += rd.read
			sh.pos, sh.iter = rd.pos, rd.next
			if rd.closed || rd.read == 0 {
				break
			}
		}
		if n >= most {
			return n, true, nil
		}
	}
	return n, false, nil
}
