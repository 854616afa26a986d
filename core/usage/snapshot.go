package usage

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Snapshot is one usage snapshot (R12, docs/design.md §6): what one entity
// consumed of one resource in one window, as the aggregator counted it from
// the buckets' consumption counters.
type Snapshot struct {
	Entity   string
	Resource string
	// Window is the window's kind; WindowStart its UTC start.
	Window      Window
	WindowStart time.Time
	// Limits are the limits the window saw, sorted by name: each one's
	// whole tokens and overdraw count.
	Limits []LimitUsage
	// TotalEvents is the snapshot's total_events as stored: the count of
	// (bucket write, limit) pairs that added tokens, over every limit of the
	// snapshot, also those a Selection's limit names leave out.
	TotalEvents int64
}

// LimitUsage is one limit's count in a snapshot.
type LimitUsage struct {
	Name string
	// Tokens is the whole tokens consumed in the window, net of refunds
	// (a lease that gave back more than it took in the window counts
	// negative): the sum of floor(tc / 1000) steps of docs/design.md §6.
	Tokens int64
	// Overdraws counts the bucket writes in the window that left this soft
	// limit in debt (the snapshot's `{name}#od`); HasOverdraws reports
	// that the snapshot carries that counter.
	Overdraws    int64
	HasOverdraws bool
}

// Limit returns the count of the limit called name, and whether the
// snapshot has it.
func (s Snapshot) Limit(name string) (LimitUsage, bool) {
	i, found := slices.BinarySearchFunc(s.Limits, name, func(l LimitUsage, n string) int { return strings.Compare(l.Name, n) })
	if !found {
		return LimitUsage{}, false
	}
	return s.Limits[i], true
}

// CorruptSnapshotError reports a stored snapshot item that does not decode:
// a key of another shape, a missing or malformed window, a count that is
// not an integer. The reader skips such an item and logs it.
type CorruptSnapshotError struct {
	// PK and SK are the item's key (whatever the item held).
	PK, SK string
	// Attribute names the offending attribute.
	Attribute string
	// Reason says what is wrong, in words.
	Reason string
}

// Error implements error.
func (e *CorruptSnapshotError) Error() string {
	return "usage: snapshot " + strconv.Quote(schema.TruncateValue(e.PK)) + " " + strconv.Quote(schema.TruncateValue(e.SK)) +
		": attribute " + strconv.Quote(schema.TruncateValue(e.Attribute)) + ": " + e.Reason
}

// snapshotBookkeeping reports the attributes of a snapshot item that are
// not counts: keys, identity, window, ttl, total_events and the marks
// `seq#{shard}` (a limit called "seq" keeps its `seq#od`).
func snapshotBookkeeping(name string) bool {
	switch name {
	case schema.AttrPK, schema.AttrSK, schema.AttrGSI1PK, schema.AttrGSI1SK, schema.AttrGSI2PK, schema.AttrGSI2SK,
		schema.AttrGSI3PK, schema.AttrGSI3SK, schema.AttrGSI4PK, schema.AttrGSI4SK,
		schema.AttrEntityID, schema.AttrResource, schema.AttrWindow, schema.AttrWindowStart,
		schema.AttrTTL, schema.AttrTotalEvents:
		return true
	}
	_, seq := schema.ParseSeqAttr(name)
	return seq
}

// DecodeSnapshot decodes a stored snapshot item of namespace ns (R12, as
// docs/design.md §6 describes what the aggregator writes): its key
// `{ns}/ENTITY#{id}` / `#USAGE#{resource}#{window_key}`, `window`,
// `window_start` (which must agree with the key, suffix included, and be the
// start of a window of its kind), `total_events`, and every attribute named
// like a limit (schema.ValidateLimitName) as that limit's whole tokens, and
// `{limit}#od` as its overdraw count. Key attributes, `seq#{shard}`, `ttl`
// and attributes of other names are ignored. A stored item is outside
// input: anything else is a *CorruptSnapshotError.
func DecodeSnapshot(ns string, item map[string]types.AttributeValue) (Snapshot, error) {
	pk, _ := str(item[schema.AttrPK])
	sk, _ := str(item[schema.AttrSK])
	bad := func(attr, reason string) (Snapshot, error) {
		return Snapshot{}, &CorruptSnapshotError{PK: pk, SK: sk, Attribute: attr, Reason: reason}
	}
	itemNS, entity, err := schema.ParseEntityPK(pk)
	if err != nil {
		return bad(schema.AttrPK, err.Error())
	}
	if itemNS != ns {
		return bad(schema.AttrPK, "belongs to another namespace")
	}
	resource, windowKey, err := schema.ParseUsageSK(sk)
	if err != nil {
		return bad(schema.AttrSK, err.Error())
	}
	if err := schema.ValidateResource(resource); err != nil {
		return bad(schema.AttrSK, err.Error())
	}
	wtext, ok := str(item[schema.AttrWindow])
	if !ok {
		return bad(schema.AttrWindow, "missing or not a string")
	}
	w, err := ParseWindow(wtext)
	if err != nil {
		return bad(schema.AttrWindow, err.Error())
	}
	stext, ok := str(item[schema.AttrWindowStart])
	if !ok {
		return bad(schema.AttrWindowStart, "missing or not a string")
	}
	start, ok := parseStart(stext)
	switch {
	case !ok:
		return bad(schema.AttrWindowStart, "not a window start "+startLayout)
	case !w.Start(start).Equal(start):
		return bad(schema.AttrWindowStart, "not the start of a "+string(w)+" window")
	case windowKey != stext && windowKey != stext+w.suffix():
		return bad(schema.AttrSK, "window key does not match the "+string(w)+" window starting "+stext)
	}
	for _, a := range []string{schema.AttrEntityID, schema.AttrResource} {
		v, present := item[a]
		if !present {
			continue
		}
		want := entity
		if a == schema.AttrResource {
			want = resource
		}
		if s, ok := str(v); !ok || s != want {
			return bad(a, "does not match the key")
		}
	}
	snap := Snapshot{Entity: entity, Resource: resource, Window: w, WindowStart: start}
	if v, present := item[schema.AttrTotalEvents]; present {
		n, reason := integer(v)
		if reason != "" {
			return bad(schema.AttrTotalEvents, reason)
		}
		snap.TotalEvents = n
	}
	for name, v := range item {
		if snapshotBookkeeping(name) {
			continue
		}
		limit, overdraw := schema.ParseOverdrawAttr(name)
		if !overdraw {
			limit = name
		}
		if schema.ValidateLimitName(limit) != nil {
			continue // not a count: an attribute of another writer
		}
		n, reason := integer(v)
		if reason != "" {
			return bad(name, reason)
		}
		i, found := slices.BinarySearchFunc(snap.Limits, limit, func(l LimitUsage, n string) int { return strings.Compare(l.Name, n) })
		if !found {
			snap.Limits = slices.Insert(snap.Limits, i, LimitUsage{Name: limit})
		}
		if overdraw {
			snap.Limits[i].Overdraws, snap.Limits[i].HasOverdraws = n, true
		} else {
			snap.Limits[i].Tokens = n
		}
	}
	return snap, nil
}

// str returns an S value.
func str(v types.AttributeValue) (string, bool) {
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok || s == nil {
		return "", false
	}
	return s.Value, true
}

// integer returns an N value that is an int64, or why it is not.
func integer(v types.AttributeValue) (int64, string) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok || n == nil {
		return 0, "not a number"
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, "not an integer within int64"
	}
	return i, ""
}

// keep returns snap with only the limits sel wants; ok is false when none
// is left (the snapshot is then not part of the selection).
func (sel Selection) keep(snap Snapshot) (Snapshot, bool) {
	if sel.limits == nil {
		return snap, true
	}
	kept := snap.Limits[:0:0]
	for _, l := range snap.Limits {
		if sel.wants(l.Name) {
			kept = append(kept, l)
		}
	}
	snap.Limits = kept
	return snap, len(kept) > 0
}
