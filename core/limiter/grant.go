package limiter

// Quota grants on the read-then-write path (ADR-145, docs/design.md §15):
// a quota the drawn shard does not carry yet is funded by a move off the
// sibling whose grant covers the shard's slot, committed in one
// transaction with the shard's write, or granted a fresh share when no
// current-period sibling covers it; a reset edge on a shard other than 0
// is sized at the count shard 0 holds.

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// move is what one sibling gives a new quota shard (or a quota seeded on
// an existing one): one debit per quota, all in one update of the donor
// (grant.Update).
type move struct {
	donor  schema.BucketID
	edge   int64 // the latest reset edge the donor's period started at, epoch ms; 0 for none
	debits []grant.Debit
}

// needsGrant reports a quota the shard does not carry yet.
func (p *pass) needsGrant() bool {
	for i := range p.plan {
		if p.plan[i].lim.IsQuota() && !p.plan[i].present {
			return true
		}
	}
	return false
}

// resetsQuota reports a quota reset edge this pass applies.
func (p *pass) resetsQuota() bool {
	for i := range p.plan {
		if p.plan[i].reset {
			return true
		}
	}
	return false
}

// fund plans the grants of a pass's quotas (ADR-145): for a shard other
// than 0 whose pass applies a reset edge, the count is read on shard 0 so
// that the new grant is sized at the pair's count; for quotas the shard
// does not carry, every sibling is read (strongly consistent) and each
// quota is funded by a move off the sibling covering the shard's slot, or
// granted a fresh share when none in its current period covers it. A
// count above the pass's re-plans the pass at it. After a move was lost
// once (req.lostMoves), covered slots start empty instead: under-admission,
// never a second allowance.
func (l *Limiter) fund(ctx context.Context, p *pass, replan func(shards int64)) error {
	switch {
	case p.needsGrant() && (p.shards > 1 || p.id.Shard > 0):
		sibs, count, err := l.readSiblings(ctx, p.id, p.shards)
		if err != nil {
			return err
		}
		if count > p.shards {
			replan(count)
		}
		p.raise = p.img != nil && p.img.ShardCount < p.shards
		l.planMoves(p, sibs)
	case p.resetsQuota() && p.id.Shard > 0:
		count, err := l.readShardCount(ctx, p.id)
		if err != nil {
			return err
		}
		if count > p.shards {
			p.raise = true
			replan(count)
		}
	}
	return nil
}

// planMoves picks each missing quota's donor among the siblings read and
// sets the quota's starting balance: the move, or nothing when the donor
// has nothing to give or a move was lost before.
func (l *Limiter) planMoves(p *pass, sibs []grant.Sibling) {
	at := time.UnixMilli(p.now)
	for i := range p.plan {
		pl := &p.plan[i]
		if !pl.lim.IsQuota() || pl.present {
			continue
		}
		edge := int64(0)
		var cands []bucket.GrantSibling
		if pl.window != nil {
			p.joinWindow(pl, sibs)
			cands = grant.SessionCandidates(sibs, pl.lim.Name, p.now)
		} else {
			if prev, ok := pl.resets.PrevEdge(at, pl.loc); ok {
				edge = prev.UnixMilli()
			}
			cands = grant.Candidates(sibs, pl.lim.Name, edge)
		}
		donor, ok := bucket.Donor(cands, int64(p.id.Shard))
		if !ok {
			// Uncovered: the fresh share plan gave it, sized at the count
			// the siblings showed. It holds only while shard 0 has not
			// passed that count: after a doubling a shard above the old
			// count may be funded from nothing but this slot's cover.
			p.countCheck = p.countCheck || p.id.Shard != 0
			continue
		}
		pl.balance = 0
		x := bucket.MoveAmount(pl.inForce.Capacity, p.shards, donor.Tokens)
		if p.req.lostMoves > 0 || x <= 0 {
			continue
		}
		pl.balance = x
		var img *bucketitem.Image
		for _, sb := range sibs {
			if sb.Shard == int(donor.Shard) {
				img = sb.Image
			}
		}
		j := -1
		for k := range p.moves {
			if p.moves[k].donor.Shard == int(donor.Shard) {
				j = k
			}
		}
		if j < 0 {
			id := p.id
			id.Shard = int(donor.Shard)
			p.moves = append(p.moves, move{donor: id})
			j = len(p.moves) - 1
		}
		p.moves[j].edge = max(p.moves[j].edge, edge)
		p.moves[j].debits = append(p.moves[j].debits, grant.DebitOf(img, pl.lim.Name, x))
	}
	for i := range p.plan {
		p.plan[i].judge(p.now)
	}
}

// joinWindow has a session quota that a shard other than 0 takes on (a
// new shard, or a seed) join shard 0's live window instead of opening one
// (docs/design.md §15, ADR-139/140): the shard's balance then belongs to
// that window, which ends when shard 0's does. Shard 0 was read strongly
// consistent among the siblings. With no live window there, the pass
// opens one at now and fans it out.
func (p *pass) joinWindow(pl *planned, sibs []grant.Sibling) {
	if p.id.Shard == 0 || p.bypass {
		return
	}
	for _, sb := range sibs {
		if sb.Shard != 0 {
			continue
		}
		li := sb.Image.Limit(pl.lim.Name)
		if li == nil || !li.WindowLive(p.now) {
			return
		}
		w := li.Window()
		end, _ := w.End()
		pl.join = true
		pl.window.Open, pl.window.Start, pl.window.End = false, w.Start, end
		pl.boundary = min(pl.boundary, end)
		pl.nextReset = end
		return
	}
}

// readSiblings reads every other shard of the pair below count, strongly
// consistent, and returns those that exist and the highest shard count
// among them and count.
func (l *Limiter) readSiblings(ctx context.Context, id schema.BucketID, count int64) ([]grant.Sibling, int64, error) {
	var keys []map[string]types.AttributeValue
	for s := 0; s < int(min(count, schema.MaxShardCount)); s++ {
		if s != id.Shard {
			k := id
			k.Shard = s
			keys = append(keys, k.Key().AttributeValues())
		}
	}
	var out []grant.Sibling
	err := l.batchGet(ctx, "grant sibling read", keys, true, func(it map[string]types.AttributeValue) error {
		pk, _ := it[schema.AttrPK].(*types.AttributeValueMemberS)
		if pk == nil {
			return nil
		}
		sid, err := schema.ParseBucketPK(pk.Value)
		if err != nil {
			return nil
		}
		img, err := bucketitem.Decode(it)
		if err != nil {
			return err
		}
		out = append(out, grant.Sibling{Shard: sid.Shard, Image: &img})
		count = max(count, img.ShardCount)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, count, nil
}

// readShardCount reads the pair's count on shard 0 (grant.PairCount).
func (l *Limiter) readShardCount(ctx context.Context, id schema.BucketID) (int64, error) {
	n, err := grant.PairCount(ctx, l.db, l.table, id)
	var ce *bucketitem.CorruptItemError
	if err != nil && !errors.As(err, &ce) {
		return 0, &dbError{op: "shard count read", err: err}
	}
	return n, err
}
