package bucketitem

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Stamp is a soft or bypass stamp as an item carries it (docs/design.md §8,
// docs/design.md §8): an N epoch-ms deadline, live while it is after now. A stamp of
// another type (a design-era BOOL) is present but never live: the fast path's
// `> :now` comparison is false on it, so the request takes the slow path,
// which re-stamps from config.
type Stamp struct {
	// Deadline is the stored deadline, epoch ms; meaningful only when Numeric.
	Deadline int64
	// Present reports that the attribute exists.
	Present bool
	// Numeric reports that the attribute is an N (Present is then true).
	Numeric bool
}

// Live reports whether the stamp is honoured at now: a numeric deadline
// strictly after now.
func (s Stamp) Live(now int64) bool { return s.Numeric && s.Deadline > now }

// Expired reports whether the stamp is present but not live at now
// (deadline passed, or not a number).
func (s Stamp) Expired(now int64) bool { return s.Present && !s.Live(now) }

// LimitFields is a set of per-limit attributes (docs/design.md §2) found on an item.
type LimitFields uint16

// The per-limit attributes, one bit each.
const (
	FieldTokens         LimitFields = 1 << iota // b_{n}_tk
	FieldCapacity                               // b_{n}_cp
	FieldRefillAmount                           // b_{n}_ra
	FieldRefillPeriod                           // b_{n}_rp
	FieldConsumed                               // b_{n}_tc
	FieldGrantShards                            // b_{n}_gc (phase 2)
	FieldTopUp                                  // b_{n}_tu (phase 2)
	FieldWindowStart                            // b_{n}_ws (phase 2)
	FieldResetAfter                             // b_{n}_rsa (phase 2)
	FieldWindowAnchor                           // b_{n}_wa (phase 2)
	FieldWindowConsumed                         // b_{n}_wtc (phase 2)
	FieldSchedule                               // b_{n}_sched (phase 2)
	FieldResetSchedule                          // b_{n}_rsched (phase 2)
	FieldSoft                                   // b_{n}_soft
)

// Phase2Fields are the per-limit attributes that mark a quota, a window or
// a schedule (docs/design.md §9: the aggregator abstains on an item carrying any).
const Phase2Fields = FieldGrantShards | FieldTopUp | FieldWindowStart | FieldResetAfter |
	FieldWindowAnchor | FieldWindowConsumed | FieldSchedule | FieldResetSchedule

// Has reports whether every field of f is in s.
func (s LimitFields) Has(f LimitFields) bool { return s&f == f }

// fieldAttrs are the per-limit attributes by field, in bit order.
var fieldAttrs = [...]schema.LimitField{
	schema.LimitTokens, schema.LimitCapacity, schema.LimitRefillAmount, schema.LimitRefillPeriod,
	schema.LimitConsumed, schema.LimitGrantShards, schema.LimitTopUp, schema.LimitWindowStart,
	schema.LimitResetAfter, schema.LimitWindowAnchor, schema.LimitWindowConsumed, schema.LimitSchedule,
	schema.LimitResetSchedule, schema.LimitSoft,
}

// Attrs are the item's attribute names of l's fields in mask that the
// item holds (b_{n}_tk, …): what a write removes to clear them.
func (l *LimitImage) Attrs(mask LimitFields) []string {
	var out []string
	for i, f := range fieldAttrs {
		if bit := LimitFields(1) << i; l.Fields&mask&bit != 0 {
			out = append(out, schema.BucketAttr(l.Name, f))
		}
	}
	return out
}

// LimitImage is one limit's attributes on a bucket item. A field's value is
// meaningful only when its bit is in Fields (an absent field is zero).
type LimitImage struct {
	// Name is the limit name, {n} of b_{n}_*.
	Name string
	// Fields are the attributes found.
	Fields LimitFields

	Tokens       int64 // b_{n}_tk: stored balance, millitokens (may be negative)
	Capacity     int64 // b_{n}_cp: millitokens, undivided
	RefillAmount int64 // b_{n}_ra: millitokens per period, undivided; 0 for a quota
	RefillPeriod int64 // b_{n}_rp: ms
	Consumed     int64 // b_{n}_tc: net consumption counter, millitokens

	GrantShards    int64  // b_{n}_gc: quota grant shard count
	TopUp          int64  // b_{n}_tu: quota top-up this period, millitokens
	WindowStart    int64  // b_{n}_ws: session window start, epoch ms
	ResetAfter     int64  // b_{n}_rsa: session window length, s
	WindowAnchor   int64  // b_{n}_wa: window start the balance reflects, epoch ms
	WindowConsumed int64  // b_{n}_wtc: tc snapshot at rollover, millitokens
	Schedule       string // b_{n}_sched
	ResetSchedule  string // b_{n}_rsched

	// Soft is the b_{n}_soft stamp.
	Soft Stamp
}

// Present reports the discovery rule of docs/design.md §2: the limit exists on the
// bucket iff both b_{n}_tk and b_{n}_cp do.
func (l *LimitImage) Present() bool { return l.Fields.Has(FieldTokens | FieldCapacity) }

// Params returns the stored parameters. GrantShards and TopUp are zero when
// absent, which is how [bucket.Effective] reads "absent".
func (l *LimitImage) Params() bucket.Params {
	return bucket.Params{
		Capacity:     l.Capacity,
		RefillAmount: l.RefillAmount,
		RefillPeriod: l.RefillPeriod,
		GrantShards:  l.GrantShards,
		TopUp:        l.TopUp,
	}
}

// ImageLimit returns the limit as [bucket.WouldRefillSatisfy] takes it, for a
// request of amount whole tokens; soft says whether to skip it (the caller's
// policy: a live soft stamp for docs/design.md §3, any stamp for the rejection
// cache). The quota fields ResetPending and ResetsAtMs are left zero, so a
// quota sends the request to the slow path; Image.JudgeLimit fills them.
func (l *LimitImage) ImageLimit(amount int64, soft bool) bucket.ImageLimit {
	return bucket.ImageLimit{Present: l.Present(), Soft: soft, Tokens: l.Tokens, Params: l.Params(), Amount: amount}
}

// Image is a bucket item (docs/design.md §2) decoded into typed state: the one decoder
// shared by the fast and slow paths, failure classification, the rejection
// cache and the aggregator. Decode with [Decode] or [Image.Decode].
//
// A value is meaningful only when its Has flag is set; strings refer to the
// item's own attribute values (decoding copies no string).
type Image struct {
	Entity   string // entity_id
	Resource string // resource

	RF    int64 // rf, epoch ms
	HasRF bool

	// ShardCount is shard_count; 1 when absent.
	ShardCount    int64
	HasShardCount bool

	Cascade    bool // cascade
	HasCascade bool

	ParentID  string // parent_id
	HasParent bool

	PGen    int64 // pgen
	HasPGen bool

	// Disabled reports disabled = BOOL true. HasDisabled reports the
	// attribute with any BOOL value: the fast path's attribute_not_exists
	// guard fails on either.
	Disabled    bool
	HasDisabled bool

	// Bypass is the item-level bypass stamp.
	Bypass Stamp

	VU    int64 // vu, epoch ms
	HasVU bool

	TTL    int64 // ttl, epoch seconds
	HasTTL bool

	// Recheck is the deadline, epoch ms, by which the shard's limits are
	// to be checked against config (recheck; docs/design.md §8): present
	// on a shard created or cloned since a config read last confirmed them.
	Recheck    int64
	HasRecheck bool

	Sched      string // sched (phase 2)
	ResetSched string // rsched (phase 2)
	SchedTZ    string // sched_tz (phase 2)
	// HasSched, HasResetSched and HasSchedTZ report the item-level schedule
	// attributes.
	HasSched, HasResetSched, HasSchedTZ bool

	// WCU is the reserved `wcu` limit (docs/design.md §2), kept out of Limits and
	// Partial so user-facing code never meets it. Check WCU.Present().
	WCU LimitImage

	// Limits are the limits present on the item (discovery rule: b_{n}_tk
	// and b_{n}_cp both exist), `wcu` excluded, sorted by name.
	Limits []LimitImage

	// Partial are the limits with some recognised b_{n}_* attribute but not
	// both tk and cp (for instance a lone b_{n}_tc a bypass write added for
	// a limit the item does not carry), `wcu` excluded, sorted by name. They
	// are not on the bucket by the discovery rule, but their tc is real
	// consumption.
	Partial []LimitImage

	// store is the backing array of Limits and Partial, kept for reuse.
	store []LimitImage
}

// CorruptItemError reports an attribute this package knows whose value has
// the wrong type or is not an int64 (docs/design.md §3: never wrapped). Callers skip
// the item and log.
type CorruptItemError struct {
	Attribute string // the attribute name
	Reason    string // what is wrong with it
}

// Error implements error.
func (e *CorruptItemError) Error() string {
	return "bucketitem: corrupt item: attribute " + strconv.Quote(e.Attribute) + ": " + e.Reason
}

// Decode decodes a bucket item. An empty or nil item decodes to an
// Image with no limits (callers that must tell a missing item apart check
// len(item) first).
func Decode(item map[string]types.AttributeValue) (Image, error) {
	var img Image
	err := img.Decode(item)
	return img, err
}

// Decode replaces img with the decoding of item, reusing the storage of
// img.Limits and img.Partial (so a reused Image decodes without allocating
// once it has grown; slices taken from the previous decoding are
// overwritten). Unknown attributes, unknown per-limit fields and key attributes
// are ignored. A known attribute of the wrong type, an N that is not an
// int64, or a shard_count below 1 is a *CorruptItemError; which of several
// corrupt attributes is reported is unspecified, and img is then
// unspecified too.
func (img *Image) Decode(item map[string]types.AttributeValue) error {
	// The loop of DecodeItem, written out for SDK values: a call of the
	// generic function would move a caller's Image to the heap (an
	// allocation per fast-path acquire).
	buf := img.startDecode()
	for k, av := range item {
		var err error
		if buf, err = img.decodeAttr(buf, k, SDKScalar(av)); err != nil {
			img.store = buf
			return err
		}
	}
	img.finishDecode(buf)
	return nil
}

// Scalar is one attribute value as the image decoder reads it: its
// DynamoDB type and, for an S or an N, its text, for a BOOL, its value.
// DecodeItem reads items of any attribute representation through it, so
// that an image arriving in another shape (a stream record's) decodes
// without being converted to SDK values first.
type Scalar struct {
	// Type names the DynamoDB type: "S", "N", "BOOL", "B", "NULL", "SS",
	// "NS", "BS", "L" or "M"; "nothing" for a missing value and "an
	// unknown type" for anything else.
	Type string
	// Nil marks a value of Type that holds nothing (a typed-nil SDK
	// member): it is no usable value of any type.
	Nil bool
	// Text is an S's or an N's text.
	Text string
	// Bool is a BOOL's value.
	Bool bool
}

// SDKScalar reads an SDK attribute value as a Scalar.
func SDKScalar(v types.AttributeValue) Scalar {
	switch m := v.(type) {
	case *types.AttributeValueMemberS:
		if m == nil {
			return Scalar{Type: "S", Nil: true}
		}
		return Scalar{Type: "S", Text: m.Value}
	case *types.AttributeValueMemberN:
		if m == nil {
			return Scalar{Type: "N", Nil: true}
		}
		return Scalar{Type: "N", Text: m.Value}
	case *types.AttributeValueMemberBOOL:
		if m == nil {
			return Scalar{Type: "BOOL", Nil: true}
		}
		return Scalar{Type: "BOOL", Bool: m.Value}
	}
	return Scalar{Type: typeName(v)}
}

// DecodeItem is Image.Decode for an item whose attribute values are of any
// type V, read through scalar: the same rules, the same errors, and the
// same reuse of img's storage.
func DecodeItem[V any](img *Image, item map[string]V, scalar func(V) Scalar) error {
	buf := img.startDecode()
	for k, av := range item {
		var err error
		if buf, err = img.decodeAttr(buf, k, scalar(av)); err != nil {
			img.store = buf
			return err
		}
	}
	img.finishDecode(buf)
	return nil
}

// startDecode empties img for a decoding and returns its limit storage,
// emptied, for reuse.
func (img *Image) startDecode() []LimitImage {
	buf := img.store[:0]
	*img = Image{ShardCount: 1}
	return buf
}

// decodeAttr decodes one attribute k of value v into img, its limits
// gathering in buf.
func (img *Image) decodeAttr(buf []LimitImage, k string, v Scalar) ([]LimitImage, error) {
	var err error
	switch k {
	case schema.AttrEntityID:
		img.Entity, err = str(k, v)
	case schema.AttrResource:
		img.Resource, err = str(k, v)
	case schema.AttrRF:
		img.RF, err = num(k, v)
		img.HasRF = true
	case schema.AttrShardCount:
		img.ShardCount, err = num(k, v)
		img.HasShardCount = true
		if err == nil && img.ShardCount < 1 {
			err = corrupt(k, "shard_count below 1")
		}
	case schema.AttrCascade:
		img.Cascade, err = boolean(k, v)
		img.HasCascade = true
	case schema.AttrParentID:
		img.ParentID, err = str(k, v)
		img.HasParent = true
	case schema.AttrPGen:
		img.PGen, err = num(k, v)
		img.HasPGen = true
	case schema.AttrDisabled:
		img.Disabled, err = boolean(k, v)
		img.HasDisabled = true
	case schema.AttrBypass:
		img.Bypass, err = stamp(k, v)
	case schema.AttrVU:
		img.VU, err = num(k, v)
		img.HasVU = true
	case schema.AttrTTL:
		img.TTL, err = num(k, v)
		img.HasTTL = true
	case schema.AttrRecheck:
		img.Recheck, err = num(k, v)
		img.HasRecheck = true
	case schema.AttrSched:
		img.Sched, err = str(k, v)
		img.HasSched = true
	case schema.AttrRSched:
		img.ResetSched, err = str(k, v)
		img.HasResetSched = true
	case schema.AttrSchedTZ:
		img.SchedTZ, err = str(k, v)
		img.HasSchedTZ = true
	default:
		name, f, ok := schema.ParseBucketAttr(k)
		if !ok {
			return buf, nil
		}
		bit := fieldBit(f)
		if bit == 0 {
			return buf, nil // a field this implementation does not know: preserve, ignore
		}
		var l *LimitImage
		if name == schema.WCULimit {
			l = &img.WCU
			l.Name = schema.WCULimit
		} else {
			l, buf = limitFor(buf, name)
		}
		err = l.set(k, bit, v)
	}
	return buf, err
}

// finishDecode sorts the decoded limits in buf into img: present limits
// first, then partial ones, each by name.
func (img *Image) finishDecode(buf []LimitImage) {
	p := 0
	for i := range buf {
		if buf[i].Present() {
			buf[p], buf[i] = buf[i], buf[p]
			p++
		}
	}
	byName := func(a, b LimitImage) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(buf[:p], byName)
	slices.SortFunc(buf[p:], byName)
	img.Limits, img.Partial, img.store = buf[:p:p], buf[p:], buf
}

// limitFor returns the entry for name in buf, appending one if needed. A
// buf with no storage yet gets room for limitsHint limits at once.
func limitFor(buf []LimitImage, name string) (*LimitImage, []LimitImage) {
	for i := range buf {
		if buf[i].Name == name {
			return &buf[i], buf
		}
	}
	if cap(buf) == 0 {
		buf = make([]LimitImage, 0, limitsHint)
	}
	buf = append(buf, LimitImage{Name: name})
	return &buf[len(buf)-1], buf
}

// limitsHint is the room a fresh decoding makes for limits at once: the
// common bucket of up to two limits besides wcu (a larger one grows).
const limitsHint = 2

func fieldBit(f schema.LimitField) LimitFields {
	switch f {
	case schema.LimitTokens:
		return FieldTokens
	case schema.LimitCapacity:
		return FieldCapacity
	case schema.LimitRefillAmount:
		return FieldRefillAmount
	case schema.LimitRefillPeriod:
		return FieldRefillPeriod
	case schema.LimitConsumed:
		return FieldConsumed
	case schema.LimitGrantShards:
		return FieldGrantShards
	case schema.LimitTopUp:
		return FieldTopUp
	case schema.LimitWindowStart:
		return FieldWindowStart
	case schema.LimitResetAfter:
		return FieldResetAfter
	case schema.LimitWindowAnchor:
		return FieldWindowAnchor
	case schema.LimitWindowConsumed:
		return FieldWindowConsumed
	case schema.LimitSchedule:
		return FieldSchedule
	case schema.LimitResetSchedule:
		return FieldResetSchedule
	case schema.LimitSoft:
		return FieldSoft
	}
	return 0
}

func (l *LimitImage) set(attr string, bit LimitFields, v Scalar) error {
	var err error
	switch bit {
	case FieldSoft:
		l.Soft, err = stamp(attr, v)
	case FieldSchedule:
		l.Schedule, err = str(attr, v)
	case FieldResetSchedule:
		l.ResetSchedule, err = str(attr, v)
	default:
		var n int64
		n, err = num(attr, v)
		*l.numField(bit) = n
	}
	l.Fields |= bit
	return err
}

func (l *LimitImage) numField(bit LimitFields) *int64 {
	switch bit {
	case FieldTokens:
		return &l.Tokens
	case FieldCapacity:
		return &l.Capacity
	case FieldRefillAmount:
		return &l.RefillAmount
	case FieldRefillPeriod:
		return &l.RefillPeriod
	case FieldConsumed:
		return &l.Consumed
	case FieldGrantShards:
		return &l.GrantShards
	case FieldTopUp:
		return &l.TopUp
	case FieldWindowStart:
		return &l.WindowStart
	case FieldResetAfter:
		return &l.ResetAfter
	case FieldWindowAnchor:
		return &l.WindowAnchor
	}
	return &l.WindowConsumed // FieldWindowConsumed
}

func corrupt(attr, reason string) error { return &CorruptItemError{Attribute: attr, Reason: reason} }

func wrongType(attr, want string, v Scalar) error {
	return corrupt(attr, "want "+want+", have "+v.Type)
}

func num(attr string, v Scalar) (int64, error) {
	if v.Type != "N" || v.Nil {
		return 0, wrongType(attr, "N", v)
	}
	if n, ok := smallInt(v.Text); ok {
		return n, nil
	}
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil {
		return 0, corrupt(attr, "N "+strconv.Quote(v.Text)+" is not an int64")
	}
	return n, nil
}

// smallInt parses s when it is an optional '-' and 1 to 18 decimal digits,
// the form every number a writer stores takes (18 digits cannot overflow
// an int64); ok is false for anything else, which strconv.ParseInt then
// decides. It is the decoder's hot loop: an acquire decodes about twenty
// numbers.
func smallInt(s string) (n int64, ok bool) {
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	return n, true
}

func str(attr string, v Scalar) (string, error) {
	if v.Type != "S" || v.Nil {
		return "", wrongType(attr, "S", v)
	}
	return v.Text, nil
}

func boolean(attr string, v Scalar) (bool, error) {
	if v.Type != "BOOL" || v.Nil {
		return false, wrongType(attr, "BOOL", v)
	}
	return v.Bool, nil
}

// stamp decodes an N deadline; a BOOL is a present, expired stamp
// (docs/compatibility.md C8).
func stamp(attr string, v Scalar) (Stamp, error) {
	switch v.Type {
	case "BOOL":
		if !v.Nil {
			return Stamp{Present: true}, nil
		}
	case "N":
		n, err := num(attr, v)
		if err != nil {
			return Stamp{}, err
		}
		return Stamp{Deadline: n, Present: true, Numeric: true}, nil
	}
	return Stamp{}, wrongType(attr, "N deadline or BOOL", v)
}

// typeName names the DynamoDB type of v for error messages.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return "an unknown type"
}

// Limit returns the limit present on the item (discovery rule) under name,
// or nil. `wcu` is found too (as &img.WCU, when present).
func (img *Image) Limit(name string) *LimitImage {
	if name == schema.WCULimit {
		if img.WCU.Present() {
			return &img.WCU
		}
		return nil
	}
	return find(img.Limits, name)
}

// Lookup returns whatever the item carries for name: a present limit, a
// partial one, or `wcu`; nil when the item has no recognised b_{name}_*
// attribute. Check Present() on the result.
func (img *Image) Lookup(name string) *LimitImage {
	if name == schema.WCULimit {
		if img.WCU.Fields != 0 {
			return &img.WCU
		}
		return nil
	}
	if l := find(img.Limits, name); l != nil {
		return l
	}
	return find(img.Partial, name)
}

func find(ls []LimitImage, name string) *LimitImage {
	if i, ok := slices.BinarySearchFunc(ls, name, func(l LimitImage, n string) int {
		return cmp.Compare(l.Name, n)
	}); ok {
		return &ls[i]
	}
	return nil
}

// Params returns the stored parameters of the limit present under name;
// ok is false when the item does not carry it.
func (img *Image) Params(name string) (p bucket.Params, ok bool) {
	l := img.Limit(name)
	if l == nil {
		return bucket.Params{}, false
	}
	return l.Params(), true
}

// ImageLimit returns a declared limit as docs/design.md §3 takes it from a failed
// write's old image: skipped (Soft) when it carries a live soft stamp or the
// item a live bypass stamp; Present false when the item does not carry it.
// A calendar quota carries its reset at now (see JudgeLimit).
func (img *Image) ImageLimit(name string, amount, now int64) bucket.ImageLimit {
	l := img.Limit(name)
	if l == nil {
		return bucket.ImageLimit{Amount: amount}
	}
	return img.JudgeLimit(l, amount, l.Soft.Live(now) || img.Bypass.Live(now), now)
}

// JudgeLimit returns limit l of img as bucket.WouldRefillSatisfy takes it
// at now, for a request of amount whole tokens, soft as the caller's policy
// says. A calendar quota also carries its reset (docs/design.md §15):
// ResetPending when an edge of its reset schedule came after rf, and
// ResetsAtMs its next edge; a quota whose reset schedule does not decode,
// or has no edge within reach, is left without them, which sends the
// request to the read-then-write path. Parameter schedules are not applied
// here: a caller judges only an image without one (HasParamSchedule). A
// session quota carries its window's end as ResetsAtMs while the window is
// live and applied, and ResetPending otherwise (docs/design.md §15).
func (img *Image) JudgeLimit(l *LimitImage, amount int64, soft bool, now int64) bucket.ImageLimit {
	il := l.ImageLimit(amount, soft)
	if !il.Params.IsQuota() {
		return il
	}
	if l.HasWindow() {
		// A session quota: judged from the image only inside a live window
		// its balance reflects, until that window's end; any other phase
		// is the read-then-write path's to open or roll.
		if w := l.Window(); w.Length > 0 && w.Phase(img.RF, now) == bucket.WindowCurrent {
			il.ResetsAtMs, _ = w.End()
		} else {
			il.ResetPending = true
		}
		return il
	}
	_, r, loc, err := img.Schedules(l.Name)
	if err != nil || len(r) == 0 {
		return il
	}
	at := time.UnixMilli(now)
	if t, ok := r.NextEdge(at, loc); ok {
		il.ResetsAtMs = t.UnixMilli()
	}
	if t, ok := r.PrevEdge(at, loc); ok && t.UnixMilli() > img.RF {
		il.ResetPending = true
	}
	return il
}

// Cascades reports whether the image's owner stamp says the pair cascades
// to a named parent (false for a nil image).
func (img *Image) Cascades() bool {
	return img != nil && img.HasCascade && img.Cascade && img.ParentID != ""
}

// HasParamSchedule reports a parameter schedule on the item: sched, or a
// limit's b_{n}_sched (`wcu` and partial limits included). Its limits'
// parameters in force come from the schedule, which an image judgement
// does not evaluate (docs/decisions.md P47).
func (img *Image) HasParamSchedule() bool {
	return img.HasSched || img.anyLimit(func(l *LimitImage) bool { return l.Fields.Has(FieldSchedule) })
}

// HasSchedule reports any parameter or reset schedule on the item: sched,
// rsched, sched_tz, or a limit's b_{n}_sched or b_{n}_rsched (`wcu` and
// partial limits included).
func (img *Image) HasSchedule() bool {
	if img.HasSched || img.HasResetSched || img.HasSchedTZ {
		return true
	}
	return img.anyLimit(func(l *LimitImage) bool {
		return l.Fields&(FieldSchedule|FieldResetSchedule) != 0
	})
}

// Phase2 reports whether the item carries anything phase 1 does not model
// (docs/design.md §9): a schedule, a window (ws, rsa, wa, wtc), a grant (gc), a
// top-up (tu), or a present limit with a zero refill amount (a quota). The
// aggregator abstains from such an item.
func (img *Image) Phase2() bool {
	if img.HasSched || img.HasResetSched || img.HasSchedTZ {
		return true
	}
	return img.anyLimit(func(l *LimitImage) bool {
		return l.Fields&Phase2Fields != 0 || (l.Present() && l.RefillAmount == 0)
	})
}

// WindowFields are the per-limit attributes of a session window (ADR-139,
// ADR-140): ws, rsa, wa and wtc.
const WindowFields = FieldWindowStart | FieldResetAfter | FieldWindowAnchor | FieldWindowConsumed

// Windowed reports whether any limit on the item (present, partial or
// `wcu`) carries a session window attribute (WindowFields): a session
// quota, which the operator's reset and top-up do not handle yet.
func (img *Image) Windowed() bool {
	return img.anyLimit(func(l *LimitImage) bool { return l.Fields&WindowFields != 0 })
}

// HasWindow reports whether l carries a session window in force (ADR-139):
// its length b_{n}_rsa is what marks one; the start b_{n}_ws may still be
// absent (a window not opened yet).
func (l *LimitImage) HasWindow() bool { return l.Fields.Has(FieldResetAfter) }

// WindowEnd is the end of l's session window, ws + rsa × 1000 in epoch ms
// (saturated at math.MaxInt64); ok is false when l carries no start or no
// length, or a length that is not positive, which no window can have: a
// caller must not judge such a shard (docs/design.md §2). The end is
// always derived, never stored (ADR-139).
func (l *LimitImage) WindowEnd() (end int64, ok bool) {
	if !l.Fields.Has(FieldWindowStart|FieldResetAfter) || l.ResetAfter <= 0 {
		return 0, false
	}
	return l.Window().End()
}

// Window is l's session window as the bucket arithmetic takes it
// (bucket.Window, whose Phase and RollTarget the client and the aggregator
// share): Length is rsa × 1000 (saturated at math.MaxInt64), 0 when l
// carries no length or one that is not positive — no window has such a
// length, so check HasWindow and a positive ResetAfter before judging a
// shard by its phase.
func (l *LimitImage) Window() bucket.Window {
	w := bucket.Window{
		Start: l.WindowStart, HasStart: l.Fields.Has(FieldWindowStart),
		Applied: l.WindowAnchor, HasApplied: l.Fields.Has(FieldWindowAnchor),
		Snapshot: l.WindowConsumed, HasSnapshot: l.Fields.Has(FieldWindowConsumed),
	}
	switch {
	case !l.Fields.Has(FieldResetAfter) || l.ResetAfter <= 0:
	case l.ResetAfter > math.MaxInt64/1000:
		w.Length = math.MaxInt64
	default:
		w.Length = l.ResetAfter * 1000
	}
	return w
}

// WindowLive reports whether l's session window is open at now: it has an
// end (WindowEnd) and the end is after now.
func (l *LimitImage) WindowLive(now int64) bool {
	end, ok := l.WindowEnd()
	return ok && end > now
}

// WindowPending reports whether the shard's balance of l does not reflect
// its window start yet, so its next materialising pass resets it (ADR-140):
// ws > wa, or ws > rf on an item written before wa. No start, no roll.
func (l *LimitImage) WindowPending(rf int64) bool {
	w := l.Window()
	return w.HasStart && !w.Reflected(rf)
}

// WindowCurrent reports whether l's balance belongs to the current period
// of its session window at now (docs/design.md §2; ADR-145's current
// period for a session quota): the window is live and applied (wa >= ws,
// or ws <= rf on an item written before wa).
func (l *LimitImage) WindowCurrent(rf, now int64) bool {
	return l.WindowLive(now) && !l.WindowPending(rf)
}

func (img *Image) anyLimit(pred func(*LimitImage) bool) bool {
	if pred(&img.WCU) {
		return true
	}
	for i := range img.Limits {
		if pred(&img.Limits[i]) {
			return true
		}
	}
	for i := range img.Partial {
		if pred(&img.Partial[i]) {
			return true
		}
	}
	return false
}

// DecodeJSON is Image.Decode for an item in DynamoDB's JSON wire form, as
// an answer carries it ({"name":{"N":"12"},...}), read without building SDK
// values (docs/design.md §5, "The answer's decoding"), and returns how many
// attributes the item holds. It reads only the subset of package ddbjson:
// for anything outside it, it returns ddbjson.ErrUnsupported and the caller
// decodes the SDK's values instead. What it reads, it reads as Decode reads
// the SDK's values of the same item, with the same errors; img is
// unspecified after an error.
func (img *Image) DecodeJSON(item string) (attrs int, err error) {
	it, err := ddbjson.NewItem(item)
	if err != nil {
		return 0, err
	}
	buf := img.startDecode()
	for {
		k, v, ok, err := it.Next()
		if err == nil && ok {
			attrs++
			s := Scalar{Type: v.Type, Text: v.Text}
			if v.Type == "BOOL" {
				s.Bool = v.Bool
			}
			buf, err = img.decodeAttr(buf, k, s)
		}
		if err != nil {
			img.store = buf
			return 0, err
		}
		if !ok {
			break
		}
	}
	img.finishDecode(buf)
	return attrs, nil
}
