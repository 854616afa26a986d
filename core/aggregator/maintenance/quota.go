package maintenance

// Shard-count propagation of a calendar-quota pair (docs/design.md §15,
// ADR-145): Path 1 raises the existing siblings with every quota's grant
// frozen at the size it was read at, and Path 2 funds each new shard's
// quota by a move off the sibling that covers its slot, in one transaction
// with the clone, or grants it a fresh share when none does. Unlike the
// other upkeep it reads before it writes: the siblings, strongly
// consistent, and shard 0's count after the clones.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// quotaPropagation is a shard-0 record of a quota pair whose count rose
// from old to new.
type quotaPropagation struct {
	id       schema.BucketID // shard 0
	raw      map[string]types.AttributeValue
	img      *bucketitem.Image
	old, new int64
	scheds   scheduled
	// abstaining are the shards whose own records in the batch the
	// aggregator abstains from: neither raised nor cloned onto.
	abstaining map[int]bool
}

// propagateQuota runs Path 1 and Path 2 for qp at now. A sibling read
// that fails leaves both to the clients (a client's reset reads shard 0's
// count; its create funds the shard). Clones are left to the clients too
// when some sibling already stores a count above new (the record was
// overtaken by a later doubling) or when shard 0's image has a reset edge
// pending (R13: a clone copies its rf, and would apply that reset over the
// move).
func (m *Maintainer) propagateQuota(ctx context.Context, qp quotaPropagation, now int64, st *Stats) {
	sibs := make(map[int]*bucketitem.Image, qp.old)
	overtaken := false
	for sh := 0; sh < int(qp.old); sh++ {
		id := qp.id
		id.Shard = sh
		out, err := m.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(m.table), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			st.Failures++
			m.log.Warn("maintenance: quota sibling read failed; propagation left to the clients", "shard", sh, "error", err.Error())
			return
		}
		if len(out.Item) == 0 {
			continue
		}
		img, err := bucketitem.Decode(out.Item)
		if err != nil {
			st.Corrupt++
			return
		}
		sibs[sh] = &img
		overtaken = overtaken || img.ShardCount > qp.new
	}
	// Path 1: raise the siblings, every quota's grant frozen.
	for sh := 1; sh < int(qp.old); sh++ {
		sib := sibs[sh]
		if sib == nil || qp.abstaining[sh] {
			continue
		}
		id := qp.id
		id.Shard = sh
		m.send(ctx, opRaise, id, m.raiseInput(id, sib, qp.new), st)
	}
	if overtaken {
		st.Superseded++
		return
	}
	for name, r := range qp.scheds.resets {
		if l := qp.img.Limit(name); l != nil && !r.CurrentPeriod(qp.img.RF, time.UnixMilli(now), qp.scheds.loc) {
			st.Deferred++
			m.log.Debug("maintenance: quota clones left to the clients - shard 0 has a reset pending (R13)")
			return
		}
	}
	// Path 2: one clone per new shard, each quota funded by a move.
	var created []schema.BucketID
	for t := qp.old; t < qp.new; t++ {
		dst := qp.id
		dst.Shard = int(t)
		if qp.abstaining[dst.Shard] {
			continue
		}
		if m.cloneQuota(ctx, qp, sibs, dst, now, st) {
			created = append(created, dst)
		}
	}
	if len(created) == 0 {
		return
	}
	// A doubling after this record: the clones follow the count.
	count, err := m.pairCount(ctx, qp.id)
	if err != nil || count <= qp.new {
		return
	}
	for _, id := range created {
		m.send(ctx, opRaise, id, &dynamodb.UpdateItemInput{
			TableName: aws.String(m.table), Key: id.Key().AttributeValues(),
			UpdateExpression:          aws.String("SET #sc = :new"),
			ConditionExpression:       aws.String("attribute_exists(#pk) AND #sc < :new"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK, "#sc": schema.AttrShardCount},
			ExpressionAttributeValues: map[string]types.AttributeValue{":new": schema.Num(count)},
		}, st)
	}
}

// raiseInput is Path 1 for a quota sibling: SET shard_count = :new and,
// per quota, gc = if_not_exists(gc, the size its grant was read at — R7
// for an item without gc), under shard_count < :new.
func (m *Maintainer) raiseInput(id schema.BucketID, sib *bucketitem.Image, newSC int64) *dynamodb.UpdateItemInput {
	names := map[string]string{"#pk": schema.AttrPK, "#sc": schema.AttrShardCount}
	values := map[string]types.AttributeValue{":new": schema.Num(newSC)}
	upd := "SET #sc = :new"
	for i := range sib.Limits {
		l := &sib.Limits[i]
		if !l.Params().IsQuota() {
			continue
		}
		g, _ := grant.Of(l, sib.ShardCount)
		n, v := "#g"+strconv.Itoa(i), ":g"+strconv.Itoa(i)
		names[n], values[v] = schema.BucketAttr(l.Name, schema.LimitGrantShards), schema.Num(g)
		upd += ", " + n + " = if_not_exists(" + n + ", " + v + ")"
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(m.table), Key: id.Key().AttributeValues(),
		UpdateExpression:          aws.String(upd),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#sc) OR #sc < :new)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// cloneQuota creates dst as a clone of shard 0's image, each quota funded
// by a move off the current-period sibling covering dst's slot (the
// narrowest cover, the lowest shard on a tie), all in one transaction, or
// granted a fresh share when none covers it; every quota's grant is
// sized at the new count. The donors' balances in sibs are lowered by
// what moved, so the next clone plans from them. A cancelled transaction
// leaves the shard to the clients.
func (m *Maintainer) cloneQuota(ctx context.Context, qp quotaPropagation, sibs map[int]*bucketitem.Image, dst schema.BucketID, now int64, st *Stats) bool {
	item := bucketitem.Clone(qp.raw, qp.img, dst, qp.new)
	bucketitem.MarkRecheck(item, now+bucketitem.RecheckAfter)
	siblings := make([]grant.Sibling, 0, len(sibs))
	for sh, img := range sibs {
		siblings = append(siblings, grant.Sibling{Shard: sh, Image: img})
	}
	type move struct {
		edge   int64
		debits []grant.Debit
	}
	moves := map[int]*move{}
	at := time.UnixMilli(now)
	for name, r := range qp.scheds.resets {
		l := qp.img.Limit(name)
		if l == nil {
			continue
		}
		ps := qp.scheds.materialise(qp.img, l, qp.new, now)
		item[schema.BucketAttr(name, schema.LimitGrantShards)] = schema.Num(qp.new)
		edge := int64(0)
		if e, ok := r.PrevEdge(at, qp.scheds.loc); ok {
			edge = e.UnixMilli()
		}
		donor, ok := bucket.Donor(grant.Candidates(siblings, name, edge), int64(dst.Shard))
		if !ok {
			item[schema.BucketAttr(name, schema.LimitTokens)] = schema.Num(ps.Share.Target) // a fresh share
			continue
		}
		x := bucket.MoveAmount(ps.InForce.Capacity, qp.new, donor.Tokens)
		item[schema.BucketAttr(name, schema.LimitTokens)] = schema.Num(x)
		if x == 0 {
			continue
		}
		mv := moves[int(donor.Shard)]
		if mv == nil {
			mv = &move{}
			moves[int(donor.Shard)] = mv
		}
		mv.edge = max(mv.edge, edge)
		mv.debits = append(mv.debits, grant.DebitOf(sibs[int(donor.Shard)], name, x))
	}
	put := &types.Put{
		TableName: aws.String(m.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
	}
	var err error
	if len(moves) == 0 {
		_, err = m.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: put.TableName, Item: item,
			ConditionExpression: put.ConditionExpression, ExpressionAttributeNames: put.ExpressionAttributeNames})
	} else {
		items := []types.TransactWriteItem{{Put: put}}
		for sh, mv := range moves {
			id := qp.id
			id.Shard = sh
			in := grant.Update(m.table, id, mv.debits, mv.edge)
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
				ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
				ExpressionAttributeValues: in.ExpressionAttributeValues,
			}})
		}
		_, err = m.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	}
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		st.Clones++
		// The next clone plans from what the donors have left.
		for sh, mv := range moves {
			for _, d := range mv.debits {
				if l := sibs[sh].Limit(d.Name); l != nil {
					l.Tokens -= d.Amount
				}
			}
		}
		return true
	case errors.As(err, &ccf), errors.As(err, &tce):
		st.Superseded++ // the client created it, or a donor moved: the clients fund it
	default:
		st.Failures++
		m.log.Warn("maintenance: quota clone failed", "shard", dst.Shard, "error", err.Error())
	}
	return false
}

// send sends one update of propagation and counts it like exec.
func (m *Maintainer) send(ctx context.Context, kind opKind, id schema.BucketID, in *dynamodb.UpdateItemInput, st *Stats) {
	m.exec(ctx, &op{kind: kind, id: id, update: in}, st)
}
