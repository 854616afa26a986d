package streampoll

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

const (
	iterTrimHorizon = streamtypes.ShardIteratorTypeTrimHorizon
	iterLatest      = streamtypes.ShardIteratorTypeLatest
	iterAt          = streamtypes.ShardIteratorTypeAtSequenceNumber
	iterAfter       = streamtypes.ShardIteratorTypeAfterSequenceNumber
)

// maxIteratorRenewals bounds how often one read renews an expired or
// trimmed iterator before giving up.
const maxIteratorRenewals = 3

// position is a place in a shard an iterator can be asked for.
type position struct {
	kind streamtypes.ShardIteratorType
	seq  string // for AT_ and AFTER_SEQUENCE_NUMBER
}

// shard is the poller's state for one shard: the checkpoint (pos) and what
// the retry machinery remembers about the batch that starts there.
type shard struct {
	id, parent string
	pos        position
	iter       *string // an iterator at pos; nil means ask for one
	done       bool    // closed and fully read, skipped, or gone

	retries      int    // failed deliveries of the record at pos
	splits       []int  // bisect stack: sizes of the next deliveries, top last
	maxDelivered string // highest sequence number delivered so far
}

// limit is the most records the next delivery may hold.
func (sh *shard) limit(batchSize int) int {
	if n := len(sh.splits); n > 0 {
		return sh.splits[n-1]
	}
	return batchSize
}

func (sh *shard) popSplit() {
	if n := len(sh.splits); n > 0 {
		sh.splits = sh.splits[:n-1]
	}
}

// read is what one fill of a batch consumed.
type read struct {
	records  []events.DynamoDBEventRecord // after Filter
	pos      position                     // the position after the last record read
	next     *string                      // an iterator at pos, when there is one
	closed   bool                         // the shard is closed and read to its end
	read     int                          // records read, filtered ones included
	filtered int
}

// stepResult is what one step on a shard did.
type stepResult struct {
	committed bool // the checkpoint moved
	retry     bool // records wait for re-delivery
}

// step reads one batch from sh, delivers it and moves the checkpoint as the
// outcome requires.
func (p *Poller) step(ctx context.Context, sh *shard) (stepResult, error) {
	rd, err := p.fill(ctx, sh, sh.limit(p.opts.BatchSize))
	if err != nil || sh.done {
		return stepResult{}, err
	}
	if rd.filtered > 0 {
		p.count(func(s *Stats) { s.Filtered += rd.filtered })
	}
	if len(rd.records) == 0 {
		p.commit(sh, rd)
		return stepResult{committed: rd.read > 0}, nil
	}

	first, last := rd.records[0].Change.SequenceNumber, rd.records[len(rd.records)-1].Change.SequenceNumber
	redelivery := sh.maxDelivered != "" && !seqLess(sh.maxDelivered, first)
	if sh.maxDelivered == "" || seqLess(sh.maxDelivered, last) {
		sh.maxDelivered = last
	}
	p.count(func(s *Stats) {
		s.Batches++
		s.Records += len(rd.records)
		if redelivery {
			s.Redeliveries++
		}
	})
	p.log.DebugContext(ctx, "streampoll: delivering batch", "shard", sh.id, "records", len(rd.records),
		"first", first, "redelivery", redelivery)
	resp, herr := p.invoke(ctx, rd.records)
	if herr != nil && ctx.Err() != nil {
		// Stopped mid-invocation: the outcome says nothing about the
		// records, so leave the checkpoint where it was.
		return stepResult{}, ctx.Err()
	}

	from, whole, ferr := judge(rd.records, resp, herr)
	if ferr == nil {
		p.commit(sh, rd)
		sh.retries = 0
		sh.popSplit()
		return stepResult{committed: true}, nil
	}

	p.count(func(s *Stats) { s.Failures++ })
	p.log.WarnContext(ctx, "streampoll: batch failed", "shard", sh.id, "records", len(rd.records),
		"from", rd.records[from].Change.SequenceNumber, "error", ferr)

	if whole && p.opts.BisectOnError && len(rd.records) > 1 {
		n := len(rd.records)
		sh.popSplit()
		sh.splits = append(sh.splits, n-n/2, n/2)
		p.rewind(sh, rd.records[0])
		return stepResult{retry: true}, nil
	}

	committed := false
	if from > 0 {
		// The records before the failed one are done; the failed record
		// has now failed once.
		sh.retries = 1
		committed = true
		if n := len(sh.splits); n > 0 {
			sh.splits[n-1] -= from
		}
	} else {
		sh.retries++
	}
	if p.opts.MaxRetries != RetryForever && sh.retries > p.opts.MaxRetries {
		dropped := rd.records[from:]
		p.count(func(s *Stats) { s.Dropped += len(dropped) })
		f := Failure{ShardID: sh.id, Records: dropped, Attempts: sh.retries, Err: ferr}
		p.commit(sh, rd)
		sh.retries = 0
		sh.popSplit()
		p.drop(ctx, f)
		return stepResult{committed: true}, nil
	}
	p.rewind(sh, rd.records[from])
	return stepResult{committed: committed, retry: true}, nil
}

// commit moves the checkpoint past everything rd read.
func (p *Poller) commit(sh *shard, rd read) {
	sh.pos = rd.pos
	sh.iter = rd.next
	if rd.closed {
		sh.done = true
		p.log.Debug("streampoll: shard finished", "shard", sh.id)
	}
}

// rewind sets the checkpoint to rec, to be re-read with an
// AT_SEQUENCE_NUMBER iterator.
func (p *Poller) rewind(sh *shard, rec events.DynamoDBEventRecord) {
	sh.pos = position{kind: iterAt, seq: rec.Change.SequenceNumber}
	sh.iter = nil
}

// seqLess orders stream sequence numbers: decimal strings whose length
// varies (DynamoDB Local pads them to 21 digits, DynamoDB does not).
func seqLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (p *Poller) drop(ctx context.Context, f Failure) {
	if p.opts.OnFailure != nil {
		p.opts.OnFailure(ctx, f)
		return
	}
	p.log.WarnContext(ctx, "streampoll: dropping records after retries", "shard", f.ShardID,
		"records", len(f.Records), "first", f.Records[0].Change.SequenceNumber,
		"last", f.Records[len(f.Records)-1].Change.SequenceNumber, "attempts", f.Attempts, "error", f.Err)
}

// judge reads an invocation's outcome the way Lambda does. It returns a nil
// error on success; otherwise the index of the first record to re-deliver
// and whether the whole batch failed.
func judge(recs []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse, herr error) (from int, whole bool, err error) {
	if herr != nil {
		return 0, true, herr
	}
	if len(resp.BatchItemFailures) == 0 {
		return 0, false, nil
	}
	index := make(map[string]int, len(recs))
	for i, r := range recs {
		index[r.Change.SequenceNumber] = i
	}
	ids := make([]string, len(resp.BatchItemFailures))
	for i, f := range resp.BatchItemFailures {
		ids[i] = f.ItemIdentifier
	}
	from = len(recs)
	for _, id := range ids {
		i, ok := index[id]
		if id == "" || !ok {
			return 0, true, &ItemFailuresError{Identifiers: ids, Invalid: true}
		}
		from = min(from, i)
	}
	return from, false, &ItemFailuresError{Identifiers: ids}
}

// fill reads up to limit records (after Filter) from sh's checkpoint, across
// as many GetRecords calls as it takes, stopping early when the shard has
// nothing more. It changes sh only to mark it gone.
func (p *Poller) fill(ctx context.Context, sh *shard, limit int) (read, error) {
	rd := read{pos: sh.pos}
	iter := sh.iter
	renewals := 0
	for {
		if iter == nil {
			it, err := p.iterator(ctx, sh, rd.pos)
			if err != nil {
				if err := p.handleReadError(ctx, sh, err, &rd, &renewals); err != nil || sh.done {
					return read{}, err
				}
				if rd.read > 0 {
					return rd, nil
				}
				continue
			}
			if it == nil {
				// No iterator: the shard is closed and has nothing left.
				rd.closed = true
				return rd, nil
			}
			iter = it
		}
		out, err := p.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
			ShardIterator: iter,
			Limit:         aws.Int32(int32(min(limit-len(rd.records), maxGetRecords))),
		})
		if err != nil {
			if err := p.handleReadError(ctx, sh, err, &rd, &renewals); err != nil || sh.done {
				return read{}, err
			}
			if rd.read > 0 {
				return rd, nil
			}
			iter = nil
			continue
		}
		for _, r := range out.Records {
			rec, err := streamimage.RecordFromStreams(r, p.streamARN)
			if err != nil {
				hint := ""
				if errors.Is(err, streamimage.ErrNilValue) {
					hint = " (DynamoDB Local sends empty maps in a form the SDK reads as nil; build the client with the option streampoll.FixEmptyMaps)"
				}
				return read{}, fmt.Errorf("streampoll: shard %s: record %s: %w%s", sh.id, aws.ToString(r.EventID), err, hint)
			}
			rd.read++
			rd.pos = position{kind: iterAfter, seq: rec.Change.SequenceNumber}
			if p.opts.Filter != nil && !p.opts.Filter(rec) {
				rd.filtered++
				continue
			}
			rd.records = append(rd.records, rec)
		}
		rd.next = out.NextShardIterator
		rd.closed = out.NextShardIterator == nil
		if rd.closed || len(out.Records) == 0 || len(rd.records) >= limit {
			return rd, nil
		}
		iter = rd.next
	}
}

// handleReadError handles a Streams API error of fill. When it returns nil and the
// shard is not marked done, fill goes on from rd.pos with a new iterator,
// or, when it has read records already, delivers them and leaves the rest
// for the next fill (rd.next is then cleared, so that one starts with a new
// iterator at rd.pos). An expired iterator is simply renewed; trimmed data
// restarts at the trim horizon; a shard the stream no longer has is marked
// done. Each fill renews at most maxIteratorRenewals times; other errors are
// returned wrapped.
func (p *Poller) handleReadError(ctx context.Context, sh *shard, err error, rd *read, renewals *int) error {
	var expired *streamtypes.ExpiredIteratorException
	var trimmed *streamtypes.TrimmedDataAccessException
	var gone *streamtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &gone):
		p.log.WarnContext(ctx, "streampoll: shard is gone", "shard", sh.id, "error", err)
		sh.done = true
		return nil
	case errors.As(err, &expired) && *renewals < maxIteratorRenewals:
		*renewals++
		rd.next = nil
		p.log.DebugContext(ctx, "streampoll: renewing an expired iterator", "shard", sh.id)
		return nil
	case errors.As(err, &trimmed) && *renewals < maxIteratorRenewals:
		*renewals++
		rd.next = nil
		if rd.read == 0 {
			p.log.ErrorContext(ctx, "streampoll: records trimmed before they were read; restarting at the trim horizon",
				"shard", sh.id, "position", rd.pos.kind, "seq", rd.pos.seq)
			rd.pos = position{kind: iterTrimHorizon}
		}
		return nil
	}
	return fmt.Errorf("streampoll: shard %s: %w", sh.id, err)
}

// iterator asks for an iterator at pos.
func (p *Poller) iterator(ctx context.Context, sh *shard, pos position) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(p.streamARN),
		ShardId:           aws.String(sh.id),
		ShardIteratorType: pos.kind,
	}
	if pos.seq != "" {
		in.SequenceNumber = aws.String(pos.seq)
	}
	out, err := p.client.GetShardIterator(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.ShardIterator, nil
}

// ensureIterator gives sh an iterator at its checkpoint now.
func (p *Poller) ensureIterator(ctx context.Context, sh *shard) error {
	if sh.iter != nil {
		return nil
	}
	it, err := p.iterator(ctx, sh, sh.pos)
	if err != nil {
		var gone *streamtypes.ResourceNotFoundException
		if errors.As(err, &gone) {
			sh.done = true
			return nil
		}
		return fmt.Errorf("streampoll: shard %s: %w", sh.id, err)
	}
	sh.iter = it
	return nil
}

// refresh lists the stream's shards and adds the ones it has not seen. A
// shard Options.Resume lists resumes where it says. Otherwise, on the first
// listing with Latest and no Resume, open shards start at LATEST and closed
// ones are skipped; every other new shard starts at TRIM_HORIZON.
func (p *Poller) refresh(ctx context.Context, initial bool) (added int, err error) {
	var after *string
	for {
		out, err := p.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn:             aws.String(p.streamARN),
			ExclusiveStartShardId: after,
		})
		if err != nil {
			return added, fmt.Errorf("streampoll: describe stream: %w", err)
		}
		desc := out.StreamDescription
		if desc == nil {
			return added, fmt.Errorf("streampoll: describe stream: no description")
		}
		for _, s := range desc.Shards {
			id := aws.ToString(s.ShardId)
			if id == "" || p.byID[id] != nil {
				continue
			}
			sh := &shard{id: id, parent: aws.ToString(s.ParentShardId), pos: position{kind: iterTrimHorizon}}
			if c, ok := p.resumeAt(id); ok {
				sh.pos, sh.done = c.position(), c.Done
			} else if initial && p.opts.Resume == nil && p.opts.StartingPosition == Latest {
				if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
					sh.done = true
				} else {
					sh.pos = position{kind: iterLatest}
				}
			}
			p.shards = append(p.shards, sh)
			p.byID[id] = sh
			added++
			p.log.DebugContext(ctx, "streampoll: shard found", "shard", id, "parent", sh.parent, "start", sh.pos.kind, "skipped", sh.done)
		}
		after = desc.LastEvaluatedShardId
		if after == nil {
			return added, nil
		}
	}
}

// resumeAt is where Options.Resume says shard id resumes, if it lists it.
func (p *Poller) resumeAt(id string) (ShardCheckpoint, bool) {
	if p.opts.Resume == nil {
		return ShardCheckpoint{}, false
	}
	c, ok := p.opts.Resume.Shards[id]
	return c, ok
}
