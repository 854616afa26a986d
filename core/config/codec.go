package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Attribute names of the ADR-143 merge draft. docs/design.md §7: an item carrying
// any of them is refused (fail closed).
const (
	AttrInheritLimits = "inherit_limits"
	AttrExcludeLimits = "exclude_limits"
	AttrPatchLimits   = "patch_limits"
	// PatchAttrPrefix starts `p_{n}_sched`, the ADR-143 schedule patch.
	PatchAttrPrefix = "p_"
)

// bypassValue is the S value of `disabled` that means bypass (ADR-151).
const bypassValue = "bypass"

// configVersion is the only config_version written today (docs/design.md §2).
const configVersion = "1"

// MaxLimitsPerLevel bounds the limit set one setter call stores. docs/design.md §2
// sets no bound; this one keeps every update expression far below
// DynamoDB's 4 KB expression limit and is already well past the 1 KB bucket
// item budget of docs/design.md §2.
const MaxLimitsPerLevel = 32

// Problem is one corrupt or misplaced piece of a config item that decoding
// skipped (docs/design.md §2: values from DynamoDB that fail parsing are skipped and
// logged). Callers log it; it never stops resolution.
type Problem struct {
	// Attribute is the attribute, or for a limit the `l_{n}_` name stem.
	Attribute string
	// Reason says what is wrong and what was done about it.
	Reason string
}

// Decoded is a decoded config item: what this package understands of it plus
// the problems it skipped.
type Decoded struct {
	Config
	// Problems are the corrupt or misplaced pieces decoding skipped.
	Problems []Problem
}

// EncodeLimits returns the flat limit attributes of docs/design.md §2 for a limit
// set: `l_{n}_cp`, `l_{n}_ra` (N whole tokens), `l_{n}_rp` (N seconds) and,
// for a soft limit, `l_{n}_soft` = BOOL true. A session quota's attributes
// are `w_{n}_*` instead, its window length `w_{n}_rsa` (N seconds) among
// them (ADR-142, docs/design.md §7). The set is validated with
// limit.ValidateSet; failures are *schema.ValidationError. The codec is
// pure: the Store's writers pass the version gate before they write.
func EncodeLimits(limits []limit.Limit) (map[string]types.AttributeValue, error) {
	if err := limit.ValidateSet(limits); err != nil {
		return nil, err
	}
	out := make(map[string]types.AttributeValue, 4*len(limits))
	putLimits(out, limits)
	return out, nil
}

// putLimits adds the attributes of valid limits to item: per limit cp, ra,
// rp, soft, its schedule (`l_{n}_sched`) and reset schedule
// (`l_{n}_rsched`), and the item's `sched_tz` when a scheduled limit reads
// a zone other than UTC (docs/design.md §14). A session quota's go under
// the hidden prefix, its window length too: `w_{n}_cp`, `w_{n}_ra`,
// `w_{n}_rp`, `w_{n}_rsa`, `w_{n}_soft`, `w_{n}_sched` (ADR-142), the form
// the Python client writes.
func putLimits(item map[string]types.AttributeValue, limits []limit.Limit) {
	for _, l := range limits {
		attr := schema.ConfigAttr
		if l.IsSession() {
			attr = schema.HiddenConfigAttr
			item[attr(l.Name, schema.LimitResetAfter)] = schema.Num(l.ResetAfterSeconds())
		}
		item[attr(l.Name, schema.LimitCapacity)] = schema.Num(l.Capacity)
		item[attr(l.Name, schema.LimitRefillAmount)] = schema.Num(l.RefillAmount)
		item[attr(l.Name, schema.LimitRefillPeriod)] = schema.Num(l.RefillPeriodSeconds())
		if l.Soft {
			item[attr(l.Name, schema.LimitSoft)] = &types.AttributeValueMemberBOOL{Value: true}
		}
		if l.Schedule != "" {
			item[attr(l.Name, schema.LimitSchedule)] = schema.Str(l.Schedule)
		}
		if l.ResetSchedule != "" {
			item[attr(l.Name, schema.LimitResetSchedule)] = schema.Str(l.ResetSchedule)
		}
		if (l.Schedule != "" || l.ResetSchedule != "") && l.Zone != "" {
			item[schema.AttrSchedTZ] = schema.Str(l.Zone)
		}
	}
}

// EncodeConfigItem returns the non-key attributes of a config item of level
// holding c: `config_version`, the limit attributes, and `disabled`,
// `cascade` or `on_unavailable` where set. Identity attributes (`entity_id`,
// `resource`) and keys are the caller's. It rejects, as
// *schema.ValidationError, an invalid limit set, `disabled` or `cascade` at
// system level, `on_unavailable` below system level and an
// `on_unavailable` other than allow/block.
func EncodeConfigItem(level Level, c Config) (map[string]types.AttributeValue, error) {
	if level < LevelEntity || level > LevelSystem {
		return nil, schema.NewValidationError("level", level.String(), "not a config level")
	}
	item, err := EncodeLimits(c.Limits)
	if err != nil {
		return nil, err
	}
	item[schema.AttrConfigVersion] = &types.AttributeValueMemberN{Value: configVersion}
	if level == LevelSystem {
		if c.Disabled != AccessInherit {
			return nil, schema.NewValidationError(schema.AttrDisabled, c.Disabled.String(), "cannot be set on the system level")
		}
		if c.Cascade != CascadeUnset {
			return nil, schema.NewValidationError(schema.AttrCascade, c.Cascade.String(), "cannot be set on the system level")
		}
	} else if c.OnUnavailable != "" {
		return nil, schema.NewValidationError(schema.FieldOnUnavailable, string(c.OnUnavailable), "can only be set on the system level")
	}
	if c.OnUnavailable != "" {
		if !c.OnUnavailable.Valid() {
			return nil, schema.NewValidationError(schema.FieldOnUnavailable, string(c.OnUnavailable), "must be allow or block")
		}
		item[schema.AttrOnUnavailable] = &types.AttributeValueMemberS{Value: string(c.OnUnavailable)}
	}
	switch c.Disabled {
	case AccessInherit:
	case AccessEnforce:
		item[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: false}
	case AccessDisabled:
		item[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: true}
	case AccessBypass:
		item[schema.AttrDisabled] = &types.AttributeValueMemberS{Value: bypassValue}
	default:
		return nil, schema.NewValidationError(schema.AttrDisabled, c.Disabled.String(), "unknown access value")
	}
	switch c.Cascade {
	case CascadeUnset:
	case CascadeOn, CascadeOff:
		item[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: c.Cascade == CascadeOn}
	default:
		return nil, schema.NewValidationError(schema.AttrCascade, c.Cascade.String(), "unknown cascade policy")
	}
	return item, nil
}

// limitFields collects the fields of one limit name under one prefix.
type limitFields struct {
	name   string
	hidden bool // the `w_` prefix (ADR-142)
	fields map[schema.LimitField]types.AttributeValue
	attrs  []string // attribute names, for problems
}

// attr is the attribute of field f of the group's limit, under its prefix.
func (g *limitFields) attr(f schema.LimitField) string {
	if g.hidden {
		return schema.HiddenConfigAttr(g.name, f)
	}
	return schema.ConfigAttr(g.name, f)
}

// stem is the group's `l_{n}_` or `w_{n}_`, the name problems report.
func (g *limitFields) stem() string { return g.attr("") }

// DecodeConfigItem decodes a config item of level (R5, R6 or R7) by the
// rules of docs/design.md §2 and §7:
//
//   - A limit exists iff `l_{n}_cp` exists; it is corrupt, skipped and
//     reported as a Problem unless `l_{n}_ra` and `l_{n}_rp` exist too, all
//     three are N holding integers (strconv.ParseInt; out of range is
//     corrupt), capacity > 0, refill amount ≥ 0, period > 0, and the name
//     is valid. Orphan `ra`/`rp`/`soft` fields without `cp` are reported;
//     unknown fields (such as a legacy `bx`) are ignored.
//   - `l_{n}_soft` BOOL true marks the limit soft; BOOL false or absence
//     hard; another type is reported and read as hard.
//   - A session quota (ADR-139) is stored under the hidden prefix
//     (ADR-142): `w_{n}_cp`, `w_{n}_ra` (0), `w_{n}_rp`, its window length
//     `w_{n}_rsa` (N seconds, > 0), and `w_{n}_soft`, `w_{n}_sched` as for
//     `l_`. Both prefixes are read; a limit under `l_` carrying
//     `l_{n}_rsa` (an unreleased upstream build's form) is a session quota
//     too. Fields under one prefix never join a limit under the other.
//   - `disabled` (resource and entity levels): absent, BOOL true, BOOL
//     false, or S "bypass"; anything else is reported and read as absent.
//     `cascade` likewise with BOOL only. `on_unavailable` (system level):
//     S allow or block. A field found at a level that may not carry it is
//     reported and ignored.
//
// An item whose limit set cannot be trusted is corrupt: one limit name
// with `cp` under both prefixes, or a `w_` limit whose fields or window
// length are missing or unreadable (ADR-142). Attributes of features this
// version does not implement make the item unsupported: `inherit_limits`,
// `exclude_limits`, `patch_limits` and `p_{n}_sched`; so does a limit that
// breaks ADR-137 (a refill amount of 0 without a reset, or a positive one
// with a reset schedule or a window length), a reset schedule beside a
// window length, and a schedule or reset schedule this version cannot
// read. Both make the error an *UnsupportedConfigError naming the first
// offending attribute in name order (a corrupt one first; its Err is then a
// *CorruptConfigError). With any error the result still carries the
// item's Disabled, Cascade and OnUnavailable but no limits: callers must
// fail closed rather than enforce a partial set. The error is the only one
// DecodeConfigItem returns. Session quotas (ADR-139) decode among the
// limits: the client enforces their windows (docs/decisions.md P55).
//
// Decoding never panics, whatever the item holds. Every limit it returns
// passes limit.Validate, and Limits is sorted by name.
func DecodeConfigItem(level Level, item map[string]types.AttributeValue) (Decoded, error) {
	return decodeConfigItem(level, item)
}

func decodeConfigItem(level Level, item map[string]types.AttributeValue) (d Decoded, err error) {
	names := make([]string, 0, len(item))
	for a := range item {
		names = append(names, a)
	}
	slices.Sort(names)

	var unsupported, corrupt *UnsupportedConfigError
	refuseFor := func(attr, reason string, cause error) { // keeps the first offending attribute in name order
		if unsupported == nil || attr < unsupported.Attribute {
			unsupported = &UnsupportedConfigError{Item: itemKey(item), Attribute: attr, Reason: reason, Err: cause}
		}
	}
	refuse := func(attr, reason string) { refuseFor(attr, reason, nil) }
	corruptAt := func(attr, name, reason string) {
		if corrupt == nil || attr < corrupt.Attribute {
			corrupt = &UnsupportedConfigError{Item: itemKey(item), Attribute: attr, Reason: reason,
				Err: &CorruptConfigError{Limit: name, Reason: reason}}
		}
	}
	type groupKey struct {
		name   string
		hidden bool
	}
	groups := make(map[groupKey]*limitFields)
	var order []*limitFields
	zone := ""
	for _, a := range names {
		v := item[a]
		switch a {
		case AttrInheritLimits, AttrExcludeLimits, AttrPatchLimits:
			refuse(a, "limit merging through the hierarchy (ADR-143)")
			continue
		case schema.AttrDisabled:
			d.Disabled = d.decodeDisabled(level, v)
			continue
		case schema.AttrCascade:
			d.Cascade = d.decodeCascade(level, v)
			continue
		case schema.AttrOnUnavailable:
			d.OnUnavailable = d.decodeOnUnavailable(level, v)
			continue
		case schema.AttrSchedTZ:
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				zone = sv.Value
			} else {
				refuse(a, "a time zone that is not a string")
			}
			continue
		}
		if isPatchAttr(a) {
			refuse(a, "a schedule patch of limit merging (ADR-143)")
			continue
		}
		name, f, hidden, ok := schema.ParseConfigAttr(a)
		if !ok {
			continue // not a limit attribute: identity, keys, sched_tz, unknown siblings
		}
		k := groupKey{name, hidden}
		g := groups[k]
		if g == nil {
			g = &limitFields{name: name, hidden: hidden, fields: make(map[schema.LimitField]types.AttributeValue, 4)}
			groups[k] = g
			order = append(order, g)
		}
		g.fields[f] = v
		g.attrs = append(g.attrs, a)
	}

	var limits []limit.Limit
	for _, g := range order {
		if _, hasCP := g.fields[schema.LimitCapacity]; hasCP && g.hidden {
			if other := groups[groupKey{g.name, false}]; other != nil {
				if _, both := other.fields[schema.LimitCapacity]; both {
					corruptAt(g.attr(schema.LimitCapacity), g.name, "limit "+strconv.Quote(g.name)+
						" is stored under both the l_ and the hidden w_ prefix: a corrupt item (ADR-142)")
					continue
				}
			}
		}
		l, ok, quota := d.decodeLimit(g, corruptAt)
		if !ok {
			continue
		}
		rsaV, window := g.fields[schema.LimitResetAfter]
		if g.hidden && !window {
			corruptAt(g.attr(schema.LimitCapacity), g.name, "limit "+strconv.Quote(g.name)+" is a hidden (w_) limit without "+
				g.attr(schema.LimitResetAfter)+", its window length: a corrupt item (ADR-142)")
			continue
		}
		_, resets := g.fields[schema.LimitResetSchedule]
		switch {
		case window && resets:
			refuse(g.attr(schema.LimitResetSchedule), "a reset schedule beside a session window length: a quota resets one way (ADR-139)")
			continue
		case window && !quota:
			refuse(g.attr(schema.LimitResetAfter), "a session window length beside a refill amount: a limit drips or resets, never both (ADR-137)")
			continue
		case quota && !resets && !window:
			refuse(g.attr(schema.LimitRefillAmount), "a refill amount of 0 without a reset schedule or a window length (ADR-137)")
			continue
		case !quota && resets:
			refuse(g.attr(schema.LimitResetSchedule), "a reset schedule beside a refill amount: a limit drips or resets, never both (ADR-137)")
			continue
		}
		if window {
			rsa, okN := parseN(rsaV)
			if !okN || rsa <= 0 || rsa > int64(limit.MaxRefillPeriod/time.Second) {
				corruptAt(g.attr(schema.LimitResetAfter), g.name, "limit "+strconv.Quote(g.name)+" has a session window length that is not a whole number of seconds between 1 and "+
					strconv.FormatInt(int64(limit.MaxRefillPeriod/time.Second), 10)+": a corrupt item (ADR-142)")
				continue
			}
			l.ResetAfter = time.Duration(rsa) * time.Second
		}
		if resets {
			attr := g.attr(schema.LimitResetSchedule)
			text, isS := g.fields[schema.LimitResetSchedule].(*types.AttributeValueMemberS)
			if !isS || text.Value == "" || text.Value == schedule.None {
				refuse(attr, "a reset schedule that is not a stored schedule")
				continue
			}
			r, err := schedule.DecodeResets(text.Value)
			if err != nil {
				refuseFor(attr, "a reset schedule this version cannot read: "+err.Error(), err)
				continue
			}
			// Re-encoded like a schedule, below.
			l.ResetSchedule, l.Zone = r.Encode(), zone
		}
		// The schedule, with the item's zone (docs/design.md §14): one that
		// does not decode fails the whole item closed, as a client must not
		// enforce the limit without it.
		if sv, has := g.fields[schema.LimitSchedule]; has {
			attr := g.attr(schema.LimitSchedule)
			text, isS := sv.(*types.AttributeValueMemberS)
			if !isS {
				refuse(attr, "a schedule that is not a string")
				continue
			}
			if text.Value != "" && text.Value != schedule.None {
				l.Schedule, l.Zone = text.Value, zone
			}
		}
		if l.Schedule != "" || l.ResetSchedule != "" {
			attr := g.attr(schema.LimitSchedule)
			if l.Schedule == "" {
				attr = g.attr(schema.LimitResetSchedule)
			}
			if _, _, _, err := l.Schedules(); err != nil {
				refuseFor(attr, "a schedule this version cannot read: "+err.Error(), err)
				continue
			}
			// Re-encoded: a newer client's versioned text is stored back in
			// the form this version writes.
			sch, _, _ := l.ParamSchedule()
			l.Schedule = sch.Encode()
		}
		if err := l.Validate(); err != nil {
			attr := g.attr(schema.LimitCapacity)
			switch {
			case l.Schedule != "":
				attr = g.attr(schema.LimitSchedule)
			case l.ResetSchedule != "":
				attr = g.attr(schema.LimitResetSchedule)
			case window:
				attr = g.attr(schema.LimitResetAfter)
			}
			refuse(attr, "a limit this version cannot use: "+err.Error())
			continue
		}
		limits = append(limits, l)
	}
	switch {
	case corrupt != nil:
		return d, corrupt
	case unsupported != nil:
		return d, unsupported
	}
	limit.SortByName(limits)
	d.Limits = limits
	return d, nil
}

func (d *Decoded) problem(attr, reason string) {
	d.Problems = append(d.Problems, Problem{Attribute: attr, Reason: reason})
}

// decodeLimit builds one limit from its fields. ok is false for an absent
// or corrupt limit: reported as a Problem, or, for a hidden (`w_`) limit,
// whose set cannot then be trusted, passed to corrupt (ADR-142). quota is
// true for a refill amount of 0, a limit valid only with the reset the
// caller adds.
func (d *Decoded) decodeLimit(g *limitFields, corrupt func(attr, name, reason string)) (l limit.Limit, ok, quota bool) {
	stem := g.stem()
	bad := func(reason string) (limit.Limit, bool, bool) {
		if g.hidden {
			corrupt(g.attr(schema.LimitCapacity), g.name, "limit "+strconv.Quote(g.name)+" under the hidden w_ prefix is corrupt: "+reason+" (ADR-142)")
		} else {
			d.problem(stem, "corrupt limit: "+reason+"; skipped")
		}
		return limit.Limit{}, false, false
	}
	cpV, hasCP := g.fields[schema.LimitCapacity]
	if !hasCP {
		for _, f := range []schema.LimitField{schema.LimitRefillAmount, schema.LimitRefillPeriod, schema.LimitSoft, schema.LimitResetAfter} {
			if _, has := g.fields[f]; has {
				d.problem(stem, "limit fields without "+stem+"cp: not a limit, ignored")
				break
			}
		}
		return limit.Limit{}, false, false
	}
	raV, hasRA := g.fields[schema.LimitRefillAmount]
	rpV, hasRP := g.fields[schema.LimitRefillPeriod]
	if !hasRA || !hasRP {
		return bad("cp, ra and rp must all be present")
	}
	if err := schema.ValidateLimitName(g.name); err != nil {
		return bad(err.Error())
	}
	cp, okCP := parseN(cpV)
	ra, okRA := parseN(raV)
	rp, okRP := parseN(rpV)
	switch {
	case !okCP || !okRA || !okRP:
		return bad("cp, ra and rp must be N attributes holding int64 integers")
	case cp <= 0 || ra < 0 || rp <= 0:
		return bad("cp and rp must be > 0 and ra >= 0")
	case cp > limit.MaxTokens || ra > limit.MaxTokens || rp > int64(limit.MaxRefillPeriod/time.Second):
		return bad("value out of range")
	}
	l = limit.Custom(g.name, cp, ra, time.Duration(rp)*time.Second)
	quota = ra == 0 // valid only with its reset, which the caller checks
	if sv, has := g.fields[schema.LimitSoft]; has {
		switch b, isBool := sv.(*types.AttributeValueMemberBOOL); {
		case isBool && b.Value:
			l.Soft = true
		case isBool:
		default:
			d.problem(stem+string(schema.LimitSoft), "soft must be BOOL; read as hard")
		}
	}
	if quota {
		return l, true, true
	}
	if err := l.Validate(); err != nil { // unreachable by the checks above; belt and braces
		return bad(err.Error())
	}
	return l, true, false
}

func (d *Decoded) decodeDisabled(level Level, v types.AttributeValue) Access {
	if level == LevelSystem {
		d.problem(schema.AttrDisabled, "not allowed on the system level; ignored")
		return AccessInherit
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return AccessDisabled
		}
		return AccessEnforce
	case *types.AttributeValueMemberS:
		if v.Value == bypassValue {
			return AccessBypass
		}
	case *types.AttributeValueMemberNULL:
		return AccessInherit
	}
	d.problem(schema.AttrDisabled, "must be BOOL or S \"bypass\"; read as absent")
	return AccessInherit
}

func (d *Decoded) decodeCascade(level Level, v types.AttributeValue) CascadePolicy {
	if level == LevelSystem {
		d.problem(schema.AttrCascade, "not allowed on the system level; ignored")
		return CascadeUnset
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return CascadeOn
		}
		return CascadeOff
	case *types.AttributeValueMemberNULL:
		return CascadeUnset
	}
	d.problem(schema.AttrCascade, "must be BOOL; read as absent")
	return CascadeUnset
}

func (d *Decoded) decodeOnUnavailable(level Level, v types.AttributeValue) OnUnavailable {
	if level != LevelSystem {
		d.problem(schema.AttrOnUnavailable, "only allowed on the system level; ignored")
		return ""
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if o := OnUnavailable(v.Value); o.Valid() {
			return o
		}
	case *types.AttributeValueMemberNULL:
		return ""
	}
	d.problem(schema.AttrOnUnavailable, "must be S allow or block; read as absent")
	return ""
}

// isPatchAttr reports whether a is `p_{n}_sched`.
func isPatchAttr(a string) bool {
	const suffix = "_" + string(schema.LimitSchedule)
	return strings.HasPrefix(a, PatchAttrPrefix) && strings.HasSuffix(a, suffix) &&
		len(a) > len(PatchAttrPrefix)+len(suffix)
}

// isLimitAttr reports whether a belongs to a config item's limit set: any
// `l_{n}_{f}` or `w_{n}_{f}`, whether or not this version understands f.
// Setters replace all of them.
func isLimitAttr(a string) bool {
	_, _, _, ok := schema.ParseConfigAttr(a)
	return ok
}

// parseN parses an N attribute holding a base-10 int64.
func parseN(v types.AttributeValue) (int64, bool) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	return i, err == nil
}

// getS returns the value of an S attribute.
func getS(item map[string]types.AttributeValue, name string) (string, bool) {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value, true
	}
	return "", false
}

// itemKey returns the primary key of an item, as far as it has one.
func itemKey(item map[string]types.AttributeValue) schema.Key {
	pk, _ := getS(item, schema.AttrPK)
	sk, _ := getS(item, schema.AttrSK)
	return schema.Key{PK: pk, SK: sk}
}
