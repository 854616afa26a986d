package streampoll

import (
	"context"
	"fmt"
	"maps"

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
