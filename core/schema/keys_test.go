package schema_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

const ns = "a7x3kq2b9Pz"

func TestPartitionKeyBuilders(t *testing.T) {
	cases := []struct{ got, want string }{
		{schema.TableSystemPK, "_/SYSTEM#"},
		{schema.EntityPK(ns, "user@example.com"), "a7x3kq2b9Pz/ENTITY#user@example.com"},
		{schema.ResourcePK(ns, "openai/gpt-4"), "a7x3kq2b9Pz/RESOURCE#openai/gpt-4"},
		{schema.SystemPK(ns), "a7x3kq2b9Pz/SYSTEM#"},
		{schema.AuditPK(ns, "$RESOURCE:openai/gpt-4"), "a7x3kq2b9Pz/AUDIT#$RESOURCE:openai/gpt-4"},
		{schema.BucketPK(ns, "org:key@x", "openai/gpt-4.1-mini", 0), "a7x3kq2b9Pz/BUCKET#org:key@x#openai/gpt-4.1-mini#0"},
		{schema.BucketPK(ns, "e", "r", 31), "a7x3kq2b9Pz/BUCKET#e#r#31"},
		{schema.BucketPK(ns, "e", "r", math.MaxInt64), "a7x3kq2b9Pz/BUCKET#e#r#9223372036854775807"},
		{schema.ParentGSI1PK(ns, "org-1"), "a7x3kq2b9Pz/PARENT#org-1"},
		{schema.ChildGSI1SK("key-1"), "CHILD#key-1"},
		{schema.BucketGSI2SK("key-1", 7), "BUCKET#key-1#7"},
		{schema.UsageGSI2SK("2024-01-01T14:00:00Z", "key-1"), "USAGE#2024-01-01T14:00:00Z#key-1"},
		{schema.EntityConfigGSI3PK(ns, "gpt-4"), "a7x3kq2b9Pz/ENTITY_CONFIG#gpt-4"},
		{schema.EntityConfigGSI3PK(ns, "_default_"), "a7x3kq2b9Pz/ENTITY_CONFIG#_default_"},
		{schema.BucketGSI3SK("openai/gpt-4", 12), "BUCKET#openai/gpt-4#12"},
		{schema.BucketGSI3SKPrefix("openai/gpt-4"), "BUCKET#openai/gpt-4#"},
		{schema.BucketGSI4SK("key-1", "openai/gpt-4", 2), "BUCKET#key-1#openai/gpt-4#2"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestNegativeShardPanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"BucketPK":     func() { schema.BucketPK(ns, "e", "r", -1) },
		"BucketGSI2SK": func() { schema.BucketGSI2SK("e", -1) },
		"BucketGSI3SK": func() { schema.BucketGSI3SK("r", -1) },
		"BucketGSI4SK": func() { schema.BucketGSI4SK("e", "r", -1) },
		"SeqAttr":      func() { schema.SeqAttr(-1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(-1) did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestItemKeys pins the primary and GSI keys every record R1–R14 writes
// (docs/design.md §2).
func TestItemKeys(t *testing.T) {
	type K = schema.Key
	sys := "a7x3kq2b9Pz/SYSTEM#"
	ent := "a7x3kq2b9Pz/ENTITY#key-1"
	bucketPK := "a7x3kq2b9Pz/BUCKET#key-1#openai/gpt-4#3"
	cases := []struct {
		name string
		got  schema.ItemKeys
		want schema.ItemKeys
	}{
		{"R1", schema.NamespaceForwardItemKeys("tenant-a"), schema.ItemKeys{
			Kind: schema.KindNamespaceForward, Key: K{"_/SYSTEM#", "#NAMESPACE#tenant-a"}, GSI4: K{"_", "_/SYSTEM#"}}},
		{"R2", schema.NamespaceReverseItemKeys(ns), schema.ItemKeys{
			Kind: schema.KindNamespaceReverse, Key: K{"_/SYSTEM#", "#NSID#a7x3kq2b9Pz"}, GSI4: K{"_", "_/SYSTEM#"}}},
		{"R3", schema.VersionItemKeys(), schema.ItemKeys{
			Kind: schema.KindVersion, Key: K{"_/SYSTEM#", "#VERSION"}, GSI4: K{"_", "_/SYSTEM#"}}},
		{"R4 root", schema.EntityMetaItemKeys(ns, "key-1", ""), schema.ItemKeys{
			Kind: schema.KindEntityMeta, Key: K{ent, "#META"}, GSI4: K{ns, ent}}},
		{"R4 child", schema.EntityMetaItemKeys(ns, "key-1", "org-1"), schema.ItemKeys{
			Kind: schema.KindEntityMeta, Key: K{ent, "#META"},
			GSI1: K{"a7x3kq2b9Pz/PARENT#org-1", "CHILD#key-1"}, GSI4: K{ns, ent}}},
		{"R5", schema.EntityConfigItemKeys(ns, "key-1", "openai/gpt-4"), schema.ItemKeys{
			Kind: schema.KindEntityConfig, Key: K{ent, "#CONFIG#openai/gpt-4"},
			GSI3: K{"a7x3kq2b9Pz/ENTITY_CONFIG#openai/gpt-4", "key-1"}, GSI4: K{ns, ent}}},
		{"R5 default", schema.EntityConfigItemKeys(ns, "key-1", "_default_"), schema.ItemKeys{
			Kind: schema.KindEntityConfig, Key: K{ent, "#CONFIG#_default_"},
			GSI3: K{"a7x3kq2b9Pz/ENTITY_CONFIG#_default_", "key-1"}, GSI4: K{ns, ent}}},
		{"R6", schema.ResourceConfigItemKeys(ns, "openai/gpt-4"), schema.ItemKeys{
			Kind: schema.KindResourceConfig, Key: K{"a7x3kq2b9Pz/RESOURCE#openai/gpt-4", "#CONFIG"},
			GSI4: K{ns, "a7x3kq2b9Pz/RESOURCE#openai/gpt-4"}}},
		{"R7", schema.SystemConfigItemKeys(ns), schema.ItemKeys{
			Kind: schema.KindSystemConfig, Key: K{sys, "#CONFIG"}, GSI4: K{ns, sys}}},
		{"R8", schema.ResourceRegistryItemKeys(ns), schema.ItemKeys{
			Kind: schema.KindResourceRegistry, Key: K{sys, "#RESOURCES"}, GSI4: K{ns, sys}}},
		{"R9", schema.EntityConfigRegistryItemKeys(ns), schema.ItemKeys{
			Kind: schema.KindEntityConfigRegistry, Key: K{sys, "#ENTITY_CONFIG_RESOURCES"}, GSI4: K{ns, sys}}},
		// R10 sets GSI4SK too, unlike upstream.
		{"R10", schema.ProvisionerStateItemKeys(ns), schema.ItemKeys{
			Kind: schema.KindProvisionerState, Key: K{sys, "#PROVISIONER"}, GSI4: K{ns, sys}}},
		{"R11", schema.BucketItemKeys(ns, "key-1", "openai/gpt-4", 3), schema.ItemKeys{
			Kind: schema.KindBucket, Key: K{bucketPK, "#STATE"},
			GSI2: K{"a7x3kq2b9Pz/RESOURCE#openai/gpt-4", "BUCKET#key-1#3"},
			GSI3: K{ent, "BUCKET#openai/gpt-4#3"},
			GSI4: K{ns, "BUCKET#key-1#openai/gpt-4#3"}}},
		{"R12", schema.UsageItemKeys(ns, "key-1", "openai/gpt-4", "2024-01-01T14:00:00Z"), schema.ItemKeys{
			Kind: schema.KindUsageSnapshot, Key: K{ent, "#USAGE#openai/gpt-4#2024-01-01T14:00:00Z"},
			GSI2: K{"a7x3kq2b9Pz/RESOURCE#openai/gpt-4", "USAGE#2024-01-01T14:00:00Z#key-1"},
			GSI4: K{ns, ent}}},
		{"R13", schema.AuditItemKeys(ns, "$SYSTEM", "01HZX3M0000000000000000000"), schema.ItemKeys{
			Kind: schema.KindAudit, Key: K{"a7x3kq2b9Pz/AUDIT#$SYSTEM", "#AUDIT#01HZX3M0000000000000000000"},
			GSI4: K{ns, "a7x3kq2b9Pz/AUDIT#$SYSTEM"}}},
		{"R14", schema.OperationItemKeys(ns, "key-1", "0", "op-42"), schema.ItemKeys{
			Kind: schema.KindOperation, Key: K{ent, "#OP#0#op-42"}, GSI4: K{ns, ent}}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\n got  %+v\n want %+v", c.name, c.got, c.want)
		}
		// Every record classifies back to the kind its builder stamped.
		if info := schema.ClassifyKey(c.got.Key.PK, c.got.Key.SK); info.Kind != c.want.Kind {
			t.Errorf("%s: ClassifyKey = %v, want %v", c.name, info.Kind, c.want.Kind)
		}
		// Every record is in GSI4, under its namespace.
		if c.got.GSI4.IsZero() {
			t.Errorf("%s: no GSI4 keys", c.name)
		}
	}
	// The record kinds are numbered like the catalogue.
	if schema.KindBucket != 11 || schema.KindOperation != 14 || schema.KindNamespaceForward != 1 {
		t.Error("record kinds are not numbered R1..R14")
	}
}

func TestItemKeysAttributes(t *testing.T) {
	item := schema.BucketItemKeys(ns, "e", "r", 0).Item()
	want := map[string]string{
		"PK": ns + "/BUCKET#e#r#0", "SK": "#STATE",
		"GSI2PK": ns + "/RESOURCE#r", "GSI2SK": "BUCKET#e#0",
		"GSI3PK": ns + "/ENTITY#e", "GSI3SK": "BUCKET#r#0",
		"GSI4PK": ns, "GSI4SK": "BUCKET#e#r#0",
	}
	if len(item) != len(want) {
		t.Fatalf("item has %d attributes, want %d: %v", len(item), len(want), item)
	}
	for k, v := range want {
		if got := attrS(item[k]); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	root := schema.EntityMetaItemKeys(ns, "e", "").Item()
	if _, ok := root["GSI1PK"]; ok {
		t.Error("a root entity's META wrote GSI1PK")
	}
	k := schema.BucketKey(ns, "e", "r", 0).AttributeValues()
	if len(k) != 2 || attrS(k["PK"]) != ns+"/BUCKET#e#r#0" || attrS(k["SK"]) != "#STATE" {
		t.Errorf("AttributeValues = %v", k)
	}
}

func TestParseBucketPK(t *testing.T) {
	good := []struct {
		pk   string
		want schema.BucketID
	}{
		{"ns/BUCKET#e#r#0", schema.BucketID{Namespace: "ns", Entity: "e", Resource: "r", Shard: 0}},
		{ns + "/BUCKET#org:team@x.com#openai/gpt-4.1-mini#31", schema.BucketID{Namespace: ns, Entity: "org:team@x.com", Resource: "openai/gpt-4.1-mini", Shard: 31}},
		{"ns/BUCKET#e#a/b/c#1234", schema.BucketID{Namespace: "ns", Entity: "e", Resource: "a/b/c", Shard: 1234}},
		{"ns/BUCKET#e#r#" + strconv.Itoa(math.MaxInt), schema.BucketID{Namespace: "ns", Entity: "e", Resource: "r", Shard: math.MaxInt}},
		// Structural parser: '/' after the namespace is part of the entity.
		{"ns/BUCKET#e/x#r#1", schema.BucketID{Namespace: "ns", Entity: "e/x", Resource: "r", Shard: 1}},
	}
	for _, c := range good {
		got, err := schema.ParseBucketPK(c.pk)
		if err != nil || got != c.want {
			t.Errorf("ParseBucketPK(%q) = %+v, %v; want %+v", c.pk, got, err, c.want)
			continue
		}
		if got.PK() != c.pk {
			t.Errorf("rebuilt %q, want %q", got.PK(), c.pk)
		}
		if got.Key() != (schema.Key{PK: c.pk, SK: "#STATE"}) {
			t.Errorf("Key() = %+v", got.Key())
		}
		if a := string(got.AppendPK(nil)); a != c.pk {
			t.Errorf("AppendPK(nil) = %q, want %q", a, c.pk)
		}
		if a := string(got.AppendPK([]byte("x:"))); a != "x:"+c.pk {
			t.Errorf("AppendPK(x:) = %q, want %q", a, "x:"+c.pk)
		}
	}
	bad := []struct{ pk, reason string }{
		{"", "'/'"},
		{"BUCKET#e#r#0", "'/'"},              // no namespace (legacy)
		{"/BUCKET#e#r#0", "empty namespace"}, // empty namespace
		{"a#b/BUCKET#e#r#0", "namespace contains '#'"},
		{"_/BUCKET#e#r#0", "reserved namespace"},
		{"ns/ENTITY#e", "prefix"},
		{"ns/x/BUCKET#e#r#0", "prefix"},
		{"ns/BUCKET#", "separated"},
		{"ns/BUCKET#e", "separated"},
		{"ns/BUCKET#e#0", "separated"}, // no resource
		{"ns/BUCKET##r#0", "empty entity"},
		{"ns/BUCKET#e##0", "empty resource"},
		{"ns/BUCKET#e#r#x#0", "resource contains '#'"},
		{"ns/BUCKET#e#_default_#0", "_default_"},
		{"ns/BUCKET#e#r#", "shard"},
		{"ns/BUCKET#e#r#01", "shard"},
		{"ns/BUCKET#e#r#00", "shard"},
		{"ns/BUCKET#e#r#+1", "shard"},
		{"ns/BUCKET#e#r#-1", "shard"},
		{"ns/BUCKET#e#r# 1", "shard"},
		{"ns/BUCKET#e#r#1a", "shard"},
		{"ns/BUCKET#e#r#٣", "shard"}, // a non-ASCII digit
		{"ns/BUCKET#e#r#" + "9223372036854775808", "shard"},
		{"ns/BUCKET#e#r#" + "99999999999999999999999", "shard"},
	}
	for _, c := range bad {
		got, err := schema.ParseBucketPK(c.pk)
		var ke *schema.KeyError
		if !errors.As(err, &ke) {
			t.Errorf("ParseBucketPK(%q) = %+v, %v; want a *KeyError", c.pk, got, err)
			continue
		}
		if got != (schema.BucketID{}) {
			t.Errorf("ParseBucketPK(%q) returned %+v with its error", c.pk, got)
		}
		if ke.Key != c.pk || ke.Shape != schema.ShapeBucketPK || !strings.Contains(ke.Reason, c.reason) {
			t.Errorf("ParseBucketPK(%q): %+v, want reason containing %q", c.pk, *ke, c.reason)
		}
	}
}

func TestParseShard(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "1": 1, "32": 32, "1000000": 1000000} {
		if got, err := schema.ParseShard(s); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "00", "01", "-0", "+1", "1.0", "1e3", " 1", "0x10", "18446744073709551616"} {
		if _, err := schema.ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
}

func TestParseOtherKeys(t *testing.T) {
	type pair struct{ a, b string }
	cases := []struct {
		name  string
		parse func(string) (pair, error)
		in    string
		want  pair
		ok    bool
		shape string
	}{}
	add := func(name, shape string, parse func(string) (pair, error), rows ...any) {
		for i := 0; i < len(rows); i += 3 {
			cases = append(cases, struct {
				name  string
				parse func(string) (pair, error)
				in    string
				want  pair
				ok    bool
				shape string
			}{name, parse, rows[i].(string), rows[i+1].(pair), rows[i+2].(bool), shape})
		}
	}
	entity := func(s string) (pair, error) { a, b, err := schema.ParseEntityPK(s); return pair{a, b}, err }
	audit := func(s string) (pair, error) { a, b, err := schema.ParseAuditPK(s); return pair{a, b}, err }
	resource := func(s string) (pair, error) { a, b, err := schema.ParseResourcePK(s); return pair{a, b}, err }
	system := func(s string) (pair, error) { a, err := schema.ParseSystemPK(s); return pair{a, ""}, err }
	config := func(s string) (pair, error) { a, err := schema.ParseConfigSK(s); return pair{a, ""}, err }
	usage := func(s string) (pair, error) { a, b, err := schema.ParseUsageSK(s); return pair{a, b}, err }
	auditSK := func(s string) (pair, error) { a, err := schema.ParseAuditSK(s); return pair{a, ""}, err }
	op := func(s string) (pair, error) { a, b, err := schema.ParseOperationSK(s); return pair{a, b}, err }
	nsSplit := func(s string) (pair, error) { a, b, err := schema.ParseNamespace(s); return pair{a, b}, err }
	none := pair{}

	add("ParseEntityPK", schema.ShapeEntityPK, entity,
		ns+"/ENTITY#user@example.com", pair{ns, "user@example.com"}, true,
		"ns/ENTITY#org:1", pair{"ns", "org:1"}, true,
		"ns/ENTITY#", none, false,
		"ns/ENTITY#a#b", none, false,
		"ENTITY#a", none, false, // legacy, no namespace
		"_/ENTITY#a", none, false,
		"ns/AUDIT#a", none, false,
		"ns/entity#a", none, false)
	add("ParseAuditPK", schema.ShapeAuditPK, audit,
		"ns/AUDIT#key-1", pair{"ns", "key-1"}, true,
		"ns/AUDIT#$SYSTEM", pair{"ns", "$SYSTEM"}, true,
		"ns/AUDIT#$RESOURCE:openai/gpt-4", pair{"ns", "$RESOURCE:openai/gpt-4"}, true,
		"ns/AUDIT#", none, false,
		"AUDIT#x", none, false,
		"ns/ENTITY#x", none, false)
	add("ParseResourcePK", schema.ShapeResourcePK, resource,
		"ns/RESOURCE#openai/gpt-4", pair{"ns", "openai/gpt-4"}, true,
		"ns/RESOURCE#_default_", none, false,
		"ns/RESOURCE#", none, false,
		"ns/RESOURCE#a#b", none, false)
	add("ParseSystemPK", schema.ShapeSystemPK, system,
		"ns/SYSTEM#", pair{"ns", ""}, true,
		"_/SYSTEM#", none, false,
		"ns/SYSTEM#x", none, false,
		"ns/SYSTEM", none, false)
	add("ParseConfigSK", schema.ShapeConfigSK, config,
		"#CONFIG#openai/gpt-4", pair{"openai/gpt-4", ""}, true,
		"#CONFIG#_default_", pair{"_default_", ""}, true,
		"#CONFIG", none, false,
		"#CONFIG#", none, false,
		"#CONFIG#a#b", none, false,
		"#LIMIT#a#rpm", none, false)
	add("ParseUsageSK", schema.ShapeUsageSK, usage,
		"#USAGE#openai/gpt-4#2024-01-01T14:00:00Z", pair{"openai/gpt-4", "2024-01-01T14:00:00Z"}, true,
		"#USAGE#r#2024-01-01T00:00:00Z", pair{"r", "2024-01-01T00:00:00Z"}, true,
		"#USAGE#r#2026-12-01T00:00:00Z#hourly", pair{"r", "2026-12-01T00:00:00Z#hourly"}, true,
		"#USAGE#r#2026-12-01T00:00:00Z#daily", pair{"r", "2026-12-01T00:00:00Z#daily"}, true,
		"#USAGE#r#2026-12-01T00:00:00Z#monthly", none, false,
		"#USAGE#r#2026-12-01T00:00:00Z#", none, false,
		"#USAGE#r##hourly", none, false,
		"#USAGE#r#w#hourly#daily", none, false,
		"#USAGE#r", none, false,
		"#USAGE##w", none, false,
		"#USAGE#r#", none, false,
		"#USAGE#r#w#x", none, false,
		"#USAGE#_default_#w", none, false)
	add("ParseAuditSK", schema.ShapeAuditSK, auditSK,
		"#AUDIT#01HZX3M0000000000000000000", pair{"01HZX3M0000000000000000000", ""}, true,
		"#AUDIT#", none, false,
		"#AUDIT#a#b", none, false,
		"#META", none, false)
	add("ParseOperationSK", schema.ShapeOpSK, op,
		"#OP#01HZX3M0000000000000000000#op-1", pair{"01HZX3M0000000000000000000", "op-1"}, true,
		"#OP#0#op:1@x", pair{"0", "op:1@x"}, true,
		"#OP#0", none, false,
		"#OP##x", none, false,
		"#OP#0#", none, false,
		"#OP#0#a#b", none, false)
	add("ParseNamespace", schema.ShapeNamespaced, nsSplit,
		"ns/ENTITY#a", pair{"ns", "ENTITY#a"}, true,
		"_/SYSTEM#", pair{"_", "SYSTEM#"}, true,
		"ns/a/b", pair{"ns", "a/b"}, true,
		"nokey", none, false,
		"/x", none, false,
		"n#s/x", none, false)

	for _, c := range cases {
		got, err := c.parse(c.in)
		if c.ok {
			if err != nil || got != c.want {
				t.Errorf("%s(%q) = %v, %v; want %v", c.name, c.in, got, err, c.want)
			}
			continue
		}
		var ke *schema.KeyError
		if !errors.As(err, &ke) || ke.Key != c.in || ke.Shape != c.shape || ke.Reason == "" {
			t.Errorf("%s(%q) = %v, %v; want a *KeyError with shape %q", c.name, c.in, got, err, c.shape)
		}
		if got != none {
			t.Errorf("%s(%q) returned %v with its error", c.name, c.in, got)
		}
	}
}

func TestClassifyKey(t *testing.T) {
	type I = schema.KeyInfo
	known := []struct {
		pk, sk string
		want   schema.KeyInfo
	}{
		{"_/SYSTEM#", "#NAMESPACE#tenant-a", I{Kind: schema.KindNamespaceForward, Namespace: "_", NamespaceName: "tenant-a"}},
		{"_/SYSTEM#", "#NSID#" + ns, I{Kind: schema.KindNamespaceReverse, Namespace: "_", NamespaceID: ns}},
		{"_/SYSTEM#", "#VERSION", I{Kind: schema.KindVersion, Namespace: "_"}},
		{ns + "/ENTITY#k:1@x", "#META", I{Kind: schema.KindEntityMeta, Namespace: ns, Entity: "k:1@x"}},
		{ns + "/ENTITY#k", "#CONFIG#openai/gpt-4", I{Kind: schema.KindEntityConfig, Namespace: ns, Entity: "k", Resource: "openai/gpt-4"}},
		{ns + "/ENTITY#k", "#CONFIG#_default_", I{Kind: schema.KindEntityConfig, Namespace: ns, Entity: "k", Resource: "_default_"}},
		{ns + "/RESOURCE#openai/gpt-4", "#CONFIG", I{Kind: schema.KindResourceConfig, Namespace: ns, Resource: "openai/gpt-4"}},
		{ns + "/SYSTEM#", "#CONFIG", I{Kind: schema.KindSystemConfig, Namespace: ns}},
		{ns + "/SYSTEM#", "#RESOURCES", I{Kind: schema.KindResourceRegistry, Namespace: ns}},
		{ns + "/SYSTEM#", "#ENTITY_CONFIG_RESOURCES", I{Kind: schema.KindEntityConfigRegistry, Namespace: ns}},
		{ns + "/SYSTEM#", "#PROVISIONER", I{Kind: schema.KindProvisionerState, Namespace: ns}},
		{ns + "/BUCKET#k#openai/gpt-4#2", "#STATE", I{Kind: schema.KindBucket, Namespace: ns, Entity: "k", Resource: "openai/gpt-4", Shard: 2}},
		{ns + "/ENTITY#k", "#USAGE#openai/gpt-4#2024-01-01T14:00:00Z", I{Kind: schema.KindUsageSnapshot, Namespace: ns, Entity: "k", Resource: "openai/gpt-4", WindowKey: "2024-01-01T14:00:00Z"}},
		{ns + "/AUDIT#$RESOURCE:openai/gpt-4", "#AUDIT#01HZX", I{Kind: schema.KindAudit, Namespace: ns, Entity: "$RESOURCE:openai/gpt-4", EventID: "01HZX"}},
		{ns + "/ENTITY#k", "#OP#0#op-1", I{Kind: schema.KindOperation, Namespace: ns, Entity: "k", Pinc: "0", OperationID: "op-1"}},
	}
	for _, c := range known {
		got := schema.ClassifyKey(c.pk, c.sk)
		if got != c.want {
			t.Errorf("ClassifyKey(%q, %q) =\n %+v, want\n %+v", c.pk, c.sk, got, c.want)
		}
		if k := got.Key(); k != (schema.Key{PK: c.pk, SK: c.sk}) {
			t.Errorf("KeyInfo.Key() = %+v, want (%q, %q)", k, c.pk, c.sk)
		}
	}
	unknown := [][2]string{
		{"", ""},
		{ns + "/ENTITY#k", "#LIMIT#gpt-4#rpm"},   // legacy per-limit config
		{ns + "/ENTITY#k", "#RESOURCE#gpt-4"},    // legacy access tracking
		{ns + "/ENTITY#k", "#BUCKET#gpt-4"},      // legacy bucket SK
		{ns + "/RESOURCE#gpt-4", "#LIMIT#rpm"},   // legacy
		{ns + "/SYSTEM#", "#LIMIT#rpm"},          // legacy
		{ns + "/RESOURCE#gpt-4", "ACCESS#k"},     // GSI2 legacy form
		{"ENTITY#k", "#META"},                    // pre-namespace
		{"ENTITY#k", "#BUCKET#gpt-4"},            // pre-0.9 bucket
		{"BUCKET#k#gpt-4#0", "#STATE"},           // no namespace
		{ns + "/ENTITY#k", "#CONFIG"},            // bare config on an entity
		{ns + "/ENTITY#k", "#CONFIG#"},           // empty resource
		{ns + "/ENTITY#k", "#SEEN#evt"},          // not ours
		{ns + "/ENTITY#k", "#USAGE#r"},           // no window key
		{ns + "/ENTITY#k", "#USAGE#r#w#x"},       // extra '#'
		{ns + "/ENTITY#k", "#OP#0"},              // no operation id
		{ns + "/ENTITY#", "#META"},               // empty entity
		{ns + "/ENTITY#a#b", "#META"},            // '#' in entity
		{ns + "/SYSTEM#", "#VERSION"},            // version lives only under _
		{ns + "/SYSTEM#x", "#CONFIG"},            // not exactly SYSTEM#
		{ns + "/RESOURCE#_default_", "#CONFIG"},  // _default_ is not a resource
		{ns + "/BUCKET#k#r#0", "#META"},          // bucket PK, wrong SK
		{ns + "/BUCKET#k#r#00", "#STATE"},        // non-canonical shard
		{ns + "/BUCKET#k#_default_#0", "#STATE"}, // _default_ is not a bucket resource
		{ns + "/AUDIT#k", "#META"},               // audit PK, wrong SK
		{ns + "/AUDIT#", "#AUDIT#x"},             // empty audit entity
		{"_/SYSTEM#", "#CONFIG"},                 // only R1–R3 under _
		{"_/SYSTEM#", "#NAMESPACE#"},             // empty name
		{"_/SYSTEM#", "#NSID#a/b"},               // '/' in a namespace id
		{"_/ENTITY#k", "#META"},                  // user record under _
		{"_/BUCKET#k#r#0", "#STATE"},             // user record under _
		{"/ENTITY#k", "#META"},                   // empty namespace
		{"n#s/ENTITY#k", "#META"},                // '#' in namespace
		{ns + "/PARENT#k", "CHILD#x"},            // a GSI key, not a PK
	}
	for _, c := range unknown {
		if got := schema.ClassifyKey(c[0], c[1]); got != (schema.KeyInfo{}) {
			t.Errorf("ClassifyKey(%q, %q) = %+v, want unknown", c[0], c[1], got)
		}
	}
	if (schema.KeyInfo{}).Key() != (schema.Key{}) {
		t.Error("unknown KeyInfo rebuilt a key")
	}
	if schema.KindBucket.String() != "bucket" || schema.KindUnknown.String() != "unknown" || schema.RecordKind(99).String() != "RecordKind(99)" {
		t.Error("RecordKind.String")
	}
}

// genID returns a random valid identifier (exercising ':' and '@').
func genID(r *rand.Rand, maxLen int) string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	const rest = first + "_.-:@"
	return genString(r, first, rest, maxLen)
}

// genResource returns a random valid resource (exercising '/', '.', '-').
func genResource(r *rand.Rand, maxLen int) string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	const rest = first + "0123456789_.-/"
	return genString(r, first, rest, maxLen)
}

func genNamespaceID(r *rand.Rand) string {
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	return genFixed(r, alpha[:len(alpha)-1], 1) + genFixed(r, alpha, 10)
}

// attrS returns the string of an S attribute value, or "<not S>".
func attrS(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return "<not S>"
}

func genFixed(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func genString(r *rand.Rand, first, rest string, maxLen int) string {
	n := 1 + r.IntN(maxLen)
	return genFixed(r, first, 1) + genFixed(r, rest, n-1)
}

// TestKeyRoundTripProperty is a property: for validated components,
// parsing a built key returns the components, and classification rebuilds
// the key, for every record shape.
func TestKeyRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 1))
	shards := []int{0, 1, 9, 10, 31, 32, 1 << 20, math.MaxInt}
	for i := 0; i < 20000; i++ {
		n := genNamespaceID(r)
		e := genID(r, 256)
		res := genResource(r, 64)
		shard := r.IntN(1 << 16)
		if i < len(shards) {
			shard = shards[i]
		}
		for _, err := range []error{schema.ValidateNamespaceID(n), schema.ValidateEntityID(e), schema.ValidateResource(res)} {
			if err != nil {
				t.Fatalf("generator produced an invalid input: %v", err)
			}
		}
		pk := schema.BucketPK(n, e, res, shard)
		got, err := schema.ParseBucketPK(pk)
		if want := (schema.BucketID{Namespace: n, Entity: e, Resource: res, Shard: shard}); err != nil || got != want {
			t.Fatalf("ParseBucketPK(BucketPK(%q, %q, %q, %d)) = %+v, %v", n, e, res, shard, got, err)
		}
		w := "2024-01-01T14:00:00Z"
		ev := genFixed(r, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26)
		op := genID(r, 256)
		keys := []schema.ItemKeys{
			schema.NamespaceForwardItemKeys(genID(r, 64)),
			schema.NamespaceReverseItemKeys(n),
			schema.EntityMetaItemKeys(n, e, genID(r, 256)),
			schema.EntityConfigItemKeys(n, e, res),
			schema.EntityConfigItemKeys(n, e, schema.DefaultResource),
			schema.ResourceConfigItemKeys(n, res),
			schema.SystemConfigItemKeys(n),
			schema.ResourceRegistryItemKeys(n),
			schema.EntityConfigRegistryItemKeys(n),
			schema.ProvisionerStateItemKeys(n),
			schema.BucketItemKeys(n, e, res, shard),
			schema.UsageItemKeys(n, e, res, w),
			schema.AuditItemKeys(n, e, ev),
			schema.OperationItemKeys(n, e, ev, op),
		}
		for _, k := range keys {
			info := schema.ClassifyKey(k.Key.PK, k.Key.SK)
			if info.Kind != k.Kind || info.Key() != k.Key {
				t.Fatalf("ClassifyKey(%+v) = %+v", k.Key, info)
			}
			// Invariant 72: every PK but R1–R3 starts with "{ns}/", and the
			// GSI4 partition is that namespace.
			if k.Kind > schema.KindVersion {
				if !strings.HasPrefix(k.Key.PK, n+"/") || k.GSI4.PK != n {
					t.Fatalf("%v: PK %q / GSI4PK %q not under namespace %q", k.Kind, k.Key.PK, k.GSI4.PK, n)
				}
			}
		}
		if rs, wk, err := schema.ParseUsageSK(keys[11].Key.SK); err != nil || rs != res || wk != w {
			t.Fatalf("ParseUsageSK round trip: %q %q %v", rs, wk, err)
		}
		if p, o, err := schema.ParseOperationSK(keys[13].Key.SK); err != nil || p != ev || o != op {
			t.Fatalf("ParseOperationSK round trip: %q %q %v", p, o, err)
		}
	}
}

var (
	sinkString string
	sinkKey    schema.Key
	sinkBucket schema.BucketID
	sinkInfo   schema.KeyInfo
)

// TestKeyAllocations pins the allocation budget of the hot-path builders
// and parsers: one allocation to build a bucket PK or key, none to parse or
// classify.
func TestKeyAllocations(t *testing.T) {
	pk := schema.BucketPK(ns, "user@example.com", "openai/gpt-4", 17)
	cases := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"BucketPK", 1, func() { sinkString = schema.BucketPK(ns, "user@example.com", "openai/gpt-4", 17) }},
		{"BucketKey", 1, func() { sinkKey = schema.BucketKey(ns, "user@example.com", "openai/gpt-4", 17) }},
		{"BucketGSI2SK", 1, func() { sinkString = schema.BucketGSI2SK("user@example.com", 17) }},
		{"EntityPK", 1, func() { sinkString = schema.EntityPK(ns, "user@example.com") }},
		{"BucketAttr", 1, func() { sinkString = schema.BucketAttr("rpm", schema.LimitTokens) }},
		{"ParseBucketPK", 0, func() { sinkBucket, _ = schema.ParseBucketPK(pk) }},
		{"ClassifyKey bucket", 0, func() { sinkInfo = schema.ClassifyKey(pk, "#STATE") }},
		{"ClassifyKey usage", 0, func() { sinkInfo = schema.ClassifyKey(ns+"/ENTITY#k", "#USAGE#r#w") }},
		{"ClassifyKey unknown", 0, func() { sinkInfo = schema.ClassifyKey(ns+"/BUCKET#k#r#01", "#STATE") }},
		{"ClassifyKey legacy", 0, func() { sinkInfo = schema.ClassifyKey(ns+"/ENTITY#k", "#LIMIT#r#rpm") }},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(200, c.fn); n != c.max {
			t.Errorf("%s: %v allocations, want %v", c.name, n, c.max)
		}
	}
	if sinkBucket.Shard != 17 {
		t.Errorf("ParseBucketPK in the loop returned %+v", sinkBucket)
	}
}

// FuzzParseBucketPK: parsing never panics; whatever parses rebuilds to the
// same string and classifies as a bucket; and buckets built from validated
// components parse back to them.
func FuzzParseBucketPK(f *testing.F) {
	f.Add("ns/BUCKET#e#r#0", ns, "e", "r", 0)
	f.Add(ns+"/BUCKET#org:key@x#openai/gpt-4#31", ns, "org:key@x", "openai/gpt-4", 31)
	f.Add("ns/BUCKET#e#r#x#0", ns, "e", "a/b/c", 1)
	f.Add("ns/BUCKET#e#r#01", ns, "e.1", "r-1.2", 1<<20)
	f.Add("_/BUCKET#e#r#0", "-bad", "#", "_default_", -1)
	f.Add("ns/BUCKET#e#r#9223372036854775808", ns, "a", "b", math.MaxInt)
	f.Add("BUCKET#e#r#0", "", "", "", 0)
	f.Add("ns/BUCKET##", ns, "@x", "/x", 2)
	f.Fuzz(func(t *testing.T, pk, n, e, res string, shard int) {
		if b, err := schema.ParseBucketPK(pk); err == nil {
			if got := b.PK(); got != pk {
				t.Fatalf("ParseBucketPK(%q) = %+v rebuilds to %q", pk, b, got)
			}
			if b.Namespace == "" || b.Entity == "" || b.Resource == "" || b.Shard < 0 ||
				strings.Contains(b.Namespace, "/") || strings.ContainsAny(b.Entity+b.Resource+b.Namespace, "#") {
				t.Fatalf("ParseBucketPK(%q) = %+v: bad component", pk, b)
			}
			info := schema.ClassifyKey(pk, schema.SKState)
			if info.Kind != schema.KindBucket || info.Entity != b.Entity || info.Resource != b.Resource || info.Shard != b.Shard {
				t.Fatalf("ClassifyKey disagrees with ParseBucketPK on %q: %+v", pk, info)
			}
		} else if schema.ClassifyKey(pk, schema.SKState).Kind == schema.KindBucket {
			t.Fatalf("ClassifyKey accepts bucket PK %q that ParseBucketPK rejects: %v", pk, err)
		}

		if shard < 0 || schema.ValidateNamespaceID(n) != nil || schema.ValidateEntityID(e) != nil || schema.ValidateResource(res) != nil {
			return
		}
		built := schema.BucketPK(n, e, res, shard)
		b, err := schema.ParseBucketPK(built)
		if want := (schema.BucketID{Namespace: n, Entity: e, Resource: res, Shard: shard}); err != nil || b != want {
			t.Fatalf("ParseBucketPK(%q) = %+v, %v; want %+v", built, b, err, want)
		}
	})
}

// FuzzClassifyKey: classification never panics, anything classified
// rebuilds exactly (through KeyInfo.Key and through the record's ItemKeys
// builder), and namespaced records other than R1–R3 sit under "{ns}/".
func FuzzClassifyKey(f *testing.F) {
	seeds := [][2]string{
		{"_/SYSTEM#", "#NAMESPACE#tenant-a"}, {"_/SYSTEM#", "#NSID#" + ns}, {"_/SYSTEM#", "#VERSION"},
		{ns + "/ENTITY#k", "#META"}, {ns + "/ENTITY#k", "#CONFIG#_default_"}, {ns + "/RESOURCE#r", "#CONFIG"},
		{ns + "/SYSTEM#", "#CONFIG"}, {ns + "/SYSTEM#", "#RESOURCES"}, {ns + "/SYSTEM#", "#ENTITY_CONFIG_RESOURCES"},
		{ns + "/SYSTEM#", "#PROVISIONER"}, {ns + "/BUCKET#k#a/b#3", "#STATE"}, {ns + "/ENTITY#k", "#USAGE#r#w"},
		{ns + "/AUDIT#$SYSTEM", "#AUDIT#01H"}, {ns + "/ENTITY#k", "#OP#0#op"},
		{ns + "/ENTITY#k", "#LIMIT#r#rpm"}, {ns + "/ENTITY#k", "#BUCKET#r"}, {ns + "/RESOURCE#r", "ACCESS#k"},
		{"ENTITY#k", "#RESOURCE#r"}, {"", ""}, {"/", "#"}, {"_/", "#NSID#"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pk, sk string) {
		info := schema.ClassifyKey(pk, sk)
		if info.Kind == schema.KindUnknown {
			if info != (schema.KeyInfo{}) {
				t.Fatalf("unknown key carries fields: %+v", info)
			}
			return
		}
		want := schema.Key{PK: pk, SK: sk}
		if got := info.Key(); got != want {
			t.Fatalf("ClassifyKey(%q, %q) = %+v rebuilds to %+v", pk, sk, info, got)
		}
		var ik schema.ItemKeys
		switch info.Kind {
		case schema.KindNamespaceForward:
			ik = schema.NamespaceForwardItemKeys(info.NamespaceName)
		case schema.KindNamespaceReverse:
			ik = schema.NamespaceReverseItemKeys(info.NamespaceID)
		case schema.KindVersion:
			ik = schema.VersionItemKeys()
		case schema.KindEntityMeta:
			ik = schema.EntityMetaItemKeys(info.Namespace, info.Entity, "")
		case schema.KindEntityConfig:
			ik = schema.EntityConfigItemKeys(info.Namespace, info.Entity, info.Resource)
		case schema.KindResourceConfig:
			ik = schema.ResourceConfigItemKeys(info.Namespace, info.Resource)
		case schema.KindSystemConfig:
			ik = schema.SystemConfigItemKeys(info.Namespace)
		case schema.KindResourceRegistry:
			ik = schema.ResourceRegistryItemKeys(info.Namespace)
		case schema.KindEntityConfigRegistry:
			ik = schema.EntityConfigRegistryItemKeys(info.Namespace)
		case schema.KindProvisionerState:
			ik = schema.ProvisionerStateItemKeys(info.Namespace)
		case schema.KindBucket:
			ik = schema.BucketItemKeys(info.Namespace, info.Entity, info.Resource, info.Shard)
		case schema.KindUsageSnapshot:
			ik = schema.UsageItemKeys(info.Namespace, info.Entity, info.Resource, info.WindowKey)
		case schema.KindAudit:
			ik = schema.AuditItemKeys(info.Namespace, info.Entity, info.EventID)
		case schema.KindOperation:
			ik = schema.OperationItemKeys(info.Namespace, info.Entity, info.Pinc, info.OperationID)
		default:
			t.Fatalf("kind %v out of range", info.Kind)
		}
		if ik.Key != want || ik.Kind != info.Kind {
			t.Fatalf("ItemKeys for %+v = %+v, want key %+v", info, ik, want)
		}
		if info.Kind <= schema.KindVersion {
			if pk != schema.TableSystemPK || info.Namespace != "_" {
				t.Fatalf("R1–R3 outside _/SYSTEM#: %+v", info)
			}
		} else if info.Namespace == "_" || !strings.HasPrefix(pk, info.Namespace+"/") || ik.GSI4.PK != info.Namespace {
			t.Fatalf("%v not under its namespace: %q %+v", info.Kind, pk, info)
		}
	})
}

func BenchmarkBucketPK(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString = schema.BucketPK(ns, "user@example.com", "openai/gpt-4", 17)
	}
}

func BenchmarkParseBucketPK(b *testing.B) {
	pk := schema.BucketPK(ns, "user@example.com", "openai/gpt-4", 17)
	b.ReportAllocs()
	for b.Loop() {
		sinkBucket, _ = schema.ParseBucketPK(pk)
	}
}

func BenchmarkClassifyKey(b *testing.B) {
	pk := schema.BucketPK(ns, "user@example.com", "openai/gpt-4", 17)
	b.ReportAllocs()
	for b.Loop() {
		sinkInfo = schema.ClassifyKey(pk, schema.SKState)
	}
}
