package schema

import (
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key segments of docs/design.md §2. A partition key is `{ns}/` followed by one of
// the PK prefixes; `#` separates the components after it.
const (
	// TableSystemPK is the partition of the table-level records R1–R3.
	TableSystemPK = ReservedNamespace + "/" + PrefixSystem

	PrefixEntity       = "ENTITY#"        // {ns}/ENTITY#{id}: R4, R5, R12, R14; GSI3PK of R11
	PrefixResource     = "RESOURCE#"      // {ns}/RESOURCE#{resource}: R6; GSI2PK of R11, R12
	PrefixSystem       = "SYSTEM#"        // {ns}/SYSTEM#: R7–R10
	PrefixProvisioner  = "PROVISIONER#"   // {ns}/PROVISIONER#: the provisioner's owner records and claims
	PrefixBucket       = "BUCKET#"        // {ns}/BUCKET#{entity}#{resource}#{shard}: R11; GSI2/3/4 SKs of R11
	PrefixAudit        = "AUDIT#"         // {ns}/AUDIT#{entity}: R13
	PrefixParent       = "PARENT#"        // GSI1PK {ns}/PARENT#{parent}
	PrefixChild        = "CHILD#"         // GSI1SK CHILD#{id}
	PrefixEntityConfig = "ENTITY_CONFIG#" // GSI3PK {ns}/ENTITY_CONFIG#{resource}
	PrefixUsage        = "USAGE#"         // GSI2SK USAGE#{window_key}#{id}

	SKNamespacePrefix       = "#NAMESPACE#"              // R1: #NAMESPACE#{name}
	SKNSIDPrefix            = "#NSID#"                   // R2: #NSID#{ns}
	SKVersion               = "#VERSION"                 // R3
	SKMeta                  = "#META"                    // R4
	SKConfigPrefix          = "#CONFIG#"                 // R5: #CONFIG#{resource}
	SKConfig                = "#CONFIG"                  // R6, R7
	SKResources             = "#RESOURCES"               // R8
	SKEntityConfigResources = "#ENTITY_CONFIG_RESOURCES" // R9
	SKProvisioner           = "#PROVISIONER"             // R10
	SKState                 = "#STATE"                   // R11
	SKUsagePrefix           = "#USAGE#"                  // R12: #USAGE#{resource}#{window_key}
	SKAuditPrefix           = "#AUDIT#"                  // R13: #AUDIT#{event_id}
	SKOperationPrefix       = "#OP#"                     // R14: #OP#{pinc}#{operation_id}
	SKOwnerPrefix           = "#OWNER#"                  // provisioner owner record: #OWNER#{owner}
	SKClaimPrefix           = "#CLAIM#"                  // provisioner claim: #CLAIM#{target}
)

// Shapes named by KeyError.Shape.
const (
	ShapeNamespaced = "{ns}/..."
	ShapeBucketPK   = "{ns}/BUCKET#{entity}#{resource}#{shard}"
	ShapeEntityPK   = "{ns}/ENTITY#{id}"
	ShapeAuditPK    = "{ns}/AUDIT#{entity}"
	ShapeResourcePK = "{ns}/RESOURCE#{resource}"
	ShapeSystemPK   = "{ns}/SYSTEM#"
	ShapeConfigSK   = "#CONFIG#{resource}"
	ShapeUsageSK    = "#USAGE#{resource}#{window_key}"
	ShapeAuditSK    = "#AUDIT#{event_id}"
	ShapeOpSK       = "#OP#{pinc}#{operation_id}"
	ShapeShard      = "non-negative decimal without leading zeros"
)

// Key is a primary key of the table.
type Key struct {
	PK string
	SK string
}

// IsZero reports whether k is the zero Key. ItemKeys uses the zero Key for
// an index the record does not write.
func (k Key) IsZero() bool { return k.PK == "" && k.SK == "" }

// AttributeValues returns k as the Key of a GetItem, DeleteItem or
// UpdateItem request.
func (k Key) AttributeValues() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: k.PK},
		AttrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

// RecordKind names a record of the catalogue of docs/design.md §2. Its numeric value
// is the record's R-number; KindUnknown (0) is every other shape, including
// the legacy `#LIMIT#`, `#RESOURCE#` and `#BUCKET#` sort keys, which readers
// must ignore.
type RecordKind uint8

// Record kinds, R1–R14.
const (
	KindUnknown              RecordKind = iota
	KindNamespaceForward                // R1  _/SYSTEM#        #NAMESPACE#{name}
	KindNamespaceReverse                // R2  _/SYSTEM#        #NSID#{ns}
	KindVersion                         // R3  _/SYSTEM#        #VERSION
	KindEntityMeta                      // R4  {ns}/ENTITY#{id} #META
	KindEntityConfig                    // R5  {ns}/ENTITY#{id} #CONFIG#{resource}
	KindResourceConfig                  // R6  {ns}/RESOURCE#{r} #CONFIG
	KindSystemConfig                    // R7  {ns}/SYSTEM#     #CONFIG
	KindResourceRegistry                // R8  {ns}/SYSTEM#     #RESOURCES
	KindEntityConfigRegistry            // R9  {ns}/SYSTEM#     #ENTITY_CONFIG_RESOURCES
	KindProvisionerState                // R10 {ns}/SYSTEM#     #PROVISIONER
	KindBucket                          // R11 {ns}/BUCKET#{e}#{r}#{shard} #STATE
	KindUsageSnapshot                   // R12 {ns}/ENTITY#{id} #USAGE#{r}#{window_key}
	KindAudit                           // R13 {ns}/AUDIT#{e}   #AUDIT#{event_id}
	KindOperation                       // R14 {ns}/ENTITY#{id} #OP#{pinc}#{operation_id}
)

var kindNames = [...]string{
	"unknown", "namespace-forward", "namespace-reverse", "version", "entity-meta",
	"entity-config", "resource-config", "system-config", "resource-registry",
	"entity-config-registry", "provisioner-state", "bucket", "usage-snapshot",
	"audit", "operation",
}

// String returns a short lower-case name, e.g. "bucket".
func (k RecordKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "RecordKind(" + strconv.Itoa(int(k)) + ")"
}

// ItemKeys are the key attributes one record writes: its primary key and,
// per docs/design.md §2, the GSI keys it populates. A zero GSI Key means the record
// does not write that index.
type ItemKeys struct {
	Kind RecordKind
	Key  Key
	GSI1 Key // GSI1PK, GSI1SK
	GSI2 Key // GSI2PK, GSI2SK
	GSI3 Key // GSI3PK, GSI3SK
	GSI4 Key // GSI4PK, GSI4SK
}

// AddTo sets every key attribute of k (PK, SK and the non-zero GSI keys)
// in item, as strings.
func (k ItemKeys) AddTo(item map[string]types.AttributeValue) {
	set := func(name, v string) { item[name] = &types.AttributeValueMemberS{Value: v} }
	set(AttrPK, k.Key.PK)
	set(AttrSK, k.Key.SK)
	if !k.GSI1.IsZero() {
		set(AttrGSI1PK, k.GSI1.PK)
		set(AttrGSI1SK, k.GSI1.SK)
	}
	if !k.GSI2.IsZero() {
		set(AttrGSI2PK, k.GSI2.PK)
		set(AttrGSI2SK, k.GSI2.SK)
	}
	if !k.GSI3.IsZero() {
		set(AttrGSI3PK, k.GSI3.PK)
		set(AttrGSI3SK, k.GSI3.SK)
	}
	if !k.GSI4.IsZero() {
		set(AttrGSI4PK, k.GSI4.PK)
		set(AttrGSI4SK, k.GSI4.SK)
	}
}

// Item returns a new item holding only the key attributes of k.
func (k ItemKeys) Item() map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, 10)
	k.AddTo(item)
	return item
}

// ---------------------------------------------------------------------------
// Partition keys and index key values. Inputs are assumed valid (docs/design.md §2); the
// builders do not check them.

// EntityPK returns `{ns}/ENTITY#{id}`, the partition of an entity's META,
// configs, usage snapshots and operation records, and the GSI3PK of its
// buckets.
func EntityPK(ns, id string) string { return ns + "/" + PrefixEntity + id }

// ResourcePK returns `{ns}/RESOURCE#{resource}`, the partition of a resource
// config and the GSI2PK of the resource's buckets and snapshots.
func ResourcePK(ns, resource string) string { return ns + "/" + PrefixResource + resource }

// SystemPK returns `{ns}/SYSTEM#`, the partition of R7–R10.
func SystemPK(ns string) string { return ns + "/" + PrefixSystem }

// AuditPK returns `{ns}/AUDIT#{entity}`. For config-level events entity is
// `$SYSTEM` or `$RESOURCE:{resource}` (ADR-106).
func AuditPK(ns, entity string) string { return ns + "/" + PrefixAudit + entity }

// BucketPK returns `{ns}/BUCKET#{entity}#{resource}#{shard}` with a single
// allocation. It panics if shard is negative.
func BucketPK(ns, entity, resource string, shard int) string {
	return withShard(ns, "/"+PrefixBucket, entity, "#", resource, shard)
}

// ParentGSI1PK returns the GSI1PK of a child's META, `{ns}/PARENT#{parent}`;
// query it to list the children of parent.
func ParentGSI1PK(ns, parent string) string { return ns + "/" + PrefixParent + parent }

// ChildGSI1SK returns the GSI1SK of a child's META, `CHILD#{id}`.
func ChildGSI1SK(id string) string { return PrefixChild + id }

// BucketGSI2SK returns a bucket's GSI2SK, `BUCKET#{entity}#{shard}`. It
// panics if shard is negative.
func BucketGSI2SK(entity string, shard int) string {
	return withShard(PrefixBucket, entity, "", "", "", shard)
}

// UsageGSI2SK returns a usage snapshot's GSI2SK, `USAGE#{window_key}#{id}`.
func UsageGSI2SK(windowKey, id string) string { return PrefixUsage + windowKey + "#" + id }

// EntityConfigGSI3PK returns an entity config's GSI3PK,
// `{ns}/ENTITY_CONFIG#{resource}`; query it to list the entities with
// custom limits for resource.
func EntityConfigGSI3PK(ns, resource string) string {
	return ns + "/" + PrefixEntityConfig + resource
}

// BucketGSI3SK returns a bucket's GSI3SK, `BUCKET#{resource}#{shard}`. It
// panics if shard is negative.
func BucketGSI3SK(resource string, shard int) string {
	return withShard(PrefixBucket, resource, "", "", "", shard)
}

// BucketGSI3SKPrefix returns `BUCKET#{resource}#`, the begins_with operand
// that selects one resource's buckets of an entity on GSI3.
func BucketGSI3SKPrefix(resource string) string { return PrefixBucket + resource + "#" }

// BucketGSI4SK returns a bucket's GSI4SK,
// `BUCKET#{entity}#{resource}#{shard}` (its PK without `{ns}/`). It panics
// if shard is negative.
func BucketGSI4SK(entity, resource string, shard int) string {
	return withShard(PrefixBucket, entity, "#", resource, "", shard)
}

// withShard returns a+b+c+d+e+"#"+decimal(shard) with one allocation.
func withShard(a, b, c, d, e string, shard int) string {
	if shard < 0 {
		panic("schema: negative shard " + strconv.Itoa(shard))
	}
	var digits [20]byte
	ds := strconv.AppendInt(digits[:0], int64(shard), 10)
	var sb strings.Builder
	sb.Grow(len(a) + len(b) + len(c) + len(d) + len(e) + 1 + len(ds))
	sb.WriteString(a)
	sb.WriteString(b)
	sb.WriteString(c)
	sb.WriteString(d)
	sb.WriteString(e)
	sb.WriteByte('#')
	sb.Write(ds)
	return sb.String()
}

// ---------------------------------------------------------------------------
// Primary keys, one per record.

// NamespaceForwardKey is the key of R1, `_/SYSTEM#` / `#NAMESPACE#{name}`.
func NamespaceForwardKey(name string) Key {
	return Key{TableSystemPK, SKNamespacePrefix + name}
}

// NamespaceReverseKey is the key of R2, `_/SYSTEM#` / `#NSID#{ns}`.
func NamespaceReverseKey(ns string) Key { return Key{TableSystemPK, SKNSIDPrefix + ns} }

// VersionKey is the key of R3, `_/SYSTEM#` / `#VERSION`.
func VersionKey() Key { return Key{TableSystemPK, SKVersion} }

// EntityMetaKey is the key of R4, `{ns}/ENTITY#{id}` / `#META`.
func EntityMetaKey(ns, id string) Key { return Key{EntityPK(ns, id), SKMeta} }

// EntityConfigKey is the key of R5, `{ns}/ENTITY#{id}` / `#CONFIG#{resource}`;
// resource may be DefaultResource.
func EntityConfigKey(ns, id, resource string) Key {
	return Key{EntityPK(ns, id), SKConfigPrefix + resource}
}

// ResourceConfigKey is the key of R6, `{ns}/RESOURCE#{resource}` / `#CONFIG`.
func ResourceConfigKey(ns, resource string) Key { return Key{ResourcePK(ns, resource), SKConfig} }

// SystemConfigKey is the key of R7, `{ns}/SYSTEM#` / `#CONFIG`.
func SystemConfigKey(ns string) Key { return Key{SystemPK(ns), SKConfig} }

// ResourceRegistryKey is the key of R8, `{ns}/SYSTEM#` / `#RESOURCES`.
func ResourceRegistryKey(ns string) Key { return Key{SystemPK(ns), SKResources} }

// EntityConfigRegistryKey is the key of R9, `{ns}/SYSTEM#` /
// `#ENTITY_CONFIG_RESOURCES`.
func EntityConfigRegistryKey(ns string) Key { return Key{SystemPK(ns), SKEntityConfigResources} }

// ProvisionerStateKey is the key of R10, `{ns}/SYSTEM#` / `#PROVISIONER`.
func ProvisionerStateKey(ns string) Key { return Key{SystemPK(ns), SKProvisioner} }

// ProvisionerPK returns `{ns}/PROVISIONER#`, the partition of the
// provisioner's owner records and claims (docs/design.md §12). Readers of
// config and buckets never look there; ClassifyKey reports KindUnknown.
func ProvisionerPK(ns string) string { return ns + "/" + PrefixProvisioner }

// ProvisionerOwnerKey is the key of a provisioner owner record,
// `{ns}/PROVISIONER#` / `#OWNER#{owner}`.
func ProvisionerOwnerKey(ns, owner string) Key {
	return Key{ProvisionerPK(ns), SKOwnerPrefix + owner}
}

// ProvisionerClaimKey is the key of a provisioner claim on one config
// target, `{ns}/PROVISIONER#` / `#CLAIM#{target}`.
func ProvisionerClaimKey(ns, target string) Key {
	return Key{ProvisionerPK(ns), SKClaimPrefix + target}
}

// ProvisionerItemKeys returns the keys of an owner record or a claim: k
// with GSI4 (`{ns}`, `{ns}/PROVISIONER#`), so a namespace purge removes
// them.
func ProvisionerItemKeys(ns string, k Key) ItemKeys {
	return ItemKeys{Key: k, GSI4: gsi4(ns, k)}
}

// BucketKey is the key of R11, `{ns}/BUCKET#{entity}#{resource}#{shard}` /
// `#STATE`. It allocates once (the PK) and panics if shard is negative.
func BucketKey(ns, entity, resource string, shard int) Key {
	return Key{BucketPK(ns, entity, resource, shard), SKState}
}

// UsageKey is the key of R12, `{ns}/ENTITY#{id}` /
// `#USAGE#{resource}#{window_key}`.
func UsageKey(ns, id, resource, windowKey string) Key {
	return Key{EntityPK(ns, id), SKUsagePrefix + resource + "#" + windowKey}
}

// AuditKey is the key of R13, `{ns}/AUDIT#{entity}` / `#AUDIT#{event_id}`.
func AuditKey(ns, entity, eventID string) Key {
	return Key{AuditPK(ns, entity), SKAuditPrefix + eventID}
}

// OperationKey is the key of R14, `{ns}/ENTITY#{id}` /
// `#OP#{pinc}#{operation_id}`.
func OperationKey(ns, id, pinc, operationID string) Key {
	return Key{EntityPK(ns, id), SKOperationPrefix + pinc + "#" + operationID}
}

// ---------------------------------------------------------------------------
// Item keys: primary key plus the GSI keys of docs/design.md §2.

// gsi4 is the GSI4 entry most records write: GSI4PK = {ns}, GSI4SK = PK.
func gsi4(ns string, k Key) Key { return Key{ns, k.PK} }

// NamespaceForwardItemKeys returns the keys of R1; GSI4 is (`_`, `_/SYSTEM#`).
func NamespaceForwardItemKeys(name string) ItemKeys {
	k := NamespaceForwardKey(name)
	return ItemKeys{Kind: KindNamespaceForward, Key: k, GSI4: gsi4(ReservedNamespace, k)}
}

// NamespaceReverseItemKeys returns the keys of R2; GSI4 is (`_`, `_/SYSTEM#`).
func NamespaceReverseItemKeys(ns string) ItemKeys {
	k := NamespaceReverseKey(ns)
	return ItemKeys{Kind: KindNamespaceReverse, Key: k, GSI4: gsi4(ReservedNamespace, k)}
}

// VersionItemKeys returns the keys of R3; GSI4 is (`_`, `_/SYSTEM#`).
func VersionItemKeys() ItemKeys {
	k := VersionKey()
	return ItemKeys{Kind: KindVersion, Key: k, GSI4: gsi4(ReservedNamespace, k)}
}

// EntityMetaItemKeys returns the keys of R4. A child (parent != "") also
// writes GSI1 = (`{ns}/PARENT#{parent}`, `CHILD#{id}`); a root does not.
func EntityMetaItemKeys(ns, id, parent string) ItemKeys {
	k := EntityMetaKey(ns, id)
	ik := ItemKeys{Kind: KindEntityMeta, Key: k, GSI4: gsi4(ns, k)}
	if parent != "" {
		ik.GSI1 = Key{ParentGSI1PK(ns, parent), ChildGSI1SK(id)}
	}
	return ik
}

// EntityConfigItemKeys returns the keys of R5, with
// GSI3 = (`{ns}/ENTITY_CONFIG#{resource}`, `{id}`).
func EntityConfigItemKeys(ns, id, resource string) ItemKeys {
	k := EntityConfigKey(ns, id, resource)
	return ItemKeys{
		Kind: KindEntityConfig, Key: k,
		GSI3: Key{EntityConfigGSI3PK(ns, resource), id},
		GSI4: gsi4(ns, k),
	}
}

// ResourceConfigItemKeys returns the keys of R6.
func ResourceConfigItemKeys(ns, resource string) ItemKeys {
	k := ResourceConfigKey(ns, resource)
	return ItemKeys{Kind: KindResourceConfig, Key: k, GSI4: gsi4(ns, k)}
}

// SystemConfigItemKeys returns the keys of R7.
func SystemConfigItemKeys(ns string) ItemKeys {
	k := SystemConfigKey(ns)
	return ItemKeys{Kind: KindSystemConfig, Key: k, GSI4: gsi4(ns, k)}
}

// ResourceRegistryItemKeys returns the keys of R8 (written with
// if_not_exists by the registry's updates).
func ResourceRegistryItemKeys(ns string) ItemKeys {
	k := ResourceRegistryKey(ns)
	return ItemKeys{Kind: KindResourceRegistry, Key: k, GSI4: gsi4(ns, k)}
}

// EntityConfigRegistryItemKeys returns the keys of R9 (written with
// if_not_exists by the registry's updates).
func EntityConfigRegistryItemKeys(ns string) ItemKeys {
	k := EntityConfigRegistryKey(ns)
	return ItemKeys{Kind: KindEntityConfigRegistry, Key: k, GSI4: gsi4(ns, k)}
}

// ProvisionerStateItemKeys returns the keys of R10. Unlike upstream, which
// omits GSI4SK, both GSI4PK = `{ns}` and GSI4SK = `{ns}/SYSTEM#` are set so
// namespace purge finds the record (docs/compatibility.md C2).
func ProvisionerStateItemKeys(ns string) ItemKeys {
	k := ProvisionerStateKey(ns)
	return ItemKeys{Kind: KindProvisionerState, Key: k, GSI4: gsi4(ns, k)}
}

// BucketItemKeys returns the keys of R11:
// GSI2 = (`{ns}/RESOURCE#{resource}`, `BUCKET#{entity}#{shard}`),
// GSI3 = (`{ns}/ENTITY#{entity}`, `BUCKET#{resource}#{shard}`),
// GSI4 = (`{ns}`, `BUCKET#{entity}#{resource}#{shard}`).
// It panics if shard is negative.
func BucketItemKeys(ns, entity, resource string, shard int) ItemKeys {
	k := BucketKey(ns, entity, resource, shard)
	return ItemKeys{
		Kind: KindBucket, Key: k,
		GSI2: Key{ResourcePK(ns, resource), BucketGSI2SK(entity, shard)},
		GSI3: Key{EntityPK(ns, entity), BucketGSI3SK(resource, shard)},
		GSI4: Key{ns, k.PK[len(ns)+1:]}, // the PK without "{ns}/": no copy
	}
}

// UsageItemKeys returns the keys of R12:
// GSI2 = (`{ns}/RESOURCE#{resource}`, `USAGE#{window_key}#{id}`),
// GSI4 = (`{ns}`, `{ns}/ENTITY#{id}`).
func UsageItemKeys(ns, id, resource, windowKey string) ItemKeys {
	k := UsageKey(ns, id, resource, windowKey)
	return ItemKeys{
		Kind: KindUsageSnapshot, Key: k,
		GSI2: Key{ResourcePK(ns, resource), UsageGSI2SK(windowKey, id)},
		GSI4: gsi4(ns, k),
	}
}

// AuditItemKeys returns the keys of R13.
func AuditItemKeys(ns, entity, eventID string) ItemKeys {
	k := AuditKey(ns, entity, eventID)
	return ItemKeys{Kind: KindAudit, Key: k, GSI4: gsi4(ns, k)}
}

// OperationItemKeys returns the keys of R14.
func OperationItemKeys(ns, id, pinc, operationID string) ItemKeys {
	k := OperationKey(ns, id, pinc, operationID)
	return ItemKeys{Kind: KindOperation, Key: k, GSI4: gsi4(ns, k)}
}

// ---------------------------------------------------------------------------
// Parsers. They check shape, not character sets: a component is non-empty
// and free of `#`, a namespace id is free of `/` and `#` and is not the
// reserved `_` (which holds only R1–R3), and a shard is canonical decimal.
// Whatever they accept rebuilds to the same string. Success never allocates.

// BucketID identifies a bucket (R11).
type BucketID struct {
	Namespace string
	Entity    string
	Resource  string
	Shard     int
}

// PK returns the bucket's partition key.
func (b BucketID) PK() string { return BucketPK(b.Namespace, b.Entity, b.Resource, b.Shard) }

// AppendPK appends the bucket's partition key (PK) to dst and returns
// the extended slice: a caller that builds several strings at once keeps
// them in one allocation.
func (b BucketID) AppendPK(dst []byte) []byte {
	if b.Shard < 0 {
		panic("schema: negative shard " + strconv.Itoa(b.Shard))
	}
	dst = append(dst, b.Namespace...)
	dst = append(dst, '/')
	dst = append(dst, PrefixBucket...)
	dst = append(dst, b.Entity...)
	dst = append(dst, '#')
	dst = append(dst, b.Resource...)
	dst = append(dst, '#')
	return strconv.AppendInt(dst, int64(b.Shard), 10)
}

// Key returns the bucket's primary key.
func (b BucketID) Key() Key { return Key{b.PK(), SKState} }

// ParseNamespace splits a namespaced key at its first `/` into the namespace
// id and the rest. The namespace must be non-empty and free of `#`; the
// reserved namespace `_` is returned like any other.
func ParseNamespace(key string) (ns, rest string, err error) {
	ns, rest, why := cutNamespace(key)
	if why != "" {
		return "", "", keyErr(key, ShapeNamespaced, why)
	}
	return ns, rest, nil
}

func cutNamespace(key string) (ns, rest, why string) {
	i := strings.IndexByte(key, '/')
	switch {
	case i < 0:
		return "", "", "no '/' after a namespace"
	case i == 0:
		return "", "", "empty namespace"
	case strings.IndexByte(key[:i], '#') >= 0:
		return "", "", "namespace contains '#'"
	}
	return key[:i], key[i+1:], ""
}

// cutUserNS returns the namespace and what follows prefix in a key that must
// belong to a user namespace (not `_`) and continue with prefix.
func cutUserNS(key, prefix string) (ns, rest, why string) {
	ns, rest, why = cutNamespace(key)
	switch {
	case why != "":
		return "", "", why
	case ns == ReservedNamespace:
		return "", "", "the reserved namespace '_' holds only table-level records"
	case !strings.HasPrefix(rest, prefix):
		return "", "", "wrong record prefix after the namespace"
	}
	return ns, rest[len(prefix):], ""
}

// Reasons of component failures.
const (
	whyEmpty   = "empty component"
	whyHash    = "component contains '#'"
	whyDefault = "_default_ is never a bucket or resource-config resource"
	whyPrefix  = "wrong prefix"
)

// checkComponent returns why s is not a valid key component (non-empty,
// free of `#`), or "".
func checkComponent(s string) string {
	if s == "" {
		return whyEmpty
	}
	if strings.IndexByte(s, '#') >= 0 {
		return whyHash
	}
	return ""
}

// checkResource is checkComponent plus the ban on `_default_`, for places
// where only real resources appear (buckets, resource configs, snapshots).
func checkResource(s string) string {
	if why := checkComponent(s); why != "" {
		return why
	}
	if s == DefaultResource {
		return whyDefault
	}
	return ""
}

// cutComponent parses prefix + one component.
func cutComponent(s, prefix string) (c, why string) {
	if !strings.HasPrefix(s, prefix) {
		return "", whyPrefix
	}
	c = s[len(prefix):]
	return c, checkComponent(c)
}

// cutPair parses prefix + a + "#" + b with a and b valid components.
func cutPair(s, prefix string) (a, b, why string) {
	if !strings.HasPrefix(s, prefix) {
		return "", "", whyPrefix
	}
	rest := s[len(prefix):]
	i := strings.IndexByte(rest, '#')
	if i < 0 {
		return "", "", "missing '#' between the two components"
	}
	a, b = rest[:i], rest[i+1:]
	if why = checkComponent(a); why == "" {
		why = checkComponent(b)
	}
	return a, b, why
}

// cutBucket parses the part of a bucket PK after `{ns}/BUCKET#` by the rule
// of docs/design.md §2.
func cutBucket(rest string) (entity, resource string, shard int, why string) {
	first := strings.IndexByte(rest, '#')
	last := strings.LastIndexByte(rest, '#')
	if first < 0 || first == last {
		return "", "", 0, "want entity, resource and shard separated by '#'"
	}
	entity, resource = rest[:first], rest[first+1:last]
	if entity == "" {
		return "", "", 0, "empty entity"
	}
	switch checkResource(resource) {
	case "":
	case whyEmpty:
		return "", "", 0, "empty resource"
	case whyHash:
		return "", "", 0, "resource contains '#'"
	default:
		return "", "", 0, whyDefault
	}
	shard, ok := parseShard(rest[last+1:])
	if !ok {
		return "", "", 0, "shard is not a " + ShapeShard
	}
	return entity, resource, shard, ""
}

// ParseBucketPK parses `{ns}/BUCKET#{entity}#{resource}#{shard}` by the rule
// of docs/design.md §2: the namespace is the text before the first `/`; after
// `BUCKET#`, the shard is the digits after the last `#`, the entity the text
// before the first `#`, and the resource what lies between (it may contain
// `/`). A resource containing `#` or equal to `_default_` (never a bucket
// resource), an empty component, and a shard that is not canonical decimal
// (sign, leading zero, overflow, empty) are errors.
func ParseBucketPK(pk string) (BucketID, error) {
	ns, rest, why := cutUserNS(pk, PrefixBucket)
	if why != "" {
		return BucketID{}, keyErr(pk, ShapeBucketPK, why)
	}
	entity, resource, shard, why := cutBucket(rest)
	if why != "" {
		return BucketID{}, keyErr(pk, ShapeBucketPK, why)
	}
	return BucketID{Namespace: ns, Entity: entity, Resource: resource, Shard: shard}, nil
}

// ParseShard parses a shard number: non-negative decimal without sign or
// leading zeros ("0" itself is fine), fitting an int.
func ParseShard(s string) (int, error) {
	n, ok := parseShard(s)
	if !ok {
		return 0, keyErr(s, ShapeShard, "not a canonical shard number")
	}
	return n, nil
}

func parseShard(s string) (int, bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		d := int(s[i]) - '0'
		if d < 0 || d > 9 || n > (math.MaxInt-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ParseEntityPK parses `{ns}/ENTITY#{id}`.
func ParseEntityPK(pk string) (ns, id string, err error) {
	return parseNamespacedPK(pk, PrefixEntity, ShapeEntityPK, checkComponent)
}

// ParseAuditPK parses `{ns}/AUDIT#{entity}`; entity may be `$SYSTEM` or
// `$RESOURCE:{resource}` for config-level events.
func ParseAuditPK(pk string) (ns, entity string, err error) {
	return parseNamespacedPK(pk, PrefixAudit, ShapeAuditPK, checkComponent)
}

// ParseResourcePK parses `{ns}/RESOURCE#{resource}` (R6's partition and the
// GSI2PK of buckets and snapshots). `_default_` is rejected.
func ParseResourcePK(pk string) (ns, resource string, err error) {
	return parseNamespacedPK(pk, PrefixResource, ShapeResourcePK, checkResource)
}

// parseNamespacedPK parses `{ns}/{prefix}{component}` for a user namespace,
// the component judged by check (a reason, or "").
func parseNamespacedPK(pk, prefix, shape string, check func(string) string) (ns, component string, err error) {
	ns, component, why := cutUserNS(pk, prefix)
	if why == "" {
		why = check(component)
	}
	if why != "" {
		return "", "", keyErr(pk, shape, why)
	}
	return ns, component, nil
}

// ParseSystemPK parses `{ns}/SYSTEM#` for a user namespace.
func ParseSystemPK(pk string) (ns string, err error) {
	ns, rest, why := cutUserNS(pk, PrefixSystem)
	if why == "" && rest != "" {
		why = "text after SYSTEM#"
	}
	if why != "" {
		return "", keyErr(pk, ShapeSystemPK, why)
	}
	return ns, nil
}

// ParseConfigSK parses an entity config sort key `#CONFIG#{resource}` (R5);
// resource may be `_default_`. The bare `#CONFIG` of R6/R7 has no resource
// and is an error here.
func ParseConfigSK(sk string) (resource string, err error) {
	resource, why := cutComponent(sk, SKConfigPrefix)
	if why != "" {
		return "", keyErr(sk, ShapeConfigSK, why)
	}
	return resource, nil
}

// ParseUsageSK parses a usage snapshot sort key
// `#USAGE#{resource}#{window_key}` (R12).
func ParseUsageSK(sk string) (resource, windowKey string, err error) {
	resource, windowKey, why := cutUsage(sk)
	if why != "" {
		return "", "", keyErr(sk, ShapeUsageSK, why)
	}
	return resource, windowKey, nil
}

// cutUsage splits a snapshot SK. The window key is a window start, or a
// window start with the suffix `#hourly` or `#daily` where a coarser window
// keeps the plain key (docs/decisions.md P22).
func cutUsage(sk string) (resource, windowKey, why string) {
	if !strings.HasPrefix(sk, SKUsagePrefix) {
		return "", "", whyPrefix
	}
	resource, windowKey, ok := strings.Cut(sk[len(SKUsagePrefix):], "#")
	if !ok {
		return "", "", "missing '#' between the two components"
	}
	if why = checkResource(resource); why != "" {
		return "", "", why
	}
	start, suffix, suffixed := strings.Cut(windowKey, "#")
	if why = checkComponent(start); why != "" {
		return "", "", why
	}
	if suffixed && suffix != "hourly" && suffix != "daily" {
		return "", "", "window key suffix is not #hourly or #daily"
	}
	return resource, windowKey, ""
}

// ParseAuditSK parses an audit sort key `#AUDIT#{event_id}` (R13).
func ParseAuditSK(sk string) (eventID string, err error) {
	eventID, why := cutComponent(sk, SKAuditPrefix)
	if why != "" {
		return "", keyErr(sk, ShapeAuditSK, why)
	}
	return eventID, nil
}

// ParseOperationSK parses an operation record sort key
// `#OP#{pinc}#{operation_id}` (R14).
func ParseOperationSK(sk string) (pinc, operationID string, err error) {
	pinc, operationID, why := cutPair(sk, SKOperationPrefix)
	if why != "" {
		return "", "", keyErr(sk, ShapeOpSK, why)
	}
	return pinc, operationID, nil
}

// ---------------------------------------------------------------------------
// Classification.

// KeyInfo is what ClassifyKey learns from a primary key. Only the fields of
// the record's kind are set.
type KeyInfo struct {
	Kind RecordKind
	// Namespace is the namespace id of the record; `_` for R1–R3.
	Namespace string
	// NamespaceName is R1's namespace name; NamespaceID is the namespace id
	// R2 describes.
	NamespaceName string
	NamespaceID   string
	// Entity: R4, R5, R11, R12, R14, and R13's audit entity.
	Entity string
	// Resource: R5 (may be `_default_`), R6, R11, R12.
	Resource string
	// Shard: R11.
	Shard int
	// WindowKey: R12.
	WindowKey string
	// EventID: R13.
	EventID string
	// Pinc and OperationID: R14.
	Pinc        string
	OperationID string
}

// Key rebuilds the primary key i was classified from; the zero Key for
// KindUnknown.
func (i KeyInfo) Key() Key {
	switch i.Kind {
	case KindNamespaceForward:
		return NamespaceForwardKey(i.NamespaceName)
	case KindNamespaceReverse:
		return NamespaceReverseKey(i.NamespaceID)
	case KindVersion:
		return VersionKey()
	case KindEntityMeta:
		return EntityMetaKey(i.Namespace, i.Entity)
	case KindEntityConfig:
		return EntityConfigKey(i.Namespace, i.Entity, i.Resource)
	case KindResourceConfig:
		return ResourceConfigKey(i.Namespace, i.Resource)
	case KindSystemConfig:
		return SystemConfigKey(i.Namespace)
	case KindResourceRegistry:
		return ResourceRegistryKey(i.Namespace)
	case KindEntityConfigRegistry:
		return EntityConfigRegistryKey(i.Namespace)
	case KindProvisionerState:
		return ProvisionerStateKey(i.Namespace)
	case KindBucket:
		return BucketKey(i.Namespace, i.Entity, i.Resource, i.Shard)
	case KindUsageSnapshot:
		return UsageKey(i.Namespace, i.Entity, i.Resource, i.WindowKey)
	case KindAudit:
		return AuditKey(i.Namespace, i.Entity, i.EventID)
	case KindOperation:
		return OperationKey(i.Namespace, i.Entity, i.Pinc, i.OperationID)
	}
	return Key{}
}

// ClassifyKey tells which record of docs/design.md §2 the primary key (pk, sk)
// belongs to and extracts its components. Anything else — legacy shapes
// (`#LIMIT#`, `#RESOURCE#`, `#BUCKET#` sort keys, `ACCESS#`), keys without a
// namespace, user records under the reserved namespace `_`, malformed
// components — is KindUnknown; readers skip those. Whatever it classifies,
// KeyInfo.Key rebuilds exactly. It never panics and does not allocate.
func ClassifyKey(pk, sk string) KeyInfo {
	if pk == TableSystemPK {
		return classifyTableSystem(sk)
	}
	ns, rest, why := cutNamespace(pk)
	if why != "" || ns == ReservedNamespace {
		return KeyInfo{}
	}
	switch {
	case strings.HasPrefix(rest, PrefixBucket):
		if sk != SKState {
			return KeyInfo{}
		}
		e, r, shard, why := cutBucket(rest[len(PrefixBucket):])
		if why != "" {
			return KeyInfo{}
		}
		return KeyInfo{Kind: KindBucket, Namespace: ns, Entity: e, Resource: r, Shard: shard}

	case strings.HasPrefix(rest, PrefixEntity):
		id := rest[len(PrefixEntity):]
		if checkComponent(id) != "" {
			return KeyInfo{}
		}
		return classifyEntity(ns, id, sk)

	case strings.HasPrefix(rest, PrefixResource):
		r := rest[len(PrefixResource):]
		if sk != SKConfig || checkResource(r) != "" {
			return KeyInfo{}
		}
		return KeyInfo{Kind: KindResourceConfig, Namespace: ns, Resource: r}

	case rest == PrefixSystem:
		var k RecordKind
		switch sk {
		case SKConfig:
			k = KindSystemConfig
		case SKResources:
			k = KindResourceRegistry
		case SKEntityConfigResources:
			k = KindEntityConfigRegistry
		case SKProvisioner:
			k = KindProvisionerState
		default:
			return KeyInfo{}
		}
		return KeyInfo{Kind: k, Namespace: ns}

	case strings.HasPrefix(rest, PrefixAudit):
		entity := rest[len(PrefixAudit):]
		ev, why := cutComponent(sk, SKAuditPrefix)
		if why != "" || checkComponent(entity) != "" {
			return KeyInfo{}
		}
		return KeyInfo{Kind: KindAudit, Namespace: ns, Entity: entity, EventID: ev}
	}
	return KeyInfo{}
}

func classifyTableSystem(sk string) KeyInfo {
	if sk == SKVersion {
		return KeyInfo{Kind: KindVersion, Namespace: ReservedNamespace}
	}
	if name, why := cutComponent(sk, SKNamespacePrefix); why == "" {
		return KeyInfo{Kind: KindNamespaceForward, Namespace: ReservedNamespace, NamespaceName: name}
	}
	if id, why := cutComponent(sk, SKNSIDPrefix); why == "" && strings.IndexByte(id, '/') < 0 {
		return KeyInfo{Kind: KindNamespaceReverse, Namespace: ReservedNamespace, NamespaceID: id}
	}
	return KeyInfo{}
}

func classifyEntity(ns, id, sk string) KeyInfo {
	if sk == SKMeta {
		return KeyInfo{Kind: KindEntityMeta, Namespace: ns, Entity: id}
	}
	if r, why := cutComponent(sk, SKConfigPrefix); why == "" {
		return KeyInfo{Kind: KindEntityConfig, Namespace: ns, Entity: id, Resource: r}
	}
	if r, w, why := cutUsage(sk); why == "" {
		return KeyInfo{Kind: KindUsageSnapshot, Namespace: ns, Entity: id, Resource: r, WindowKey: w}
	}
	if p, op, why := cutPair(sk, SKOperationPrefix); why == "" {
		return KeyInfo{Kind: KindOperation, Namespace: ns, Entity: id, Pinc: p, OperationID: op}
	}
	return KeyInfo{}
}
