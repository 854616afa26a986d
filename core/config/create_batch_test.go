package config_test

import (
	"crypto/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// CreateEntityConfigs writes, attribute for attribute, the items the
// setters write for the same input, and the registry counts them; a batch
// with an item that exists already writes nothing and is handed back.
func TestCreateEntityConfigsIsTheSetters(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	other, err := schema.NewNamespaceID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cs := []config.NewEntityConfig{
		{Entity: "u", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 5), limit.PerMinute("tpm", 100)}},
		{Entity: "v", Resource: "r", Access: config.AccessDisabled},
		{Entity: "w", Resource: "_default_", Limits: []limit.Limit{limit.PerMinute("rpm", 7)}, Access: config.AccessBypass, Cascade: config.CascadeOn},
		{Entity: "x", Resource: "q", Cascade: config.CascadeOff},
		{Entity: "y", Resource: "r"}, // nothing to write
	}
	left, err := st.Writer(capability.ConfigWrite{}).CreateEntityConfigs(e.ctx, e.ns, cs)
	if err != nil || len(left) != 0 {
		t.Fatalf("%v %v", left, err)
	}
	for _, c := range cs {
		if len(c.Limits) > 0 {
			if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, other, c.Entity, c.Resource, c.Limits); err != nil {
				t.Fatal(err)
			}
		}
		if c.Access != config.AccessInherit {
			if err := st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, other, c.Entity, c.Resource, c.Access); err != nil {
				t.Fatal(err)
			}
		}
		if c.Cascade != config.CascadeUnset {
			if err := st.Writer(capability.ConfigWrite{}).SetCascade(e.ctx, other, c.Entity, c.Resource, c.Cascade); err != nil {
				t.Fatal(err)
			}
		}
		batch, setters := e.get(t, schema.EntityConfigKey(e.ns, c.Entity, c.Resource)), e.get(t, schema.EntityConfigKey(other, c.Entity, c.Resource))
		if !reflect.DeepEqual(rename(batch, e.ns, other), rename(setters, other, other)) {
			t.Errorf("%s/%s:\n batch   %v\n setters %v", c.Entity, c.Resource, rename(batch, e.ns, other), rename(setters, other, other))
		}
	}
	reg, regSetters := e.get(t, schema.EntityConfigRegistryKey(e.ns)), e.get(t, schema.EntityConfigRegistryKey(other))
	if !reflect.DeepEqual(rename(reg, e.ns, other), rename(regSetters, other, other)) {
		t.Errorf("registry:\n batch   %v\n setters %v", rename(reg, e.ns, other), rename(regSetters, other, other))
	}

	again := []config.NewEntityConfig{
		{Entity: "z", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 1)}},
		{Entity: "u", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 2)}},
	}
	left, err = st.Writer(capability.ConfigWrite{}).CreateEntityConfigs(e.ctx, e.ns, again)
	if err != nil || len(left) != 2 {
		t.Fatalf("a batch with an existing item: %v %v", left, err)
	}
	if it := e.get(t, schema.EntityConfigKey(e.ns, "z", "r")); it != nil {
		t.Fatal("the refused batch wrote z")
	}
}

// rename is an item with namespace from's id replaced by to's in every
// string, as printed.
func rename(it map[string]types.AttributeValue, from, to string) map[string]string {
	out := map[string]string{}
	for k, v := range it {
		out[k] = strings.ReplaceAll(ddbtest.Render(v), from, to)
	}
	return out
}

// DeleteEntityConfigs deletes whole the items that hold nothing but what
// the setters manage, and the registry forgets the resource; an item with
// an attribute this version does not know is handed back untouched.
func TestDeleteEntityConfigs(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	cs := []config.NewEntityConfig{
		{Entity: "u", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 5)}, Access: config.AccessDisabled},
		{Entity: "v", Resource: "r", Cascade: config.CascadeOn},
		{Entity: "w", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 7)}},
	}
	if left, err := st.Writer(capability.ConfigWrite{}).CreateEntityConfigs(e.ctx, e.ns, cs); err != nil || len(left) != 0 {
		t.Fatalf("%v %v", left, err)
	}
	wk := schema.EntityConfigKey(e.ns, "w", "r")
	e.set(t, wk, map[string]types.AttributeValue{"future_attr": &types.AttributeValueMemberS{Value: "x"}})
	items := map[schema.Key]map[string]types.AttributeValue{}
	for _, c := range cs {
		k := schema.EntityConfigKey(e.ns, c.Entity, c.Resource)
		items[k] = e.get(t, k)
	}
	left, err := st.Writer(capability.ConfigWrite{}).DeleteEntityConfigs(e.ctx, e.ns, items)
	if err != nil || len(left) != 1 || left[0] != wk {
		t.Fatalf("left %v, %v", left, err)
	}
	for _, en := range []string{"u", "v"} {
		if it := e.get(t, schema.EntityConfigKey(e.ns, en, "r")); it != nil {
			t.Errorf("%s left: %v", en, it)
		}
	}
	if e.get(t, wk) == nil {
		t.Fatal("the item with an unknown attribute was deleted")
	}
	if got := nAttr(e.get(t, schema.EntityConfigRegistryKey(e.ns)), "r"); got != "1" {
		t.Fatalf("registry count for r: %q, want 1 (w remains)", got)
	}
}
