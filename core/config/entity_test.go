package config_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/internal/ulid"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestCreateGetEntity(t *testing.T) {
	e := newEnv(t)
	clock := newClock()
	seed := [32]byte{7}
	st := e.store(config.WithClock(clock.Now), config.WithEntropy(rand.NewChaCha8(seed)))

	got, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "org-1", config.EntityOptions{
		Name: "Acme", Cascade: true, Metadata: map[string]string{"tier": "gold", "empty": ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantPinc, _ := ulid.New(clock.Now(), rand.NewChaCha8(seed))
	want := config.Entity{
		ID: "org-1", Name: "Acme", Cascade: true, Pinc: wantPinc,
		Metadata:  map[string]string{"tier": "gold", "empty": ""},
		CreatedAt: time.Date(2026, 11, 29, 10, 20, 30, 0, time.UTC),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CreateEntity = %+v, want %+v", got, want)
	}
	read, err := st.GetEntity(e.ctx, e.ns, "org-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("GetEntity = %+v, want %+v", read, want)
	}

	raw := e.get(t, schema.EntityMetaKey(e.ns, "org-1"))
	if sAttr(raw, "created_at") != "2026-11-29T10:20:30Z" || sAttr(raw, "pinc") != wantPinc || sAttr(raw, "entity_id") != "org-1" {
		t.Fatalf("raw META = %v", raw)
	}
	if _, ok := raw["parent_id"].(*types.AttributeValueMemberNULL); !ok {
		t.Fatalf("root parent_id = %#v, want NULL", raw["parent_id"])
	}
	if sAttr(raw, "GSI4PK") != e.ns || sAttr(raw, "GSI4SK") != schema.EntityPK(e.ns, "org-1") {
		t.Fatalf("GSI4 keys = %v %v", raw["GSI4PK"], raw["GSI4SK"])
	}
	if _, ok := raw["GSI1PK"]; ok {
		t.Fatal("a root entity has GSI1 keys")
	}
	if _, ok := raw["pgen"]; ok {
		t.Fatal("create wrote pgen")
	}

	// A default name is the id; a second incarnation gets a new pinc.
	plain, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "plain", config.EntityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Name != "plain" || plain.Pinc == wantPinc || len(plain.Pinc) != ulid.Len || len(plain.Metadata) != 0 {
		t.Fatalf("plain = %+v", plain)
	}

	var exists *config.EntityExistsError
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "org-1", config.EntityOptions{}); !errors.As(err, &exists) || exists.EntityID != "org-1" {
		t.Fatalf("second create = %v, want EntityExistsError", err)
	}
	var nf *config.EntityNotFoundError
	if _, err := st.GetEntity(e.ctx, e.ns, "nobody"); !errors.As(err, &nf) || nf.EntityID != "nobody" {
		t.Fatalf("GetEntity(nobody) = %v", err)
	}
	if _, err := st.GetEntity(e.ctx, "other-ns", "org-1"); !errors.As(err, &nf) {
		t.Fatalf("GetEntity in another namespace = %v", err)
	}
}

func TestCreateEntityValidation(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	cases := []struct {
		ns, id string
		opts   config.EntityOptions
		field  string
	}{
		{e.ns, "", config.EntityOptions{}, schema.FieldEntityID},
		{e.ns, "a#b", config.EntityOptions{}, schema.FieldEntityID},
		{e.ns, "-x", config.EntityOptions{}, schema.FieldEntityID},
		{e.ns, "ok", config.EntityOptions{ParentID: "bad parent"}, schema.FieldParentID},
		{e.ns, "self", config.EntityOptions{ParentID: "self"}, schema.FieldParentID},
		{"", "ok", config.EntityOptions{}, "namespace_id"},
		{"_", "ok", config.EntityOptions{}, "namespace_id"},
		{"a/b", "ok", config.EntityOptions{}, "namespace_id"},
	}
	for _, c := range cases {
		_, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, c.ns, c.id, c.opts)
		var ve *schema.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("CreateEntity(%q, %q, %+v) = %v, want validation error on %s", c.ns, c.id, c.opts, err, c.field)
		}
	}
	if n := e.count(t); n != 0 {
		t.Fatalf("%d items written on invalid input", n)
	}
}

func TestChildren(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	for _, c := range []struct {
		id, parent string
		cascade    bool
	}{{"org", "", false}, {"org2", "", false}, {"k2", "org", true}, {"k1", "org", false}, {"k3", "org2", true}} {
		if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, c.id, config.EntityOptions{ParentID: c.parent, Cascade: c.cascade}); err != nil {
			t.Fatal(err)
		}
	}
	raw := e.get(t, schema.EntityMetaKey(e.ns, "k1"))
	if sAttr(raw, "GSI1PK") != schema.ParentGSI1PK(e.ns, "org") || sAttr(raw, "GSI1SK") != "CHILD#k1" || sAttr(raw, "parent_id") != "org" {
		t.Fatalf("child META = %v", raw)
	}
	kids, err := st.Children(e.ctx, e.ns, "org")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 || kids[0].ID != "k1" || kids[1].ID != "k2" || kids[0].ParentID != "org" || kids[0].Cascade || !kids[1].Cascade {
		t.Fatalf("Children(org) = %+v", kids)
	}
	if kids, err := st.Children(e.ctx, e.ns, "k1"); err != nil || len(kids) != 0 {
		t.Fatalf("Children(k1) = %v, %v", kids, err)
	}

	// A missing parent: nothing is written.
	var nf *config.EntityNotFoundError
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "orphan", config.EntityOptions{ParentID: "ghost"}); !errors.As(err, &nf) || nf.EntityID != "ghost" {
		t.Fatalf("create under a missing parent = %v", err)
	}
	if e.get(t, schema.EntityMetaKey(e.ns, "orphan")) != nil {
		t.Fatal("orphan written")
	}

	// A cycle through a dangling parent_id: b's parent a is deleted, then a
	// is recreated under b.
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "a", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "b", config.EntityOptions{ParentID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Writer(capability.ConfigWrite{}).DeleteEntity(e.ctx, e.ns, "a"); err != nil {
		t.Fatal(err)
	}
	var ie *schema.InvalidIdentifierError
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "a", config.EntityOptions{ParentID: "b"}); !errors.As(err, &ie) || ie.Field != schema.FieldParentID {
		t.Fatalf("cycle = %v, want InvalidIdentifierError on parent_id", err)
	}
	// Under another parent it is fine.
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "a", config.EntityOptions{ParentID: "org"}); err != nil {
		t.Fatal(err)
	}
}

// TestCreateEntityParentDeletedConcurrently: the parent vanishes between the
// ancestry read and the write; the transaction's ConditionCheck catches it.
func TestCreateEntityParentDeletedConcurrently(t *testing.T) {
	e := newEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	st := config.NewStore(p.DynamoDB(), e.tbl.Name)
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "parent", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Add(faultproxy.Rule{Operation: "TransactWriteItems", Fault: faultproxy.Delay(0), Count: 1,
		OnFire: func(string) { e.del(t, schema.EntityMetaKey(e.ns, "parent")) }})
	var nf *config.EntityNotFoundError
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "child", config.EntityOptions{ParentID: "parent"}); !errors.As(err, &nf) || nf.EntityID != "parent" {
		t.Fatalf("CreateEntity = %v, want EntityNotFoundError(parent)", err)
	}
	if e.get(t, schema.EntityMetaKey(e.ns, "child")) != nil {
		t.Fatal("child written although its parent was gone")
	}
}

func TestDeleteEntity(t *testing.T) {
	e := newEnv(t)
	clock := newClock()
	st := e.store(config.WithClock(clock.Now))
	ctx, ns := e.ctx, e.ns
	for _, c := range []struct{ id, parent string }{{"org", ""}, {"e", "org"}, {"f", "org"}} {
		if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, c.id, config.EntityOptions{ParentID: c.parent}); err != nil {
			t.Fatal(err)
		}
	}
	rpm := []limit.Limit{limit.PerMinute("rpm", 10)}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("sys", 1)}, config.SystemOptions{}))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r1", rpm))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", schema.DefaultResource, rpm))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "f", "r1", rpm))

	// Buckets: 2 + 30 for e (more than one BatchWriteItem chunk), 1 for f,
	// a usage snapshot in e's partition.
	var eBuckets []schema.Key
	for shard := range 2 {
		eBuckets = append(eBuckets, schema.BucketKey(ns, "e", "r1", shard))
	}
	for shard := range 30 {
		eBuckets = append(eBuckets, schema.BucketKey(ns, "e", "openai/gpt-4", shard))
	}
	for _, k := range eBuckets {
		info := schema.ClassifyKey(k.PK, k.SK)
		e.put(t, schema.BucketItemKeys(ns, "e", info.Resource, info.Shard), map[string]types.AttributeValue{"rf": n("1")})
	}
	e.put(t, schema.BucketItemKeys(ns, "f", "r1", 0), map[string]types.AttributeValue{"rf": n("1")})
	e.put(t, schema.UsageItemKeys(ns, "e", "r1", "2026-11-29T10:00:00Z"), map[string]types.AttributeValue{"rpm": n("3")})

	// Warm the cache with e's own limits.
	res, err := st.Resolver().Resolve(ctx, ns, "e", "r1")
	if err != nil || res.Source != config.LevelEntity {
		t.Fatalf("Resolve before delete = %+v, %v", res, err)
	}

	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntity(ctx, ns, "e"))

	for _, k := range append(eBuckets,
		schema.EntityMetaKey(ns, "e"), schema.EntityConfigKey(ns, "e", "r1"),
		schema.EntityConfigKey(ns, "e", schema.DefaultResource), schema.UsageKey(ns, "e", "r1", "2026-11-29T10:00:00Z")) {
		if e.get(t, k) != nil {
			t.Errorf("%v survived", k)
		}
	}
	for _, k := range []schema.Key{schema.EntityMetaKey(ns, "org"), schema.EntityMetaKey(ns, "f"),
		schema.EntityConfigKey(ns, "f", "r1"), schema.BucketKey(ns, "f", "r1", 0)} {
		if e.get(t, k) == nil {
			t.Errorf("%v was deleted", k)
		}
	}
	reg := e.get(t, schema.EntityConfigRegistryKey(ns))
	if nAttr(reg, "r1") != "1" {
		t.Errorf("R9 r1 = %v, want 1", reg["r1"])
	}
	if _, ok := reg[schema.DefaultResource]; ok {
		t.Errorf("R9 _default_ = %v, want removed", reg[schema.DefaultResource])
	}
	// The cache forgot e: resolution falls through to the system level.
	res, err = st.Resolver().Resolve(ctx, ns, "e", "r1")
	if err != nil || res.Source != config.LevelSystem {
		t.Fatalf("Resolve after delete = %+v, %v", res, err)
	}
	var nf *config.EntityNotFoundError
	if err := st.Writer(capability.ConfigWrite{}).DeleteEntity(ctx, ns, "e"); !errors.As(err, &nf) {
		t.Fatalf("second DeleteEntity = %v", err)
	}
	if err := st.Writer(capability.ConfigWrite{}).DeleteEntity(ctx, ns, "bad#id"); !schema.IsValidationError(err) {
		t.Fatalf("DeleteEntity(bad#id) = %v", err)
	}
}

// TestDeleteEntityRetriesUnprocessed: a BatchWriteItem answered with
// UnprocessedItems is re-sent.
func TestDeleteEntityRetriesUnprocessed(t *testing.T) {
	e := newEnv(t)
	fake := &unprocessedWrites{DB: e.tbl.DB, left: 2}
	st := config.NewStore(fake, e.tbl.Name, config.WithBatchRetries(5, time.Millisecond))
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, "e", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	for shard := range 5 {
		e.put(t, schema.BucketItemKeys(e.ns, "e", "r", shard), map[string]types.AttributeValue{"rf": n("1")})
	}
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntity(e.ctx, e.ns, "e"))
	if n := e.count(t); n != 0 {
		t.Fatalf("%d items left", n)
	}
	if fake.calls < 3 {
		t.Fatalf("BatchWriteItem calls = %d, want the unprocessed ones re-sent", fake.calls)
	}
}

// unprocessedWrites answers the first `left` BatchWriteItems by writing only
// the first request and returning the rest as unprocessed.
type unprocessedWrites struct {
	config.DB
	left  int
	calls int
}

func (u *unprocessedWrites) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	u.calls++
	if u.left == 0 {
		return u.DB.BatchWriteItem(ctx, in, optFns...)
	}
	u.left--
	var table string
	var reqs []types.WriteRequest
	for tb, r := range in.RequestItems {
		table, reqs = tb, r
	}
	first := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs[:1]}}
	if _, err := u.DB.BatchWriteItem(ctx, first, optFns...); err != nil {
		return nil, err
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{table: reqs[1:]}}, nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
