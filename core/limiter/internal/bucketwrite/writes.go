// Package bucketwrite is the limiter's single-item writes to a bucket shard
// and the classification of a failed speculative write (docs/design.md §5):
// the speculative write (the fast path), the Adjust, Retry and doubling
// writes, built from expression strings cached per shape; and the reason a
// conditional write failed, judged from the image DynamoDB returns with the
// failure.
//
// Every expression uses positional placeholders only (#t0, :n0, …): limit
// and resource names appear in ExpressionAttributeNames values and in keys,
// never in an expression string.
package bucketwrite

import (
	"hash/maphash"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Declared is one limit a write names, with an amount in whole tokens. For
// the fast path and Retry the amount is the consumption (≥ 0); for Adjust it
// is the delta d of docs/design.md §3, of either sign.
type Declared struct {
	Name   string
	Amount int64
}

// RetryLimit is one limit of a Retry write (docs/design.md §3): its consumption in
// whole tokens and whether it is hard. Only hard limits with a positive
// amount are conditioned.
type RetryLimit struct {
	Name   string
	Amount int64
	Hard   bool
}

// Shape is the form of a speculative write (docs/design.md §5).
type Shape uint8

// The fast-path shapes.
const (
	// ShapeEnforce debits tk and adds tc for every declared limit, guarded
	// per limit by a live soft stamp, a live bypass stamp or enough stored tk.
	ShapeEnforce Shape = iota
	// ShapeBypass adds tc only, and requires a live bypass stamp.
	ShapeBypass
)

// ShapeFor is the shape of a write to a pair known to be bypassed, or not.
func ShapeFor(bypassed bool) Shape {
	if bypassed {
		return ShapeBypass
	}
	return ShapeEnforce
}

// String returns "enforce" or "bypass".
func (s Shape) String() string {
	switch s {
	case ShapeEnforce:
		return "enforce"
	case ShapeBypass:
		return "bypass"
	}
	return "Shape(" + strconv.Itoa(int(s)) + ")"
}

// AdjustMode selects the terms of an Adjust write (docs/design.md §3, §5).
type AdjustMode uint8

// Adjust modes. For a limit with delta d (tokens): tk moves by −d×1000 and
// tc by +d×1000.
const (
	// AdjustBoth writes tk and tc: lease adjust, release, rollback,
	// compensation.
	AdjustBoth AdjustMode = iota
	// AdjustTokens writes tk only: the refund of an enforce-shaped debit
	// that landed on a bypassed bucket (pass d = −c).
	AdjustTokens
	// AdjustConsumed writes tc only: adjust, release and rollback of a
	// bypassed lease.
	AdjustConsumed
)

// WriteError reports a write that cannot be built from its input.
type WriteError struct {
	Op     string // "fast path", "adjust", "retry", "double"
	Limit  string // the offending limit, if any
	Reason string
}

// Error implements error.
func (e *WriteError) Error() string {
	s := "limiter: " + e.Op
	if e.Limit != "" {
		s += ": limit " + strconv.Quote(e.Limit)
	}
	return s + ": " + e.Reason
}

// ShardCapError reports a doubling refused because the shard count is
// already at schema.MaxShardCount (docs/design.md §5: log a warning instead).
type ShardCapError struct {
	Old int64
}

// Error implements error.
func (e *ShardCapError) Error() string {
	return "limiter: shard_count " + strconv.FormatInt(e.Old, 10) + " is at the cap " + strconv.Itoa(schema.MaxShardCount)
}

// Writes builds the UpdateItem requests of the acquire path for one table.
// The expression strings depend only on the shape (kind of write, number of
// limits, which are conditioned), so Writes builds them once per shape and
// caches them; a call only fills names and values. A Writes is owned by a
// limiter and is safe for concurrent use. Every returned input is fresh
// except two maps and what they hold, which requests share and nobody may
// modify: ExpressionAttributeNames, shared by the requests of one shape and
// one set of limit names (names.go), and Key, shared by the requests to one
// bucket (keys.go).
type Writes struct {
	table string

	mu    sync.Mutex                            // serialises cache inserts
	cache atomic.Pointer[map[shapeKey]*exprSet] // copy-on-write; lookups take no lock
	keys  *keyCache                             // Key maps of recent buckets (keys.go)
}

// maxCachedShapes bounds the cache; shapes beyond it are built per call.
const maxCachedShapes = 1024

// NewWrites returns a builder for the named table.
func NewWrites(table string) *Writes {
	return &Writes{table: table, keys: &keyCache{seed: maphash.MakeSeed()}}
}

// Speculative builds the speculative write (the fast path of
// docs/design.md §5) in the given shape on bucket id, at one clock reading
// now (epoch ms). Every limit in limits is declared (amounts of 0
// included: their term is still tested). ReturnValues is ALL_NEW, and
// ALL_OLD on a failed condition.
//
// Enforce:
//
//	ADD #t0 :n0, #c0 :p0, …, #wt :nw, #wc :pw
//	attribute_exists(PK) AND (#o0 > :now OR #byp > :now OR #t0 >= :p0) AND …
//	  AND #wt >= :pw AND (attribute_not_exists(#ttl) OR #ttl > :nows)
//	  AND attribute_not_exists(#dis) AND (attribute_not_exists(#vu) OR #vu > :now)
//
// Bypass:
//
//	ADD #c0 :p0, …, #wt :nw, #wc :pw
//	attribute_exists(PK) AND #byp > :now AND #wt >= :pw
//	  AND (attribute_not_exists(#ttl) OR #ttl > :nows) AND attribute_not_exists(#dis)
//
// A name that is empty, `wcu`, or repeated, or an amount that is negative
// or overflows millitokens, is a *WriteError.
func (w *Writes) Speculative(id schema.BucketID, shape Shape, limits []Declared, now int64) (*dynamodb.UpdateItemInput, error) {
	var k shapeKey
	switch shape {
	case ShapeEnforce:
		k.kind = kindEnforce
	case ShapeBypass:
		k.kind = kindBypass
	default:
		return nil, &WriteError{Op: opFastPath, Reason: "unknown shape " + shape.String()}
	}
	k.n = len(limits)
	in, err := w.build(id, k, nil, opFastPath, len(limits), declaredAt(limits), false, numbers{now: now})
	if err != nil {
		return nil, err
	}
	in.ReturnValues = types.ReturnValueAllNew
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return in, nil
}

// Adjust builds the unconditioned Adjust write of docs/design.md §3 on bucket id:
// for each limit with delta d (whole tokens, either sign) ADD tk −d×1000
// and/or tc +d×1000 per mode. forcePass adds `SET vu = :now`: a credit may
// let a limit reach its ceiling before the stored vu, so the next enforce
// write materialises first (docs/decisions.md P25). ReturnValues is NONE.
func (w *Writes) Adjust(id schema.BucketID, mode AdjustMode, limits []Declared, forcePass bool, now int64) (*dynamodb.UpdateItemInput, error) {
	var kind uint8
	switch mode {
	case AdjustBoth:
		kind = kindAdjustBoth
	case AdjustTokens:
		kind = kindAdjustTokens
	case AdjustConsumed:
		kind = kindAdjustConsumed
	default:
		return nil, &WriteError{Op: opAdjust, Reason: "unknown mode " + strconv.Itoa(int(mode))}
	}
	if forcePass {
		kind |= kindForcePass
	}
	if len(limits) == 0 {
		return nil, &WriteError{Op: opAdjust, Reason: "no limits"}
	}
	return w.build(id, shapeKey{kind: kind, n: len(limits)}, nil, opAdjust, len(limits), declaredAt(limits), true, numbers{now: now})
}

// Retry builds the consumption-only write sent after the slow path lost the
// rf lock (docs/design.md §3, §5): ADD tk −c×1000 and tc +c×1000 per
// limit, on condition attribute_exists(PK), for every hard limit with
// c > 0, b_n_tk >= c×1000, and the fast path's vu guard at now (a debit
// that moves no rf is only exact before vu, docs/decisions.md P25). It
// moves no rf and refills nothing. ReturnValues is ALL_NEW, and ALL_OLD on
// a failed condition.
func (w *Writes) Retry(id schema.BucketID, limits []RetryLimit, now int64) (*dynamodb.UpdateItemInput, error) {
	if len(limits) == 0 {
		return nil, &WriteError{Op: opRetry, Reason: "no limits"}
	}
	k := shapeKey{kind: kindRetry, n: len(limits)}
	hard := func(i int) bool { return limits[i].Hard && limits[i].Amount > 0 }
	var custom func() *exprSet
	for i := range limits {
		if !hard(i) {
			continue
		}
		if i >= 64 {
			// The mask cannot hold the shape: build it for this call only.
			custom = func() *exprSet { return newRetryExprs(len(limits), hard) }
			break
		}
		k.mask |= 1 << i
	}
	at := func(i int) (string, int64) { return limits[i].Name, limits[i].Amount }
	in, err := w.build(id, k, custom, opRetry, len(limits), at, false, numbers{now: now})
	if err != nil {
		return nil, err
	}
	in.ReturnValues = types.ReturnValueAllNew
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return in, nil
}

// Double builds the doubling write of docs/design.md §5 on shard 0 of (entity,
// resource): SET shard_count = 2×old on condition shard_count = old. When
// old is 1 an item without shard_count (which reads as 1) also matches:
// attribute_exists(PK) AND (attribute_not_exists(shard_count) OR
// shard_count = 1). On a failed condition the ALL_OLD image carries the
// count another writer set. old below 1 is a *WriteError; old at or above
// schema.MaxShardCount is a *ShardCapError.
func (w *Writes) Double(ns, entity, resource string, old int64) (*dynamodb.UpdateItemInput, error) {
	switch {
	case old < 1:
		return nil, &WriteError{Op: opDouble, Reason: "shard_count " + strconv.FormatInt(old, 10) + " below 1"}
	case old >= schema.MaxShardCount:
		return nil, &ShardCapError{Old: old}
	}
	k := shapeKey{kind: kindDouble}
	if old == 1 {
		k.kind = kindDoubleFromOne
	}
	id := schema.BucketID{Namespace: ns, Entity: entity, Resource: resource}
	// Counts are powers of two, so 2×old never passes the cap; min keeps a
	// corrupt count (say 20) from writing one above it .
	in, err := w.build(id, k, nil, opDouble, 0, nil, false, numbers{old: old, new: min(2*old, schema.MaxShardCount)})
	if err != nil {
		return nil, err
	}
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return in, nil
}

const (
	opFastPath = "fast path"
	opAdjust   = "adjust"
	opRetry    = "retry"
	opDouble   = "double"
)

// Write kinds of a shapeKey.
const (
	kindEnforce uint8 = iota
	kindBypass
	kindAdjustBoth
	kindAdjustTokens
	kindAdjustConsumed
	kindRetry
	kindDouble
	kindDoubleFromOne

	kindForcePass uint8 = 0x80 // flag on an Adjust kind
)

// shapeKey identifies the expressions of a write: everything they depend on.
type shapeKey struct {
	kind uint8
	n    int    // number of limits
	mask uint64 // Retry: conditioned limits
}

// numbers are the per-call values that are not amounts.
type numbers struct {
	now      int64 // clock reading, epoch ms
	old, new int64 // shard counts of a doubling
}

// What a placeholder stands for.
type valueKind uint8

const (
	vNeg  valueKind = iota // −amount×1000 of limit i
	vPos                   // +amount×1000 of limit i (also a condition's bound)
	vNW                    // −1000
	vPW                    // +1000 (also the wcu condition's bound)
	vNow                   // now, ms
	vNowS                  // now // 1000, s
	vOld                   // old shard count
	vNew                   // new shard count
)

type nameRef struct {
	alias string
	limit int               // index into the limits, or −1 for attr
	field schema.LimitField // with limit ≥ 0
	attr  string            // with limit < 0
}

type valueRef struct {
	alias string
	kind  valueKind
	limit int
}

// exprSet is the per-shape part of a write: immutable once built, except
// for the names maps it shares (names.go), which are added, never changed.
type exprSet struct {
	update    string
	condition string // "" when unconditioned
	limits    int    // how many limits the shape names
	names     []nameRef
	values    []valueRef

	named    nameCache
	fixed    sync.Once
	fixedMap map[string]string
}

// exprs returns the expressions of shape k, building and caching them on
// first use.
func (w *Writes) exprs(k shapeKey) *exprSet {
	if m := w.cache.Load(); m != nil {
		if s, ok := (*m)[k]; ok {
			return s
		}
	}
	s := newExprs(k)
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.cache.Load()
	if old != nil {
		if s2, ok := (*old)[k]; ok {
			return s2
		}
		if len(*old) >= maxCachedShapes {
			return s
		}
	}
	m := map[shapeKey]*exprSet{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[k] = s
	w.cache.Store(&m)
	return s
}

// exprBuilder accumulates one exprSet.
type exprBuilder struct {
	upd, cond strings.Builder
	set       exprSet
	items     int // ADD/SET items written to the current clause
}

// name registers a name placeholder (once, however often it is used) and
// returns it.
func (b *exprBuilder) name(alias string, limit int, field schema.LimitField, attr string) string {
	for _, r := range b.set.names {
		if r.alias == alias {
			return alias
		}
	}
	b.set.names = append(b.set.names, nameRef{alias: alias, limit: limit, field: field, attr: attr})
	b.set.limits = max(b.set.limits, limit+1)
	return alias
}

// value registers a value placeholder (once) and returns it.
func (b *exprBuilder) value(alias string, kind valueKind, limit int) string {
	for _, r := range b.set.values {
		if r.alias == alias {
			return alias
		}
	}
	b.set.values = append(b.set.values, valueRef{alias: alias, kind: kind, limit: limit})
	return alias
}

// clause starts an update clause ("SET " or "ADD ").
func (b *exprBuilder) clause(kw string) {
	if b.upd.Len() > 0 {
		b.upd.WriteByte(' ')
	}
	b.upd.WriteString(kw)
	b.upd.WriteByte(' ')
	b.items = 0
}

// item appends one "path value" (ADD) or "path = value" (SET) item.
func (b *exprBuilder) item(path, sep, value string) {
	if b.items > 0 {
		b.upd.WriteString(", ")
	}
	b.items++
	b.upd.WriteString(path)
	b.upd.WriteString(sep)
	b.upd.WriteString(value)
}

// and appends one condition term.
func (b *exprBuilder) and(term string) {
	if b.cond.Len() > 0 {
		b.cond.WriteString(" AND ")
	}
	b.cond.WriteString(term)
}

func (b *exprBuilder) done() *exprSet {
	b.set.update, b.set.condition = b.upd.String(), b.cond.String()
	return &b.set
}

func idx(prefix string, i int) string { return prefix + strconv.Itoa(i) }

// Aliases of the fixed attributes.
func (b *exprBuilder) wcuTk() string {
	return b.name("#wt", -1, "", schema.BucketAttr(schema.WCULimit, schema.LimitTokens))
}
func (b *exprBuilder) wcuTc() string {
	return b.name("#wc", -1, "", schema.BucketAttr(schema.WCULimit, schema.LimitConsumed))
}
func (b *exprBuilder) bypass() string   { return b.name("#byp", -1, "", schema.AttrBypass) }
func (b *exprBuilder) ttl() string      { return b.name("#ttl", -1, "", schema.AttrTTL) }
func (b *exprBuilder) disabled() string { return b.name("#dis", -1, "", schema.AttrDisabled) }
func (b *exprBuilder) vu() string       { return b.name("#vu", -1, "", schema.AttrVU) }

func newExprs(k shapeKey) *exprSet {
	switch k.kind &^ kindForcePass {
	case kindEnforce:
		return newEnforceExprs(k.n)
	case kindBypass:
		return newBypassExprs(k.n)
	case kindAdjustBoth, kindAdjustTokens, kindAdjustConsumed:
		return newAdjustExprs(k.n, k.kind&^kindForcePass, k.kind&kindForcePass != 0)
	case kindRetry:
		return newRetryExprs(k.n, func(i int) bool { return k.mask&(1<<i) != 0 })
	case kindDouble, kindDoubleFromOne:
		return newDoubleExprs(k.kind == kindDoubleFromOne)
	}
	panic("limiter: unknown write kind " + strconv.Itoa(int(k.kind)))
}

// wcuAndTTLTerms appends the terms both fast-path shapes share after the
// per-limit ones.
func (b *exprBuilder) wcuAndTTLTerms() {
	b.and(b.wcuTk() + " >= " + b.value(":pw", vPW, -1))
	ttl := b.ttl()
	b.and("(attribute_not_exists(" + ttl + ") OR " + ttl + " > " + b.value(":nows", vNowS, -1) + ")")
	b.and("attribute_not_exists(" + b.disabled() + ")")
}

func newEnforceExprs(n int) *exprSet {
	b := &exprBuilder{}
	b.clause("ADD")
	b.and("attribute_exists(PK)")
	var now, byp string
	if n > 0 {
		now, byp = b.value(":now", vNow, -1), b.bypass()
	}
	for i := range n {
		t := b.name(idx("#t", i), i, schema.LimitTokens, "")
		c := b.name(idx("#c", i), i, schema.LimitConsumed, "")
		o := b.name(idx("#o", i), i, schema.LimitSoft, "")
		b.item(t, " ", b.value(idx(":n", i), vNeg, i))
		b.item(c, " ", b.value(idx(":p", i), vPos, i))
		// The condition reuses the credit's placeholder: both are amount×1000.
		b.and("(" + o + " > " + now + " OR " + byp + " > " + now + " OR " + t + " >= " + b.value(idx(":p", i), vPos, i) + ")")
	}
	b.item(b.wcuTk(), " ", b.value(":nw", vNW, -1))
	b.item(b.wcuTc(), " ", b.value(":pw", vPW, -1))
	b.wcuAndTTLTerms()
	if now == "" {
		now = b.value(":now", vNow, -1)
	}
	vu := b.vu()
	b.and("(attribute_not_exists(" + vu + ") OR " + vu + " > " + now + ")")
	return b.done()
}

func newBypassExprs(n int) *exprSet {
	b := &exprBuilder{}
	b.clause("ADD")
	for i := range n {
		c := b.name(idx("#c", i), i, schema.LimitConsumed, "")
		b.item(c, " ", b.value(idx(":p", i), vPos, i))
	}
	b.item(b.wcuTk(), " ", b.value(":nw", vNW, -1))
	b.item(b.wcuTc(), " ", b.value(":pw", vPW, -1))
	b.and("attribute_exists(PK)")
	b.and(b.bypass() + " > " + b.value(":now", vNow, -1))
	b.wcuAndTTLTerms()
	return b.done()
}

func newAdjustExprs(n int, kind uint8, forcePass bool) *exprSet {
	b := &exprBuilder{}
	if forcePass {
		b.clause("SET")
		b.item(b.vu(), " = ", b.value(":now", vNow, -1))
	}
	b.clause("ADD")
	for i := range n {
		if kind != kindAdjustConsumed {
			b.item(b.name(idx("#t", i), i, schema.LimitTokens, ""), " ", b.value(idx(":n", i), vNeg, i))
		}
		if kind != kindAdjustTokens {
			b.item(b.name(idx("#c", i), i, schema.LimitConsumed, ""), " ", b.value(idx(":p", i), vPos, i))
		}
	}
	return b.done()
}

func newRetryExprs(n int, hard func(int) bool) *exprSet {
	b := &exprBuilder{}
	b.clause("ADD")
	b.and("attribute_exists(PK)")
	for i := range n {
		t := b.name(idx("#t", i), i, schema.LimitTokens, "")
		b.item(t, " ", b.value(idx(":n", i), vNeg, i))
		b.item(b.name(idx("#c", i), i, schema.LimitConsumed, ""), " ", b.value(idx(":p", i), vPos, i))
		if hard(i) {
			b.and(t + " >= " + b.value(idx(":p", i), vPos, i))
		}
	}
	vu := b.vu()
	b.and("(attribute_not_exists(" + vu + ") OR " + vu + " > " + b.value(":now", vNow, -1) + ")")
	return b.done()
}

func newDoubleExprs(fromOne bool) *exprSet {
	b := &exprBuilder{}
	sc := b.name("#sc", -1, "", schema.AttrShardCount)
	b.clause("SET")
	b.item(sc, " = ", b.value(":new", vNew, -1))
	old := b.value(":old", vOld, -1)
	if fromOne {
		b.and("attribute_exists(PK)")
		b.and("(attribute_not_exists(" + sc + ") OR " + sc + " = " + old + ")")
	} else {
		b.and(sc + " = " + old)
	}
	return b.done()
}

// limitAt returns limit i's name and amount.
type limitAt func(i int) (name string, amount int64)

func declaredAt(limits []Declared) limitAt {
	return func(i int) (string, int64) { return limits[i].Name, limits[i].Amount }
}

// build validates the limits, then fills the expressions of shape k (from
// the cache, or from custom when it is not nil) with this call's names and
// numbers. Invalid input never reaches the cache.
func (w *Writes) build(id schema.BucketID, k shapeKey, custom func() *exprSet, op string, n int, at limitAt, signed bool, nums numbers) (*dynamodb.UpdateItemInput, error) {
	var stack [16]int64
	milli, err := checkLimits(stack[:0], op, n, at, signed)
	if err != nil {
		return nil, err
	}
	var set *exprSet
	if custom != nil {
		set = custom()
	} else {
		set = w.exprs(k)
	}
	return w.fill(id, set, at, milli, nums), nil
}

// checkLimits validates the names and amounts and returns the amounts in
// millitokens, appended to dst.
func checkLimits(dst []int64, op string, n int, at limitAt, signed bool) ([]int64, error) {
	for i := range n {
		name, amount := at(i)
		switch {
		case name == "":
			return nil, &WriteError{Op: op, Reason: "empty limit name"}
		case name == schema.WCULimit:
			return nil, &WriteError{Op: op, Limit: name, Reason: "reserved limit name"}
		case amount < 0 && !signed:
			return nil, &WriteError{Op: op, Limit: name, Reason: "negative amount " + strconv.FormatInt(amount, 10)}
		}
		for j := range i {
			if other, _ := at(j); other == name {
				return nil, &WriteError{Op: op, Limit: name, Reason: "declared twice"}
			}
		}
		m, ok := bucket.ToMilli(amount)
		if !ok {
			return nil, &WriteError{Op: op, Limit: name, Reason: "amount " + strconv.FormatInt(amount, 10) + " overflows millitokens"}
		}
		dst = append(dst, m)
	}
	return dst, nil
}

// fill builds the request: the cached expressions plus this call's names
// and numbers.
func (w *Writes) fill(id schema.BucketID, set *exprSet, at limitAt, milli []int64, nums numbers) *dynamodb.UpdateItemInput {
	// One string holds every number; ends[i] is where the i-th one ends.
	var tstack [256]byte
	var estack [32]int
	pk := id.AppendPK(tstack[:0])
	buf, ends := pk[len(pk):], estack[:0]
	for _, r := range set.values {
		buf = strconv.AppendInt(buf, valueOf(r, milli, nums), 10)
		ends = append(ends, len(buf))
	}
	text := string(buf)

	blk := new(inputBlock)
	members := blk.members[:0]
	if len(set.values) > len(blk.members) {
		members = make([]types.AttributeValueMemberN, len(set.values))
	}
	members = members[:len(set.values)]
	values := make(map[string]types.AttributeValue, len(set.values))
	start := 0
	for i, r := range set.values {
		members[i].Value = text[start:ends[i]]
		start = ends[i]
		values[r.alias] = &members[i]
	}

	blk.strs[0], blk.strs[1], blk.strs[2] = w.table, set.update, set.condition
	in := &blk.in
	*in = dynamodb.UpdateItemInput{
		TableName:                 &blk.strs[0],
		Key:                       w.keys.keyFor(pk),
		UpdateExpression:          &blk.strs[1],
		ExpressionAttributeNames:  set.namesFor(at),
		ExpressionAttributeValues: values,
	}
	if set.condition != "" {
		in.ConditionExpression = &blk.strs[2]
	}
	return in
}

// blockValues is how many value members an inputBlock holds: the
// fast-path write of the common request of up to two limits (2 per limit
// and 4 more); a larger one takes its members from a slice of its own.
const blockValues = 8

// inputBlock is one call's request with what its pointers point to (table
// name, expressions and number members), allocated together: one
// allocation instead of one per part. Nothing in it is shared with another
// call.
type inputBlock struct {
	in      dynamodb.UpdateItemInput
	strs    [3]string
	members [blockValues]types.AttributeValueMemberN
}

func valueOf(r valueRef, milli []int64, nums numbers) int64 {
	switch r.kind {
	case vNeg:
		return -milli[r.limit]
	case vPos:
		return milli[r.limit]
	case vNW:
		return -bucket.WCUDebit
	case vPW:
		return bucket.WCUDebit
	case vNow:
		return nums.now
	case vNowS:
		return bucket.FloorDiv(nums.now, 1000)
	case vOld:
		return nums.old
	case vNew:
		return nums.new
	}
	return 0
}
