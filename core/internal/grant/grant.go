// Package grant is ADR-145 on stored bucket items (docs/design.md §15):
// which siblings can fund a quota's slot, with the grant each holds, and
// the donor's debit that moves allowance off one of them. The client's
// create and the aggregator's clones both fund new quota shards through
// it; the arithmetic is core/bucket's.
package grant

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Sibling is a shard of the pair as read.
type Sibling struct {
	Shard int
	Image *bucketitem.Image
}

// Of returns the grant of quota l on an item whose shard count is count:
// its gc, or — for an item from before grants — R7's reading
// (bucket.LegacyGrantShards); legacy reports the latter.
func Of(l *bucketitem.LimitImage, count int64) (g int64, legacy bool) {
	if l.Fields.Has(bucketitem.FieldGrantShards) && l.GrantShards >= 1 {
		return l.GrantShards, false
	}
	return bucket.LegacyGrantShards(l.Tokens, l.Capacity, count), true
}

// Candidates are the siblings that may fund quota name, as bucket.Donor
// takes them: those carrying it as a quota in the current period — rf at
// or after edge, the latest reset edge at or before now (0: none in
// reach) — each with its grant and balance.
func Candidates(sibs []Sibling, name string, edge int64) []bucket.GrantSibling {
	var out []bucket.GrantSibling
	for _, s := range sibs {
		l := s.Image.Limit(name)
		if l == nil || !l.Params().IsQuota() || s.Image.RF < edge {
			continue
		}
		g, _ := Of(l, s.Image.ShardCount)
		out = append(out, bucket.GrantSibling{Shard: int64(s.Shard), GrantShards: g, Tokens: l.Tokens})
	}
	return out
}

// SessionCandidates are the siblings that may fund session quota name at
// now (ADR-145 for a session quota, docs/design.md §15): those carrying it
// in its current period — a live window the balance reflects — each with
// its grant and balance.
func SessionCandidates(sibs []Sibling, name string, now int64) []bucket.GrantSibling {
	var out []bucket.GrantSibling
	for _, s := range sibs {
		l := s.Image.Limit(name)
		if l == nil || !l.Params().IsQuota() || !l.HasWindow() || !l.WindowCurrent(s.Image.RF, now) {
			continue
		}
		g, _ := Of(l, s.Image.ShardCount)
		out = append(out, bucket.GrantSibling{Shard: int64(s.Shard), GrantShards: g, Tokens: l.Tokens})
	}
	return out
}

// Debit is one quota's part of a move off a donor.
type Debit struct {
	Name   string
	Amount int64 // millitokens, > 0
	// Grant is the donor's grant as read; Legacy marks a donor without gc,
	// read as granted at Grant (R7) while its shard count is Count.
	Grant  int64
	Legacy bool
	Count  int64
	// Window marks a session quota: the debit holds only while the donor
	// still reflects the window read — wa as read (Applied), or, for an
	// item written before wa, no wa and the start read (Start).
	Window     bool
	Applied    int64
	HasApplied bool
	Start      int64
}

// DebitOf is the debit of amount millitokens of quota name off donor.
func DebitOf(donor *bucketitem.Image, name string, amount int64) Debit {
	d := Debit{Name: name, Amount: amount, Count: donor.ShardCount}
	if l := donor.Limit(name); l != nil {
		d.Grant, d.Legacy = Of(l, donor.ShardCount)
		if l.HasWindow() {
			w := l.Window()
			d.Window, d.Applied, d.HasApplied, d.Start = true, w.Applied, w.HasApplied, w.Start
		}
	}
	return d
}

// Update is the donor's debit as one UpdateItem (several quotas moving
// off one donor share it: a transaction touches an item once): ADD tk −x
// per quota, under the donor existing, holding x, its grant as read (for a
// legacy donor: no gc and the count read), for a session quota the window
// it reflects as read, and, when edge is not 0, its rf at or after edge
// (still in the period its grant belongs to).
func Update(table string, donor schema.BucketID, debits []Debit, edge int64) *dynamodb.UpdateItemInput {
	var b expr.Builder
	b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
	for _, d := range debits {
		tk := schema.BucketAttr(d.Name, schema.LimitTokens)
		gc := b.Name(schema.BucketAttr(d.Name, schema.LimitGrantShards))
		b.Add(tk, schema.Num(-d.Amount))
		b.Cond(b.Name(tk) + " >= " + b.Value(schema.Num(d.Amount)))
		if d.Legacy {
			b.Cond("(attribute_not_exists(" + gc + ") AND " + b.Name(schema.AttrShardCount) + " = " + b.Value(schema.Num(d.Count)) + ")")
		} else {
			b.Cond(gc + " = " + b.Value(schema.Num(d.Grant)))
		}
		if d.Window {
			wa := b.Name(schema.BucketAttr(d.Name, schema.LimitWindowAnchor))
			if d.HasApplied {
				b.Cond(wa + " = " + b.Value(schema.Num(d.Applied)))
			} else {
				b.Cond("(attribute_not_exists(" + wa + ") AND " + b.Name(schema.BucketAttr(d.Name, schema.LimitWindowStart)) + " = " + b.Value(schema.Num(d.Start)) + ")")
			}
		}
	}
	if edge > 0 {
		b.Cond(b.Name(schema.AttrRF) + " >= " + b.Value(schema.Num(edge)))
	}
	in := b.UpdateInput(table, donor.Key())
	in.ReturnValues = types.ReturnValueNone
	return in
}

// GetItemAPI is the read PairCount needs; *dynamodb.Client implements it.
type GetItemAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// PairCount reads shard 0's shard_count, strongly consistent: the count
// of the pair id belongs to, which every grant of a reset on another shard
// is sized at (docs/design.md §15). An absent item or count reads as 1.
func PairCount(ctx context.Context, db GetItemAPI, table string, id schema.BucketID) (int64, error) {
	zero := id
	zero.Shard = 0
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: zero.Key().AttributeValues(), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#sc"), ExpressionAttributeNames: map[string]string{"#sc": schema.AttrShardCount},
	})
	if err != nil {
		return 0, err
	}
	img, err := bucketitem.Decode(out.Item)
	if err != nil {
		return 0, err
	}
	return max(img.ShardCount, 1), nil
}
