package usage

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Page is one Query's worth of snapshots.
type Page struct {
	// Snapshots are the page's snapshots that belong to the selection, in
	// key order: by window start, then (a resource selection) by entity.
	// A page may hold fewer than the page size, none at all, and still
	// have a Next: the window and limit filters drop items the Query read.
	Snapshots []Snapshot
	// Read is the number of items the Query read (its ScannedCount), what
	// the page is charged for (docs/costs.md).
	Read int
	// Next resumes after this page; "" when this is the last.
	Next PageToken
}

// Snapshots returns the snapshots sel selects, in key order (by window
// start, then by entity), fetching one page at a time as the loop asks for
// more. A bad selection, a failed read or a bad page yields one error and
// ends the sequence. Stored items that do not decode are skipped and
// logged.
func (r *Reader) Snapshots(ctx context.Context, sel Selection) iter.Seq2[Snapshot, error] {
	return r.SnapshotsFrom(ctx, sel, "")
}

// SnapshotsFrom is Snapshots resumed at a page token (Page.Next of an
// earlier SnapshotPage of the same selection); "" starts at the first page.
func (r *Reader) SnapshotsFrom(ctx context.Context, sel Selection, tok PageToken) iter.Seq2[Snapshot, error] {
	return func(yield func(Snapshot, error) bool) {
		for {
			p, err := r.SnapshotPage(ctx, sel, tok)
			if err != nil {
				yield(Snapshot{}, err)
				return
			}
			for _, s := range p.Snapshots {
				if !yield(s, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			tok = p.Next
		}
	}
}

// SnapshotPage reads one page of the snapshots sel selects, starting after
// the item tok names ("" for the first page): one Query, and for a
// resource selection on a KEYS_ONLY usage index one BatchGetItem of the
// items it found (docs/design.md §16, docs/costs.md). Errors: the
// selection's (Selection.Validate), a *PageTokenError, or the failed call.
func (r *Reader) SnapshotPage(ctx context.Context, sel Selection, tok PageToken) (Page, error) {
	if err := sel.Validate(); err != nil {
		return Page{}, err
	}
	first, last, ok := sel.starts()
	if !ok {
		// No window of the kind starts in the range: nothing to read.
		if tok != "" {
			return Page{}, &PageTokenError{Reason: "the selection's range holds no window"}
		}
		return Page{}, nil
	}
	q := r.snapshotQuery(sel, first, last)
	start, err := decodeToken(sel, r.ns, tok, *q.lo, *q.hi)
	if err != nil {
		return Page{}, err
	}
	q.in.ExclusiveStartKey = start
	out, err := r.db.Query(ctx, q.in)
	if err != nil {
		return Page{}, fmt.Errorf("usage: snapshots of %s: %w", sel.describe(), err)
	}
	p := Page{Read: int(out.ScannedCount)}
	if p.Next, err = encodeToken(out.LastEvaluatedKey); err != nil {
		return Page{}, err
	}
	// Items whole (the entity's partition, or an index that projects
	// them) decode at once; keys alone (a KEYS_ONLY index) are read from
	// the table, in the same order.
	type slot struct {
		full item
		key  schema.Key
	}
	slots := make([]slot, 0, len(out.Items))
	var keys []schema.Key
	for _, it := range out.Items {
		if _, whole := it[schema.AttrWindowStart]; whole || !sel.ByResource() {
			slots = append(slots, slot{full: it})
			continue
		}
		k := keyOf(it)
		slots = append(slots, slot{key: k})
		keys = append(keys, k)
	}
	var fetched map[schema.Key]item
	if len(keys) > 0 {
		if fetched, err = r.batchGet(ctx, keys, "", nil); err != nil {
			return Page{}, fmt.Errorf("usage: snapshots of %s: %w", sel.describe(), err)
		}
	}
	for _, s := range slots {
		it := s.full
		if it == nil {
			if it = fetched[s.key]; it == nil {
				continue // gone since the index listed it (expired)
			}
		}
		snap, err := DecodeSnapshot(r.ns, it)
		if err != nil {
			r.warnCorrupt(ctx, err)
			continue
		}
		if !sel.holds(snap) {
			continue
		}
		if snap, ok := sel.keep(snap); ok {
			p.Snapshots = append(p.Snapshots, snap)
		}
	}
	return p, nil
}

// snapshotQuery is the Query of a selection and its sort key bounds.
type snapshotQuery struct {
	in     *dynamodb.QueryInput
	lo, hi *string
}

// snapshotQuery builds the Query of sel's snapshots whose window starts
// run from first to last (docs/design.md §16).
//
// The range is the key condition: a window key is its start in fixed-width
// text, possibly followed by `#hourly` or `#daily`, and in the usage index
// by `#{entity}`; every such key of a start s lies in [prefix + s,
// prefix + s + "$"] ('$' sorts right after '#').
//
// The window kind is a filter. In the entity's partition it is the item's
// `window`, and the limit names are `attribute_exists` of their counters.
// The usage index cannot filter on either (a KEYS_ONLY index refuses a
// filter on an attribute it does not project, and DynamoDB refuses one on
// the Query's own key), so there the filter reads the table's SK, which
// every index projects: a finer kind's suffix, or a start that is not
// midnight or the 1st, rules a key out (kindFilter). A plain key can still
// be a coarser kind's; the item's `window` and limits are then judged
// after it is read (holds, keep).
func (r *Reader) snapshotQuery(sel Selection, first, last time.Time) snapshotQuery {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Limit:                     aws.Int32(r.pageSize),
	}
	var prefix string
	if sel.ByResource() {
		in.IndexName = aws.String(schema.GSI2)
		names["#pk"], names["#sk"] = schema.AttrGSI2PK, schema.AttrGSI2SK
		values[":pk"] = schema.Str(schema.ResourcePK(r.ns, sel.resource))
		prefix = schema.PrefixUsage
		if f := kindFilter(sel.window, names, values); f != "" {
			in.FilterExpression = aws.String(f)
		}
	} else {
		in.ConsistentRead = aws.Bool(r.consistent)
		names["#pk"], names["#sk"] = schema.AttrPK, schema.AttrSK
		values[":pk"] = schema.Str(schema.EntityPK(r.ns, sel.entity))
		prefix = schema.SKUsagePrefix + sel.resource + "#"
		names["#win"], values[":w"] = schema.AttrWindow, schema.Str(string(sel.window))
		filter := "#win = :w"
		if len(sel.limits) > 0 {
			var b strings.Builder
			for i, n := range sel.limits {
				l, o := "#l"+strconv.Itoa(i), "#o"+strconv.Itoa(i)
				names[l], names[o] = n, schema.OverdrawAttr(n)
				if i > 0 {
					b.WriteString(" OR ")
				}
				b.WriteString("attribute_exists(" + l + ") OR attribute_exists(" + o + ")")
			}
			filter += " AND (" + b.String() + ")"
		}
		in.FilterExpression = aws.String(filter)
	}
	lo, hi := prefix+formatStart(first), prefix+formatStart(last)+"$"
	values[":lo"], values[":hi"] = schema.Str(lo), schema.Str(hi)
	return snapshotQuery{in: in, lo: &lo, hi: &hi}
}

// kindFilter is the filter of the usage index's Query for window kind w,
// on the table's SK `#USAGE#{resource}#{start}[#{suffix}]`: the key of a
// kind other than w carries the other kind's suffix, and a daily or monthly
// start is midnight, a monthly one on the 1st. The texts it looks for hold
// a ':' or a '#', which a resource never does, so they can only match the
// window key (docs/design.md §2).
func kindFilter(w Window, names map[string]string, values map[string]types.AttributeValue) string {
	names["#tsk"] = schema.AttrSK
	values[":hourly"], values[":daily"] = schema.Str("Z"+Hourly.suffix()), schema.Str("Z"+Daily.suffix())
	switch w {
	case Hourly:
		delete(values, ":hourly")
		return "NOT contains(#tsk, :daily)"
	case Daily:
		delete(values, ":daily")
		values[":midnight"] = schema.Str("T00:00:00Z")
		return "contains(#tsk, :midnight) AND NOT contains(#tsk, :hourly)"
	default:
		values[":first"] = schema.Str("-01T00:00:00Z")
		return "contains(#tsk, :first) AND NOT contains(#tsk, :hourly) AND NOT contains(#tsk, :daily)"
	}
}

// holds reports whether a decoded snapshot is one sel selects: its
// resource, entity, window kind and a start in [From, To). The Query's key
// and filter ensure it, except for the kind on a KEYS_ONLY index.
func (sel Selection) holds(s Snapshot) bool {
	return s.Resource == sel.resource && (sel.entity == "" || s.Entity == sel.entity) && s.Window == sel.window &&
		!s.WindowStart.Before(sel.from) && s.WindowStart.Before(sel.to)
}

// describe names sel in errors: "entity alice on gpt-4" or "resource
// gpt-4".
func (sel Selection) describe() string {
	if sel.ByResource() {
		return "resource " + strconv.Quote(sel.resource)
	}
	return "entity " + strconv.Quote(sel.entity) + " on " + strconv.Quote(sel.resource)
}
