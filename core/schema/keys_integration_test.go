package schema_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// attrKind is a test-only attribute recording which record an item is.
const attrKind = "test_kind"

// TestKeysOnDynamoDBLocal writes one item of every record R1–R14 through
// the key builders, reads each back, queries every GSI the way docs/design.md §2
// uses it and checks the exact result sets, then scans the table for
// every PK but R1–R3 starts with "{ns}/".
func TestKeysOnDynamoDBLocal(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const (
		ns1   = "nsAAAAAAAA1"
		ns2   = "nsBBBBBBBB2"
		gpt4  = "openai/gpt-4"
		gpt4o = "openai/gpt-4o" // shares the prefix "openai/gpt-4"
		gpt35 = "gpt-3.5-turbo"
		k1    = "key:1@org" // ':' and '@' in an entity id
		k2    = "key-2"
		hour  = "2024-01-01T14:00:00Z"
		day   = "2024-01-01T00:00:00Z"
	)
	for _, id := range []string{ns1, ns2} {
		if err := schema.ValidateNamespaceID(id); err != nil {
			t.Fatal(err)
		}
	}

	// Namespace-less (table-level) records.
	r1a := schema.NamespaceForwardItemKeys("tenant-a")
	r1b := schema.NamespaceForwardItemKeys("tenant-b")
	r2a := schema.NamespaceReverseItemKeys(ns1)
	r2b := schema.NamespaceReverseItemKeys(ns2)
	r3 := schema.VersionItemKeys()

	// ns1.
	metaOrg := schema.EntityMetaItemKeys(ns1, "org-1", "")
	metaK1 := schema.EntityMetaItemKeys(ns1, k1, "org-1")
	metaK2 := schema.EntityMetaItemKeys(ns1, k2, "org-1")
	metaK3 := schema.EntityMetaItemKeys(ns1, "key-3", "org-2")
	cfgK1 := schema.EntityConfigItemKeys(ns1, k1, gpt4)
	cfgK2 := schema.EntityConfigItemKeys(ns1, k2, gpt4)
	cfgK1Default := schema.EntityConfigItemKeys(ns1, k1, schema.DefaultResource)
	cfgK2Gpt4o := schema.EntityConfigItemKeys(ns1, k2, gpt4o)
	resCfg := schema.ResourceConfigItemKeys(ns1, gpt4)
	sysCfg := schema.SystemConfigItemKeys(ns1)
	resReg := schema.ResourceRegistryItemKeys(ns1)
	ecReg := schema.EntityConfigRegistryItemKeys(ns1)
	prov := schema.ProvisionerStateItemKeys(ns1)
	bK1g4s0 := schema.BucketItemKeys(ns1, k1, gpt4, 0)
	bK1g4s1 := schema.BucketItemKeys(ns1, k1, gpt4, 1)
	bK1g35 := schema.BucketItemKeys(ns1, k1, gpt35, 0)
	bK1g4o := schema.BucketItemKeys(ns1, k1, gpt4o, 0)
	bK2g4 := schema.BucketItemKeys(ns1, k2, gpt4, 0)
	uK1g4h := schema.UsageItemKeys(ns1, k1, gpt4, hour)
	uK1g4d := schema.UsageItemKeys(ns1, k1, gpt4, day)
	uK2g4h := schema.UsageItemKeys(ns1, k2, gpt4, hour)
	uK1g4oh := schema.UsageItemKeys(ns1, k1, gpt4o, hour)
	audK1 := schema.AuditItemKeys(ns1, k1, "01HZX3M0000000000000000001")
	audSys := schema.AuditItemKeys(ns1, "$SYSTEM", "01HZX3M0000000000000000002")
	audRes := schema.AuditItemKeys(ns1, "$RESOURCE:"+gpt4, "01HZX3M0000000000000000003")
	opK1 := schema.OperationItemKeys(ns1, k1, "01HZX3M00000000000000PINC0", "op-1")

	// ns2: the same names, to prove every query is namespace-scoped.
	metaX := schema.EntityMetaItemKeys(ns2, k1, "org-1")
	cfgX := schema.EntityConfigItemKeys(ns2, k1, gpt4)
	bX := schema.BucketItemKeys(ns2, k1, gpt4, 0)
	uX := schema.UsageItemKeys(ns2, k1, gpt4, hour)
	sysX := schema.SystemConfigItemKeys(ns2)

	tableLevel := []schema.ItemKeys{r1a, r1b, r2a, r2b, r3}
	ns1Items := []schema.ItemKeys{
		metaOrg, metaK1, metaK2, metaK3, cfgK1, cfgK2, cfgK1Default, cfgK2Gpt4o, resCfg, sysCfg,
		resReg, ecReg, prov, bK1g4s0, bK1g4s1, bK1g35, bK1g4o, bK2g4, uK1g4h, uK1g4d, uK2g4h,
		uK1g4oh, audK1, audSys, audRes, opK1,
	}
	ns2Items := []schema.ItemKeys{metaX, cfgX, bX, uX, sysX}
	var all []schema.ItemKeys
	all = append(append(append(all, tableLevel...), ns1Items...), ns2Items...)

	seenKinds := map[schema.RecordKind]bool{}
	for _, k := range all {
		seenKinds[k.Kind] = true
		switch k.Kind {
		case schema.KindResourceRegistry, schema.KindEntityConfigRegistry:
			// The registries are maintained by UpdateItem, GSI4 keys set
			// with if_not_exists (docs/design.md §2 R8/R9).
			updateRegistry(ctx, t, tbl, k)
		default:
			item := k.Item()
			item[attrKind] = &types.AttributeValueMemberS{Value: k.Kind.String()}
			_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{
				TableName:           aws.String(tbl.Name),
				Item:                item,
				ConditionExpression: aws.String("attribute_not_exists(PK)"),
			})
			if err != nil {
				t.Fatalf("put %v %+v: %v", k.Kind, k.Key, err)
			}
		}
	}
	for kind := schema.KindNamespaceForward; kind <= schema.KindOperation; kind++ {
		if !seenKinds[kind] {
			t.Fatalf("no item of kind %v written", kind)
		}
	}

	t.Run("GetItem", func(t *testing.T) {
		for _, k := range all {
			out, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{
				TableName:      aws.String(tbl.Name),
				Key:            k.Key.AttributeValues(),
				ConsistentRead: aws.Bool(true),
			})
			if err != nil {
				t.Fatalf("get %+v: %v", k.Key, err)
			}
			if out.Item == nil {
				t.Errorf("%v %+v: not found", k.Kind, k.Key)
				continue
			}
			checkKeyAttrs(t, k, out.Item)
			if got := attrS(out.Item[attrKind]); got != k.Kind.String() {
				t.Errorf("%+v: %s = %q, want %q", k.Key, attrKind, got, k.Kind)
			}
		}
	})

	t.Run("GSI1 children of a parent", func(t *testing.T) {
		got := query(ctx, t, tbl, schema.GSI1, schema.AttrGSI1PK, schema.ParentGSI1PK(ns1, "org-1"), "", "")
		expectKeys(t, got, metaK1, metaK2)
		for _, it := range got {
			// GSI1 projects ALL: the non-key attribute comes back.
			if attrS(it[attrKind]) != "entity-meta" || !strings.HasPrefix(attrS(it[schema.AttrGSI1SK]), "CHILD#") {
				t.Errorf("GSI1 item %v", it)
			}
		}
		expectKeys(t, query(ctx, t, tbl, schema.GSI1, schema.AttrGSI1PK, schema.ParentGSI1PK(ns2, "org-1"), "", ""), metaX)
		expectKeys(t, query(ctx, t, tbl, schema.GSI1, schema.AttrGSI1PK, schema.ParentGSI1PK(ns1, "org-2"), "", ""), metaK3)
		expectKeys(t, query(ctx, t, tbl, schema.GSI1, schema.AttrGSI1PK, schema.ParentGSI1PK(ns1, "solo"), "", ""))
	})

	t.Run("GSI2 buckets and usage of a resource", func(t *testing.T) {
		pk := schema.ResourcePK(ns1, gpt4)
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, pk, schema.AttrGSI2SK, schema.PrefixBucket),
			bK1g4s0, bK1g4s1, bK2g4)
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, pk, schema.AttrGSI2SK, schema.PrefixUsage),
			uK1g4h, uK1g4d, uK2g4h)
		// The whole partition holds nothing else (R6 shares the PK value
		// but writes no GSI2 keys).
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, pk, "", ""),
			bK1g4s0, bK1g4s1, bK2g4, uK1g4h, uK1g4d, uK2g4h)
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, schema.ResourcePK(ns1, gpt4o), schema.AttrGSI2SK, schema.PrefixBucket),
			bK1g4o)
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, schema.ResourcePK(ns2, gpt4), "", ""), bX, uX)
		// Usage for one window: USAGE#{window_key}#.
		expectKeys(t, query(ctx, t, tbl, schema.GSI2, schema.AttrGSI2PK, pk, schema.AttrGSI2SK, schema.PrefixUsage+hour+"#"),
			uK1g4h, uK2g4h)
	})

	t.Run("GSI3 entity configs of a resource", func(t *testing.T) {
		got := query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityConfigGSI3PK(ns1, gpt4), "", "")
		expectKeys(t, got, cfgK1, cfgK2)
		var ids []string
		for _, it := range got {
			ids = append(ids, attrS(it[schema.AttrGSI3SK]))
		}
		if strings.Join(ids, ",") != k2+","+k1 { // sorted by GSI3SK = entity id
			t.Errorf("GSI3SK values = %v, want [%s %s]", ids, k2, k1)
		}
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityConfigGSI3PK(ns1, schema.DefaultResource), "", ""),
			cfgK1Default)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityConfigGSI3PK(ns1, gpt4o), "", ""),
			cfgK2Gpt4o)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityConfigGSI3PK(ns2, gpt4), "", ""), cfgX)
	})

	t.Run("GSI3 buckets of an entity", func(t *testing.T) {
		pk := schema.EntityPK(ns1, k1)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, pk, "", ""),
			bK1g4s0, bK1g4s1, bK1g35, bK1g4o)
		// One resource: the trailing '#' keeps openai/gpt-4o out.
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, pk, schema.AttrGSI3SK, schema.BucketGSI3SKPrefix(gpt4)),
			bK1g4s0, bK1g4s1)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, pk, schema.AttrGSI3SK, schema.BucketGSI3SKPrefix(gpt4o)),
			bK1g4o)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns1, k2), schema.AttrGSI3SK, schema.PrefixBucket),
			bK2g4)
		expectKeys(t, query(ctx, t, tbl, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns2, k1), "", ""), bX)
	})

	t.Run("GSI4 namespace purge and system-level bucket fan-out", func(t *testing.T) {
		expectKeys(t, query(ctx, t, tbl, schema.GSI4, schema.AttrGSI4PK, ns1, "", ""), ns1Items...)
		expectKeys(t, query(ctx, t, tbl, schema.GSI4, schema.AttrGSI4PK, ns2, "", ""), ns2Items...)
		expectKeys(t, query(ctx, t, tbl, schema.GSI4, schema.AttrGSI4PK, schema.ReservedNamespace, "", ""), tableLevel...)
		expectKeys(t, query(ctx, t, tbl, schema.GSI4, schema.AttrGSI4PK, ns1, schema.AttrGSI4SK, schema.PrefixBucket),
			bK1g4s0, bK1g4s1, bK1g35, bK1g4o, bK2g4)
		// R10 is in GSI4 (upstream's writer leaves it out).
		expectKeys(t, query(ctx, t, tbl, schema.GSI4, schema.AttrGSI4PK, ns1, schema.AttrGSI4SK, schema.SystemPK(ns1)),
			sysCfg, resReg, ecReg, prov)
	})

	t.Run("Scan: namespace isolation (J72) and classification", func(t *testing.T) {
		p := dynamodb.NewScanPaginator(tbl.DB, &dynamodb.ScanInput{TableName: aws.String(tbl.Name), Limit: aws.Int32(7)})
		n := 0
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				n++
				pk, sk := attrS(it[schema.AttrPK]), attrS(it[schema.AttrSK])
				info := schema.ClassifyKey(pk, sk)
				if info.Kind.String() != attrS(it[attrKind]) {
					t.Errorf("(%q, %q) classifies as %v, was written as %s", pk, sk, info.Kind, attrS(it[attrKind]))
				}
				gsi4pk := attrS(it[schema.AttrGSI4PK])
				tableRecord := info.Kind >= schema.KindNamespaceForward && info.Kind <= schema.KindVersion
				switch {
				case tableRecord:
					if pk != schema.TableSystemPK || gsi4pk != schema.ReservedNamespace {
						t.Errorf("table-level record (%q, %q) with GSI4PK %q", pk, sk, gsi4pk)
					}
				case gsi4pk != ns1 && gsi4pk != ns2:
					t.Errorf("(%q, %q): GSI4PK %q is not a namespace", pk, sk, gsi4pk)
				case !strings.HasPrefix(pk, gsi4pk+"/"):
					t.Errorf("J72: PK %q does not start with %q", pk, gsi4pk+"/")
				}
			}
		}
		if n != len(all) {
			t.Errorf("scan found %d items, wrote %d", n, len(all))
		}
	})
}

// updateRegistry writes R8 or R9 the way their maintainers do: an
// UpdateItem that adds to the registry and sets the GSI4 keys only when
// absent.
func updateRegistry(ctx context.Context, t *testing.T, tbl *ddbtest.Table, k schema.ItemKeys) {
	t.Helper()
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name),
		Key:       k.Key.AttributeValues(),
		ExpressionAttributeNames: map[string]string{
			"#g4p": schema.AttrGSI4PK, "#g4s": schema.AttrGSI4SK, "#tk": attrKind,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":g4p": &types.AttributeValueMemberS{Value: k.GSI4.PK},
			":g4s": &types.AttributeValueMemberS{Value: k.GSI4.SK},
			":tk":  &types.AttributeValueMemberS{Value: k.Kind.String()},
		},
	}
	if k.Kind == schema.KindResourceRegistry {
		in.UpdateExpression = aws.String("SET #tk = :tk, #g4p = if_not_exists(#g4p, :g4p), #g4s = if_not_exists(#g4s, :g4s) ADD #rs :r")
		in.ExpressionAttributeNames["#rs"] = schema.AttrResources
		in.ExpressionAttributeValues[":r"] = &types.AttributeValueMemberSS{Value: []string{"openai/gpt-4"}}
	} else {
		in.UpdateExpression = aws.String("SET #tk = :tk, #g4p = if_not_exists(#g4p, :g4p), #g4s = if_not_exists(#g4s, :g4s) ADD #r :one")
		in.ExpressionAttributeNames["#r"] = "openai/gpt-4"
		in.ExpressionAttributeValues[":one"] = &types.AttributeValueMemberN{Value: "1"}
	}
	// Twice: the second update must leave the keys as they are.
	for i := 0; i < 2; i++ {
		if _, err := tbl.DB.UpdateItem(ctx, in); err != nil {
			t.Fatalf("update %v: %v", k.Kind, err)
		}
	}
}

// checkKeyAttrs compares the key attributes of a stored item with k: each
// GSI key present exactly when k writes it.
func checkKeyAttrs(t *testing.T, k schema.ItemKeys, item map[string]types.AttributeValue) {
	t.Helper()
	pairs := []struct {
		pkName, skName string
		want           schema.Key
	}{
		{schema.AttrPK, schema.AttrSK, k.Key},
		{schema.AttrGSI1PK, schema.AttrGSI1SK, k.GSI1},
		{schema.AttrGSI2PK, schema.AttrGSI2SK, k.GSI2},
		{schema.AttrGSI3PK, schema.AttrGSI3SK, k.GSI3},
		{schema.AttrGSI4PK, schema.AttrGSI4SK, k.GSI4},
	}
	for _, p := range pairs {
		_, hasPK := item[p.pkName]
		_, hasSK := item[p.skName]
		if p.want.IsZero() {
			if hasPK || hasSK {
				t.Errorf("%v %+v: has %s/%s, which it must not write", k.Kind, k.Key, p.pkName, p.skName)
			}
			continue
		}
		got := schema.Key{PK: attrS(item[p.pkName]), SK: attrS(item[p.skName])}
		if got != p.want {
			t.Errorf("%v %+v: %s/%s = %+v, want %+v", k.Kind, k.Key, p.pkName, p.skName, got, p.want)
		}
	}
}

// query runs a Query on index with pkAttr = pkVal and, when skAttr is set,
// begins_with(skAttr, skPrefix), paging through small pages.
func query(ctx context.Context, t *testing.T, tbl *ddbtest.Table, index, pkAttr, pkVal, skAttr, skPrefix string) []map[string]types.AttributeValue {
	t.Helper()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(tbl.Name),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pkVal}},
		Limit:                     aws.Int32(2),
	}
	if skAttr != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :sk)")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":sk"] = &types.AttributeValueMemberS{Value: skPrefix}
	}
	var items []map[string]types.AttributeValue
	p := dynamodb.NewQueryPaginator(tbl.DB, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("query %s %s=%q: %v", index, pkAttr, pkVal, err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// expectKeys checks that items hold exactly the primary keys of want.
func expectKeys(t *testing.T, items []map[string]types.AttributeValue, want ...schema.ItemKeys) {
	t.Helper()
	var got, exp []string
	for _, it := range items {
		got = append(got, attrS(it[schema.AttrPK])+" | "+attrS(it[schema.AttrSK]))
	}
	for _, k := range want {
		exp = append(exp, k.Key.PK+" | "+k.Key.SK)
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("result set:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(exp, "\n  "))
	}
}
