package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// DB is the part of the DynamoDB API the maintainer uses; *dynamodb.Client
// implements it. Phase 1 issues only UpdateItem and PutItem; GetItem and
// TransactWriteItems are the sibling reads and donor moves of quota clones
// (docs/design.md §6, phase 2).
type DB interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Options configure a Maintainer.
type Options struct {
	// Clock gives now; nil means time.Now. Run reads it once.
	Clock func() time.Time
	// Logger receives the maintainer's logs; nil discards them. Entity ids
	// and resources are only ever logged at Debug level (docs/design.md §6).
	Logger *slog.Logger
}

// Maintainer performs the best-effort bucket upkeep of docs/design.md §6 for
// one batch of bucket records at a time. It is safe for concurrent use.
type Maintainer struct {
	db    DB
	table string
	clock func() time.Time
	log   *slog.Logger
}

// New returns a Maintainer writing to table through db.
func New(db DB, table string, o Options) *Maintainer {
	m := &Maintainer{db: db, table: table, clock: o.Clock, log: o.Logger}
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// Run does the upkeep for records (bucket records of one batch, in stream
// order), in the order of docs/design.md §6: 1) proactive refill per bucket, 2)
// proactive doubling of shard 0, 3) shard-count propagation per shard-0
// record. Every write is conditional; a lost condition is skipped silently
// and counted, any other failure is logged and counted, and the remaining
// writes still run. Once ctx is done no further write starts (they are
// counted as Pending). Run never panics.
func (m *Maintainer) Run(ctx context.Context, records []Record) (st Stats) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("maintenance: internal error, batch upkeep abandoned", "panic", fmt.Sprint(r))
			st.Failures++
		}
	}()
	now := m.clock().UnixMilli()
	p := m.planBatch(records, now)
	st.Abstained, st.Refused, st.Corrupt = p.abstained, p.refused, p.corrupt
	for i := range p.ops {
		if ctx.Err() != nil {
			st.Pending += len(p.ops) - i
			m.log.Info("maintenance: context done, writes not started", "pending", len(p.ops)-i)
			break
		}
		m.exec(ctx, &p.ops[i], &st)
	}
	for _, qp := range p.quotas {
		if ctx.Err() != nil {
			st.Pending++
			continue
		}
		m.propagateQuota(ctx, qp, now, &st)
	}
	return st
}

// exec sends one planned write and counts its outcome.
func (m *Maintainer) exec(ctx context.Context, o *op, st *Stats) {
	var err error
	if o.countAtMost > 0 {
		var count int64
		if count, err = m.pairCount(ctx, o.id); err == nil && count > o.countAtMost {
			st.Deferred++
			m.log.Debug("maintenance: quota reset left to the client - the pair's count passed the shard's",
				"entity", o.id.Entity, "resource", o.id.Resource, "shard", o.id.Shard)
			return
		}
	}
	switch {
	case err != nil:
	case o.put != nil:
		_, err = m.db.PutItem(ctx, o.put)
	default:
		_, err = m.db.UpdateItem(ctx, o.update)
	}
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		switch o.kind {
		case opRefill:
			st.Refills++
		case opDouble:
			st.Doublings++
		case opRaise:
			st.Raises++
		case opClone:
			st.Clones++
		}
		m.log.Debug("maintenance: write landed", "op", o.kind.String(),
			"entity", o.id.Entity, "resource", o.id.Resource, "shard", o.id.Shard)
	case errors.As(err, &ccf):
		if o.kind == opRefill {
			st.RefillRace++
			m.log.Debug("maintenance: refill skipped - concurrent rf update",
				"entity", o.id.Entity, "resource", o.id.Resource, "shard", o.id.Shard)
		} else {
			st.Superseded++
			m.log.Debug("maintenance: write superseded", "op", o.kind.String(),
				"entity", o.id.Entity, "resource", o.id.Resource, "shard", o.id.Shard)
		}
	default:
		st.Failures++
		// No entity id or resource at WARN (docs/design.md §6): they are often API keys.
		m.log.Warn("maintenance: write failed", "op", o.kind.String(), "shard", o.id.Shard, "error", err.Error())
	}
}

// pairCount reads the pair's count on shard 0 (grant.PairCount).
func (m *Maintainer) pairCount(ctx context.Context, id schema.BucketID) (int64, error) {
	return grant.PairCount(ctx, m.db, m.table, id)
}
