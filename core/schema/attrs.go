package schema

import (
	"strconv"
	"strings"
)

// Fixed attribute names of docs/design.md §2 (the key attributes and
// AttrTTL are in table.go). Expressions must still refer to them through
// placeholders (docs/design.md §2).
const (
	// Shared by several records.
	AttrEntityID      = "entity_id"      // R4, R5, R11, R12, R13, R14
	AttrResource      = "resource"       // R5, R6, R11, R12, R13, R14
	AttrCreatedAt     = "created_at"     // R1, R2, R4, R14
	AttrConfigVersion = "config_version" // R5–R7
	AttrCascade       = "cascade"        // R4 (entity default), R5, R6, R11
	AttrDisabled      = "disabled"       // R5, R6 (BOOL or "bypass"), R11 (BOOL true)
	AttrSchedTZ       = "sched_tz"       // R5–R7, R11
	AttrParentID      = "parent_id"      // R4, R11
	AttrPGen          = "pgen"           // R4, R11

	// R1/R2 namespace registry.
	AttrNamespaceID   = "namespace_id"
	AttrNamespaceName = "namespace_name"
	AttrStatus        = "status"
	AttrDeletedAt     = "deleted_at"

	// R3 version record.
	AttrSchemaVersion    = "schema_version"
	AttrLambdaVersion    = "lambda_version"
	AttrClientMinVersion = "client_min_version"
	AttrUpdatedAt        = "updated_at"
	AttrUpdatedBy        = "updated_by"

	// R4 entity metadata.
	AttrName     = "name"
	AttrMetadata = "metadata"
	AttrPinc     = "pinc" // also R14

	// R7 system config.
	AttrOnUnavailable      = "on_unavailable"
	AttrAuditRetentionDays = "audit_retention_days"

	// R8 resource registry.
	AttrResources = "resources"

	// R10 provisioner state.
	AttrManagedSystem    = "managed_system"
	AttrManagedResources = "managed_resources"
	AttrManagedEntities  = "managed_entities"
	AttrLastApplied      = "last_applied"
	AttrAppliedHash      = "applied_hash"

	// R11 bucket identity and denormalised attributes (docs/design.md §2).
	AttrRF         = "rf"
	AttrShardCount = "shard_count"
	AttrBypass     = "bypass"
	AttrVU         = "vu"
	AttrSched      = "sched"
	AttrRSched     = "rsched"
	// AttrRecheck marks a shard whose limits were written without a config
	// read that followed the item's existence (a create, a clone): a
	// deadline, epoch ms, by which a writer that reads config checks them
	// and removes it; vu never passes it (docs/design.md §8, decisions P58).
	AttrRecheck = "recheck"

	// R12 usage snapshot.
	AttrWindow      = "window"
	AttrWindowStart = "window_start"
	AttrTotalEvents = "total_events"

	// R13 audit event.
	AttrEventID   = "event_id"
	AttrTimestamp = "timestamp"
	AttrAction    = "action"
	AttrPrincipal = "principal" // also R14
	AttrDetails   = "details"

	// R14 operation record (docs/design.md §2, §8).
	AttrOperationID = "operation_id"
	AttrOp          = "op"
	AttrLimits      = "limits"
	AttrRequested   = "requested"
	AttrGranted     = "granted"
	AttrShards      = "shards"
)

// Prefixes of per-limit attributes.
const (
	BucketAttrPrefix      = "b_" // bucket: b_{name}_{field}
	LimitAttrPrefix       = "l_" // config item: l_{name}_{field}
	HiddenLimitAttrPrefix = "w_" // config item, reset_after limit (ADR-142): w_{name}_{field}
)

// LimitField is the suffix of a per-limit attribute: `b_{name}_{field}` on a
// bucket, `l_{name}_{field}` or `w_{name}_{field}` on a config item.
type LimitField string

// Per-limit fields (docs/design.md §2 for buckets, docs/design.md §2 for config items). Units on
// a bucket: tk, cp, ra, tc, tu, wtc millitokens; rp milliseconds; ws, wa
// epoch ms; rsa seconds; gc a count; soft an epoch-ms deadline. On a config
// item cp, ra are whole tokens, rp and rsa seconds, soft a BOOL.
const (
	LimitTokens         LimitField = "tk"     // bucket
	LimitCapacity       LimitField = "cp"     // bucket, config
	LimitRefillAmount   LimitField = "ra"     // bucket, config
	LimitRefillPeriod   LimitField = "rp"     // bucket, config
	LimitConsumed       LimitField = "tc"     // bucket
	LimitGrantShards    LimitField = "gc"     // bucket
	LimitTopUp          LimitField = "tu"     // bucket
	LimitWindowStart    LimitField = "ws"     // bucket
	LimitResetAfter     LimitField = "rsa"    // bucket, config
	LimitWindowAnchor   LimitField = "wa"     // bucket
	LimitWindowConsumed LimitField = "wtc"    // bucket
	LimitSchedule       LimitField = "sched"  // bucket, config
	LimitResetSchedule  LimitField = "rsched" // bucket, config
	LimitSoft           LimitField = "soft"   // bucket, config
)

// IsBucketField reports whether f is one of the bucket fields of docs/design.md §2.
func IsBucketField(f LimitField) bool {
	switch f {
	case LimitTokens, LimitCapacity, LimitRefillAmount, LimitRefillPeriod, LimitConsumed,
		LimitGrantShards, LimitTopUp, LimitWindowStart, LimitResetAfter, LimitWindowAnchor,
		LimitWindowConsumed, LimitSchedule, LimitResetSchedule, LimitSoft:
		return true
	}
	return false
}

// IsConfigField reports whether f is one of the config-item fields of
// docs/design.md §2: cp, ra, rp, rsa, sched, rsched, soft.
func IsConfigField(f LimitField) bool {
	switch f {
	case LimitCapacity, LimitRefillAmount, LimitRefillPeriod, LimitResetAfter,
		LimitSchedule, LimitResetSchedule, LimitSoft:
		return true
	}
	return false
}

// BucketAttr returns the bucket attribute `b_{limit}_{field}`.
func BucketAttr(limit string, f LimitField) string {
	return BucketAttrPrefix + limit + "_" + string(f)
}

// ParseBucketAttr splits a bucket attribute name `b_{limit}_{field}` at its
// last `_` (limit names may contain `_`). ok is false unless attr has the
// prefix, a non-empty limit and a non-empty field, neither containing `#`.
// The field is not checked against the known ones (use IsBucketField):
// attributes this implementation does not understand must still be
// recognised and preserved.
func ParseBucketAttr(attr string) (limit string, f LimitField, ok bool) {
	if !strings.HasPrefix(attr, BucketAttrPrefix) {
		return "", "", false
	}
	return splitLimitAttr(attr[len(BucketAttrPrefix):])
}

// ConfigAttr returns the config-item attribute `l_{limit}_{field}`.
func ConfigAttr(limit string, f LimitField) string {
	return LimitAttrPrefix + limit + "_" + string(f)
}

// HiddenConfigAttr returns the config-item attribute `w_{limit}_{field}`
// used for reset_after (session) limits (ADR-142).
func HiddenConfigAttr(limit string, f LimitField) string {
	return HiddenLimitAttrPrefix + limit + "_" + string(f)
}

// ParseConfigAttr splits a config-item attribute `l_{limit}_{field}` or
// `w_{limit}_{field}` at its last `_`; hidden reports the `w_` form. The
// rules for ok are those of ParseBucketAttr.
func ParseConfigAttr(attr string) (limit string, f LimitField, hidden, ok bool) {
	switch {
	case strings.HasPrefix(attr, LimitAttrPrefix):
	case strings.HasPrefix(attr, HiddenLimitAttrPrefix):
		hidden = true
	default:
		return "", "", false, false
	}
	limit, f, ok = splitLimitAttr(attr[2:])
	if !ok {
		return "", "", false, false
	}
	return limit, f, hidden, true
}

func splitLimitAttr(rest string) (limit string, f LimitField, ok bool) {
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || i == len(rest)-1 || strings.IndexByte(rest, '#') >= 0 {
		return "", "", false
	}
	return rest[:i], LimitField(rest[i+1:]), true
}

// Usage-snapshot bookkeeping attributes (docs/design.md §2, §6). Both
// contain `#`, which no limit name can, so they never collide with a limit
// counter.
const (
	// OverdrawSuffix ends the N attribute `{limit}#od` counting records in
	// which a soft limit was overdrawn.
	OverdrawSuffix = "#od"
	// SeqAttrPrefix starts the S attribute `seq#{shard}`, the high-water
	// mark of applied stream sequence numbers from one bucket shard.
	SeqAttrPrefix = "seq#"
	// SequenceNumberWidth is the zero-padded width of stored sequence
	// numbers, which makes lexical order numeric order.
	SequenceNumberWidth = 40
)

// OverdrawAttr returns `{limit}#od`.
func OverdrawAttr(limit string) string { return limit + OverdrawSuffix }

// ParseOverdrawAttr returns the limit of an attribute `{limit}#od`; ok is
// false unless limit is non-empty and free of `#`.
func ParseOverdrawAttr(attr string) (limit string, ok bool) {
	if !strings.HasSuffix(attr, OverdrawSuffix) {
		return "", false
	}
	limit = attr[:len(attr)-len(OverdrawSuffix)]
	if limit == "" || strings.IndexByte(limit, '#') >= 0 {
		return "", false
	}
	return limit, true
}

// SeqAttr returns `seq#{shard}`. It panics if shard is negative.
func SeqAttr(shard int) string {
	if shard < 0 {
		panic("schema: negative shard " + strconv.Itoa(shard))
	}
	return SeqAttrPrefix + strconv.Itoa(shard)
}

// ParseSeqAttr returns the shard of an attribute `seq#{shard}`; the shard
// must be canonical (see ParseShard).
func ParseSeqAttr(attr string) (shard int, ok bool) {
	if !strings.HasPrefix(attr, SeqAttrPrefix) {
		return 0, false
	}
	return parseShard(attr[len(SeqAttrPrefix):])
}

// PadSequenceNumber left-pads a DynamoDB Streams sequence number (decimal
// digits) with zeros to SequenceNumberWidth, so stored high-water marks
// compare lexically in numeric order. It rejects an empty value, a
// non-digit and a value longer than SequenceNumberWidth.
func PadSequenceNumber(seq string) (string, error) {
	const shape = "1 to 40 decimal digits"
	if seq == "" || len(seq) > SequenceNumberWidth {
		return "", keyErr(seq, shape, "wrong length")
	}
	for i := 0; i < len(seq); i++ {
		if seq[i] < '0' || seq[i] > '9' {
			return "", keyErr(seq, shape, "not a decimal digit")
		}
	}
	if len(seq) == SequenceNumberWidth {
		return seq, nil
	}
	var b strings.Builder
	b.Grow(SequenceNumberWidth)
	for i := len(seq); i < SequenceNumberWidth; i++ {
		b.WriteByte('0')
	}
	b.WriteString(seq)
	return b.String(), nil
}
