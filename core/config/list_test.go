package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestListEntities: a namespace's recorded entities in id order, page by
// page without a repeat or a gap, whatever else their partitions hold
// (configs, usage snapshots) and whatever other namespaces and entities
// without a record hold; ids that begin with another id are neither
// skipped nor repeated at a page boundary.
func TestListEntities(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	w := st.Writer(capability.ConfigWrite{})
	ids := []string{"a", "a-1", "a.b", "ab", "b", "org:1", "z@x"}
	for _, id := range ids {
		if _, err := w.CreateEntity(e.ctx, e.ns, id, config.EntityOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.CreateEntity(e.ctx, e.ns, "child", config.EntityOptions{ParentID: "a"}); err != nil {
		t.Fatal(err)
	}
	ids = []string{"a", "a-1", "a.b", "ab", "b", "child", "org:1", "z@x"}
	// Items beside the META ones, and an entity with config but no record.
	if err := w.SetEntityLimits(e.ctx, e.ns, "a", "r", []limit.Limit{limit.PerMinute("rpm", 5)}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetEntityLimits(e.ctx, e.ns, "ghost", "r", []limit.Limit{limit.PerMinute("rpm", 5)}); err != nil {
		t.Fatal(err)
	}
	e.put(t, schema.UsageItemKeys(e.ns, "ab", "r", "2026-11-29T10:00:00Z"), map[string]types.AttributeValue{"window": schema.Str("hourly")})
	other := newEnvOn(t, e.tbl)
	if _, err := other.store().Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, other.ns, "elsewhere", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}

	got, next, err := st.ListEntities(e.ctx, e.ns, "", 0)
	if err != nil || next != "" {
		t.Fatalf("ListEntities: next %q, %v", next, err)
	}
	if names := entityIDs(got); !reflect.DeepEqual(names, ids) {
		t.Fatalf("everything: %v, want %v", names, ids)
	}
	if got[5].ParentID != "a" {
		t.Errorf("child decoded as %+v", got[5])
	}
	for _, size := range []int{1, 2, 3, 8} {
		var all []string
		after := ""
		for pages := 0; ; pages++ {
			page, next, err := st.ListEntities(e.ctx, e.ns, after, size)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > size {
				t.Fatalf("size %d: a page of %d", size, len(page))
			}
			all = append(all, entityIDs(page)...)
			if next == "" {
				break
			}
			if pages > 20 {
				t.Fatal("pages without end")
			}
			after = next
		}
		if !reflect.DeepEqual(all, ids) {
			t.Errorf("pages of %d: %v, want %v", size, all, ids)
		}
	}
	if page, next, err := st.ListEntities(e.ctx, e.ns, "z@x", 0); err != nil || len(page) != 0 || next != "" {
		t.Errorf("after the last: %v %q %v", page, next, err)
	}
	if _, _, err := st.ListEntities(e.ctx, e.ns, "bad#id", 0); !schema.IsValidationError(err) {
		t.Errorf("a bad after: %v", err)
	}
	empty := newEnvOn(t, e.tbl)
	if page, next, err := empty.store().ListEntities(e.ctx, empty.ns, "", 10); err != nil || page == nil || len(page) != 0 || next != "" {
		t.Errorf("an empty namespace: %#v %q %v", page, next, err)
	}
}

func entityIDs(es []config.Entity) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestEntityConfigsAndLevelConfigs: an entity's configs, `_default_` first
// then by resource, each with its limits, access and cascade; one level's
// config with its settings; and the registries' resources.
func TestEntityConfigsAndLevelConfigs(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	w := st.Writer(capability.ConfigWrite{})
	rpm := []limit.Limit{limit.PerMinute("rpm", 5)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.SetEntityLimits(e.ctx, e.ns, "k", "r2", rpm))
	must(w.SetEntityLimits(e.ctx, e.ns, "k", schema.DefaultResource, []limit.Limit{limit.PerHour("rph", 50)}))
	must(w.SetAccess(e.ctx, e.ns, "k", "r1", config.AccessEnforce))
	must(w.SetEntityLimits(e.ctx, e.ns, "k2", "r2", rpm))
	must(w.SetResourceLimits(e.ctx, e.ns, "r2", rpm))
	must(w.SetResourceLimits(e.ctx, e.ns, "r3", rpm))
	must(w.SetAccess(e.ctx, e.ns, "", "r3", config.AccessDisabled))
	must(w.SetAccess(e.ctx, e.ns, "", "r4", config.AccessDisabled))

	got, err := st.EntityConfigs(e.ctx, e.ns, "k")
	must(err)
	want := []config.EntityConfig{
		{Resource: "_default_", Config: config.Config{Limits: []limit.Limit{limit.PerHour("rph", 50)}}},
		{Resource: "r1", Config: config.Config{Disabled: config.AccessEnforce}},
		{Resource: "r2", Config: config.Config{Limits: rpm}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EntityConfigs = %+v, want %+v", got, want)
	}
	if got, err := st.EntityConfigs(e.ctx, e.ns, "nobody"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no configs: %#v, %v", got, err)
	}
	if c, err := st.GetEntityConfig(e.ctx, e.ns, "k", "r1"); err != nil || c.Disabled != config.AccessEnforce || len(c.Limits) != 0 {
		t.Fatalf("GetEntityConfig: %+v, %v", c, err)
	}
	if c, err := st.GetResourceConfig(e.ctx, e.ns, "r3"); err != nil || c.Disabled != config.AccessDisabled || !reflect.DeepEqual(c.Limits, rpm) {
		t.Fatalf("GetResourceConfig: %+v, %v", c, err)
	}
	if c, err := st.GetResourceConfig(e.ctx, e.ns, "none"); err != nil || !reflect.DeepEqual(c, config.Config{}) {
		t.Fatalf("GetResourceConfig of nothing: %+v, %v", c, err)
	}
	if _, err := st.GetResourceConfig(e.ctx, e.ns, "_default_"); !schema.IsValidationError(err) {
		t.Fatalf("GetResourceConfig(_default_): %v", err)
	}

	res, err := st.ListResources(e.ctx, e.ns)
	must(err)
	wantRes := []config.RegisteredResource{
		{Name: "r1", EntityConfigs: 1}, {Name: "r2", OwnConfig: true, EntityConfigs: 2}, {Name: "r3", OwnConfig: true}, {Name: "r4", OwnConfig: true},
	}
	if !reflect.DeepEqual(res, wantRes) {
		t.Fatalf("ListResources = %+v, want %+v", res, wantRes)
	}
	// Limits deleted: the registries follow (the resource's own config is
	// gone; one entity config is left on r2).
	must(w.DeleteResourceLimits(e.ctx, e.ns, "r2"))
	must(w.DeleteEntityLimits(e.ctx, e.ns, "k2", "r2"))
	res, err = st.ListResources(e.ctx, e.ns)
	must(err)
	wantRes = []config.RegisteredResource{{Name: "r1", EntityConfigs: 1}, {Name: "r2", EntityConfigs: 1}, {Name: "r3", OwnConfig: true}, {Name: "r4", OwnConfig: true}}
	if !reflect.DeepEqual(res, wantRes) {
		t.Fatalf("after deletes: %+v, want %+v", res, wantRes)
	}
	if res, err := newEnvOn(t, e.tbl).store().ListResources(e.ctx, newEnvOn(t, e.tbl).ns); err != nil || len(res) != 0 {
		t.Fatalf("an empty namespace: %+v %v", res, err)
	}

	// An item this version cannot read fails the listing, typed.
	e.set(t, schema.EntityConfigKey(e.ns, "k", "r2"), map[string]types.AttributeValue{"inherit_limits": &types.AttributeValueMemberBOOL{Value: true}})
	_, err = st.EntityConfigs(e.ctx, e.ns, "k")
	var unsup *config.UnsupportedConfigError
	if !errors.As(err, &unsup) || !strings.Contains(unsup.Attribute, "inherit_limits") {
		t.Fatalf("an unsupported item: %v", err)
	}
}
