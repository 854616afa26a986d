package config_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// level abstracts the four setter/getter/deleter triples for table tests.
type level struct {
	name  string
	keys  func(ns string) schema.ItemKeys
	ident map[string]types.AttributeValue
	set   func(ctx context.Context, st *config.Store, ns string, ls []limit.Limit) error
	get   func(ctx context.Context, st *config.Store, ns string) ([]limit.Limit, error)
	del   func(ctx context.Context, st *config.Store, ns string) error
}

func levels() []level {
	return []level{
		{
			name:  "system",
			keys:  schema.SystemConfigItemKeys,
			ident: map[string]types.AttributeValue{},
			set: func(ctx context.Context, st *config.Store, ns string, ls []limit.Limit) error {
				return st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, ls, config.SystemOptions{})
			},
			get: func(ctx context.Context, st *config.Store, ns string) ([]limit.Limit, error) {
				ls, _, err := st.GetSystemLimits(ctx, ns)
				return ls, err
			},
			del: func(ctx context.Context, st *config.Store, ns string) error {
				return st.Writer(capability.ConfigWrite{}).DeleteSystemLimits(ctx, ns)
			},
		},
		{
			name:  "resource",
			keys:  func(ns string) schema.ItemKeys { return schema.ResourceConfigItemKeys(ns, "openai/gpt-4") },
			ident: map[string]types.AttributeValue{"resource": s("openai/gpt-4")},
			set: func(ctx context.Context, st *config.Store, ns string, ls []limit.Limit) error {
				return st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "openai/gpt-4", ls)
			},
			get: func(ctx context.Context, st *config.Store, ns string) ([]limit.Limit, error) {
				return st.GetResourceLimits(ctx, ns, "openai/gpt-4")
			},
			del: func(ctx context.Context, st *config.Store, ns string) error {
				return st.Writer(capability.ConfigWrite{}).DeleteResourceLimits(ctx, ns, "openai/gpt-4")
			},
		},
		entityLevel("entity", "key:1@org", "openai/gpt-4"),
		entityLevel("entity_default", "key:1@org", schema.DefaultResource),
	}
}

func entityLevel(name, entity, resource string) level {
	return level{
		name:  name,
		keys:  func(ns string) schema.ItemKeys { return schema.EntityConfigItemKeys(ns, entity, resource) },
		ident: map[string]types.AttributeValue{"entity_id": s(entity), "resource": s(resource)},
		set: func(ctx context.Context, st *config.Store, ns string, ls []limit.Limit) error {
			return st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, entity, resource, ls)
		},
		get: func(ctx context.Context, st *config.Store, ns string) ([]limit.Limit, error) {
			return st.GetEntityLimits(ctx, ns, entity, resource)
		},
		del: func(ctx context.Context, st *config.Store, ns string) error {
			return st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, entity, resource)
		},
	}
}

// TestLevelSetGetDelete writes every level, checks the exact item, replaces
// the set, and deletes it.
func TestLevelSetGetDelete(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	for _, lv := range levels() {
		t.Run(lv.name, func(t *testing.T) {
			first := []limit.Limit{limit.PerMinute("tpm", 100_000).WithBurst(150_000), limit.PerMinute("rpm", 60)}
			must(t, lv.set(e.ctx, st, e.ns, first))
			got, err := lv.get(e.ctx, st, e.ns)
			must(t, err)
			if want := []limit.Limit{first[1], first[0]}; !reflect.DeepEqual(got, want) {
				t.Fatalf("get = %v, want %v (sorted)", got, want)
			}
			// The exact item: keys, GSI keys, identity, config_version, limits.
			k := lv.keys(e.ns)
			want := k.Item()
			for a, v := range lv.ident {
				want[a] = v
			}
			want["config_version"] = n("1")
			for a, v := range merge(lim("rpm", "60", "60", "60"), lim("tpm", "150000", "100000", "60")) {
				want[a] = v
			}
			if raw := e.get(t, k.Key); !reflect.DeepEqual(raw, want) {
				t.Fatalf("item =\n%v\nwant\n%v", raw, want)
			}

			// Full replacement: rpm disappears, x.y-z_1 appears (soft).
			second := []limit.Limit{limit.Custom("x.y-z_1", 5, 1, 10*time.Second).AsSoft(), limit.PerHour("tpm", 7)}
			must(t, lv.set(e.ctx, st, e.ns, second))
			got, err = lv.get(e.ctx, st, e.ns)
			must(t, err)
			if want := []limit.Limit{second[1], second[0]}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after replace get = %v, want %v", got, want)
			}
			raw := e.get(t, k.Key)
			if _, ok := raw["l_rpm_cp"]; ok {
				t.Fatalf("replaced limit rpm still on the item: %v", raw)
			}
			if v, ok := raw["l_x.y-z_1_soft"].(*types.AttributeValueMemberBOOL); !ok || !v.Value {
				t.Fatalf("soft flag = %v", raw["l_x.y-z_1_soft"])
			}

			must(t, lv.del(e.ctx, st, e.ns))
			if raw := e.get(t, k.Key); raw != nil {
				t.Fatalf("item after delete = %v", raw)
			}
			got, err = lv.get(e.ctx, st, e.ns)
			if err != nil || len(got) != 0 {
				t.Fatalf("get after delete = %v, %v", got, err)
			}
			must(t, lv.del(e.ctx, st, e.ns)) // deleting nothing is a no-op
		})
	}
}

// TestSiblingsSurvive: disabled, cascade and unknown attributes written by
// someone else survive a limits update; stale limit attributes and sched_tz
// do not; a delete keeps the siblings.
func TestSiblingsSurvive(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	for _, lv := range levels() {
		t.Run(lv.name, func(t *testing.T) {
			k := lv.keys(e.ns).Key
			must(t, lv.set(e.ctx, st, e.ns, []limit.Limit{limit.PerMinute("rpm", 60)}))
			siblings := map[string]types.AttributeValue{"zz_future": s("keep"), "audit_retention_days": n("30")}
			if lv.name == "system" {
				siblings["on_unavailable"] = s("allow")
			} else {
				siblings["disabled"] = b(true)
				siblings["cascade"] = b(false)
			}
			stale := map[string]types.AttributeValue{"l_rpm_bx": n("90"), "sched_tz": s("Europe/Paris"),
				"w_sess_cp": n("1"), "w_sess_ra": n("0"), "w_sess_rp": n("60"), "w_sess_rsa": n("60"), "l_rpm_soft": b(true)}
			e.set(t, k, merge(siblings, stale))

			must(t, lv.set(e.ctx, st, e.ns, []limit.Limit{limit.PerSecond("rps", 5)}))
			raw := e.get(t, k)
			for a, v := range siblings {
				if !reflect.DeepEqual(raw[a], v) {
					t.Errorf("sibling %s = %v, want %v", a, raw[a], v)
				}
			}
			for a := range merge(stale, lim("rpm", "", "", "")) {
				if _, ok := raw[a]; ok {
					t.Errorf("stale %s survived the replacement", a)
				}
			}
			lvl := map[string]config.Level{"system": config.LevelSystem, "resource": config.LevelResource,
				"entity": config.LevelEntity, "entity_default": config.LevelEntityDefault}[lv.name]
			d, err := config.DecodeConfigItem(lvl, raw)
			must(t, err)
			if !reflect.DeepEqual(d.Limits, []limit.Limit{limit.PerSecond("rps", 5)}) {
				t.Fatalf("limits = %v", d.Limits)
			}
			if lv.name != "system" && (d.Disabled != config.AccessDisabled || d.Cascade != config.CascadeOff) {
				t.Fatalf("access = %v %v", d.Disabled, d.Cascade)
			}

			// Deleting limits keeps the siblings (a kill switch is not lifted).
			must(t, lv.del(e.ctx, st, e.ns))
			raw = e.get(t, k)
			if raw == nil {
				t.Fatal("delete removed an item that still holds siblings")
			}
			for a, v := range siblings {
				if !reflect.DeepEqual(raw[a], v) {
					t.Errorf("after delete, sibling %s = %v, want %v", a, raw[a], v)
				}
			}
			if got, err := lv.get(e.ctx, st, e.ns); err != nil || len(got) != 0 {
				t.Fatalf("limits after delete = %v, %v", got, err)
			}
			must(t, lv.del(e.ctx, st, e.ns)) // nothing left to delete
			if e.get(t, k) == nil {
				t.Fatal("second delete removed the siblings")
			}
		})
	}
}

func TestSystemOnUnavailable(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	rpm := []limit.Limit{limit.PerMinute("rpm", 1)}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, rpm, config.SystemOptions{OnUnavailable: config.OnUnavailableAllow}))
	_, o, err := st.GetSystemLimits(e.ctx, e.ns)
	if err != nil || o != config.OnUnavailableAllow {
		t.Fatalf("on_unavailable = %q, %v", o, err)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, rpm, config.SystemOptions{})) // kept
	if _, o, _ = st.GetSystemLimits(e.ctx, e.ns); o != config.OnUnavailableAllow {
		t.Fatalf("on_unavailable after a set without it = %q", o)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, rpm, config.SystemOptions{OnUnavailable: config.OnUnavailableBlock}))
	if _, o, _ = st.GetSystemLimits(e.ctx, e.ns); o != config.OnUnavailableBlock {
		t.Fatalf("on_unavailable = %q, want block", o)
	}
	err = st.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, rpm, config.SystemOptions{OnUnavailable: "sometimes"})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || ve.Field != schema.FieldOnUnavailable {
		t.Fatalf("bad on_unavailable = %v", err)
	}
}

func TestRegistries(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	ctx, ns := e.ctx, e.ns
	ls := []limit.Limit{limit.PerMinute("rpm", 1)}
	counter := func(r string) string {
		return nAttr(e.get(t, schema.EntityConfigRegistryKey(ns)), r)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e1", "gpt-4", ls))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e1", "gpt-4", ls)) // an update: no second count
	if c := counter("gpt-4"); c != "1" {
		t.Fatalf("R9 gpt-4 = %q, want 1", c)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e2", "gpt-4", ls))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e1", schema.DefaultResource, ls))
	if counter("gpt-4") != "2" || counter(schema.DefaultResource) != "1" {
		t.Fatalf("R9 = %v", e.get(t, schema.EntityConfigRegistryKey(ns)))
	}
	reg := e.get(t, schema.EntityConfigRegistryKey(ns))
	if sAttr(reg, "GSI4PK") != ns || sAttr(reg, "GSI4SK") != schema.SystemPK(ns) {
		t.Fatalf("R9 GSI4 keys = %v", reg)
	}
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "e1", "gpt-4"))
	if c := counter("gpt-4"); c != "1" {
		t.Fatalf("R9 gpt-4 after one delete = %q", c)
	}
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "e2", "gpt-4"))
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "e2", "gpt-4")) // absent: no decrement
	if _, ok := e.get(t, schema.EntityConfigRegistryKey(ns))["gpt-4"]; ok {
		t.Fatalf("R9 gpt-4 not removed at 0: %v", e.get(t, schema.EntityConfigRegistryKey(ns)))
	}
	if counter(schema.DefaultResource) != "1" {
		t.Fatal("R9 _default_ changed")
	}

	resources := func() []string {
		it := e.get(t, schema.ResourceRegistryKey(ns))
		ss, _ := it["resources"].(*types.AttributeValueMemberSS)
		if ss == nil {
			return nil
		}
		return slices.Sorted(slices.Values(ss.Value))
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt-4", ls))
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "claude/3", ls))
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt-4", ls))
	if r := resources(); !reflect.DeepEqual(r, []string{"claude/3", "gpt-4"}) {
		t.Fatalf("R8 = %v", r)
	}
	reg = e.get(t, schema.ResourceRegistryKey(ns))
	if sAttr(reg, "GSI4PK") != ns || sAttr(reg, "GSI4SK") != schema.SystemPK(ns) {
		t.Fatalf("R8 GSI4 keys = %v", reg)
	}
	must(t, st.Writer(capability.ConfigWrite{}).DeleteResourceLimits(ctx, ns, "gpt-4"))
	if r := resources(); !reflect.DeepEqual(r, []string{"claude/3"}) {
		t.Fatalf("R8 after delete = %v", r)
	}
	// A resource item that keeps a sibling still leaves the registry.
	e.set(t, schema.ResourceConfigKey(ns, "claude/3"), map[string]types.AttributeValue{"disabled": b(true)})
	must(t, st.Writer(capability.ConfigWrite{}).DeleteResourceLimits(ctx, ns, "claude/3"))
	if r := resources(); len(r) != 0 {
		t.Fatalf("R8 after deleting limits next to disabled = %v", r)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "claude/3", ls)) // back in, sibling kept
	if r := resources(); !reflect.DeepEqual(r, []string{"claude/3"}) {
		t.Fatalf("R8 = %v", r)
	}
}

// TestSetterValidation: nothing is written on invalid input.
func TestSetterValidation(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	ctx, ns := e.ctx, e.ns
	ok := []limit.Limit{limit.PerMinute("rpm", 1)}
	many := make([]limit.Limit, config.MaxLimitsPerLevel+1)
	for i := range many {
		many[i] = limit.PerMinute(fmt.Sprintf("l%d", i), 1)
	}
	calls := []struct {
		name  string
		err   error
		field string
	}{
		{"empty set", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r", nil), schema.FieldLimits},
		{"too many", st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "r", many), schema.FieldLimits},
		{"bad limit", st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("rpm", 0)}, config.SystemOptions{}), limit.FieldCapacity},
		{"quota", st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.Custom("q", 1, 0, time.Hour)}, config.SystemOptions{}), limit.FieldRefillAmount},
		{"duplicate", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r", []limit.Limit{ok[0], ok[0]}), schema.FieldLimitName},
		{"reserved name", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r", []limit.Limit{limit.PerSecond("wcu", 1)}), schema.FieldLimitName},
		{"soft wcu", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r", []limit.Limit{limit.PerSecond("wcu", 1).AsSoft()}), limit.FieldSoft},
		{"bad entity", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e#1", "r", ok), schema.FieldEntityID},
		{"bad scope", st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "r#1", ok), schema.FieldResource},
		{"_default_ resource", st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, schema.DefaultResource, ok), schema.FieldResource},
		{"bad namespace", st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, "x/y", ok, config.SystemOptions{}), "namespace_id"},
		{"bad on_unavailable", st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, ok, config.SystemOptions{OnUnavailable: "open"}), schema.FieldOnUnavailable},
		{"get bad resource", func() error { _, err := st.GetResourceLimits(ctx, ns, ""); return err }(), schema.FieldResource},
		{"delete bad entity", st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "", "r"), schema.FieldEntityID},
	}
	for _, c := range calls {
		var ve *schema.ValidationError
		if !errors.As(c.err, &ve) || ve.Field != c.field {
			t.Errorf("%s: %v, want a validation error on %s", c.name, c.err, c.field)
		}
	}
	if n := e.count(t); n != 0 {
		t.Fatalf("%d items written on invalid input", n)
	}
}

// TestMergeItemsRefused: docs/design.md §7 — a level carrying the ADR-143 merge
// fields is neither read nor replaced; deleting its limits clears them.
func TestMergeItemsRefused(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	k := schema.EntityConfigItemKeys(e.ns, "e", "r")
	e.put(t, k, merge(lim("rpm", "60", "60", "60"), attrs{"inherit_limits": b(true), "disabled": b(false)}))
	var ue *config.UnsupportedConfigError
	if _, err := st.GetEntityLimits(e.ctx, e.ns, "e", "r"); !errors.As(err, &ue) || ue.Attribute != "inherit_limits" {
		t.Fatalf("get = %v", err)
	}
	before := e.get(t, k.Key)
	if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "e", "r", []limit.Limit{limit.PerMinute("rpm", 1)}); !errors.As(err, &ue) {
		t.Fatalf("set = %v, want UnsupportedConfigError", err)
	}
	if !reflect.DeepEqual(e.get(t, k.Key), before) {
		t.Fatal("refused set changed the item")
	}
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(e.ctx, e.ns, "e", "r"))
	after := e.get(t, k.Key)
	if _, ok := after["inherit_limits"]; ok || after["disabled"] == nil {
		t.Fatalf("after delete = %v", after)
	}
}

// TestSetRetriesWhenItemVanishes: the item is deleted between the setter's
// read and its update; the setter re-reads and creates it (with its R9
// count).
func TestSetRetriesWhenItemVanishes(t *testing.T) {
	e := newEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	st := config.NewStore(p.DynamoDB(), e.tbl.Name)
	k := schema.EntityConfigKey(e.ns, "e", "r")
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "e", "r", []limit.Limit{limit.PerMinute("rpm", 1)}))
	e.set(t, k, map[string]types.AttributeValue{"disabled": b(true)})
	p.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Delay(0), Count: 1, Match: faultproxy.ForTable(e.tbl.Name),
		OnFire: func(string) { e.del(t, k) }})
	p.ResetStats()
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "e", "r", []limit.Limit{limit.PerMinute("tpm", 2)}))
	got, err := st.GetEntityLimits(e.ctx, e.ns, "e", "r")
	if err != nil || !reflect.DeepEqual(got, []limit.Limit{limit.PerMinute("tpm", 2)}) {
		t.Fatalf("limits = %v, %v", got, err)
	}
	if s := p.StatsFor("TransactWriteItems"); s.Forwarded != 1 {
		t.Fatalf("TransactWriteItems forwarded %d, want 1 (the re-create)", s.Forwarded)
	}
	if c := nAttr(e.get(t, schema.EntityConfigRegistryKey(e.ns)), "r"); c != "2" {
		t.Fatalf("R9 r = %s, want 2 (the external delete did not decrement)", c)
	}
}

// TestDeleteRespectsDisabledWrittenMeanwhile: `disabled` is set between the
// deleter's read and its whole-item delete; the guarded delete fails, and
// the retry removes only the limits.
func TestDeleteRespectsDisabledWrittenMeanwhile(t *testing.T) {
	e := newEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	st := config.NewStore(p.DynamoDB(), e.tbl.Name)
	k := schema.EntityConfigKey(e.ns, "e", "r")
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "e", "r", []limit.Limit{limit.PerMinute("rpm", 1)}))
	p.Add(faultproxy.Rule{Operation: "TransactWriteItems", Fault: faultproxy.Delay(0), Count: 1,
		OnFire: func(string) { e.set(t, k, map[string]types.AttributeValue{"disabled": b(true)}) }})
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(e.ctx, e.ns, "e", "r"))
	raw := e.get(t, k)
	if raw == nil || raw["disabled"] == nil {
		t.Fatalf("item = %v, want it kept with disabled", raw)
	}
	if _, ok := raw["l_rpm_cp"]; ok {
		t.Fatalf("limits kept: %v", raw)
	}
	if c := nAttr(e.get(t, schema.EntityConfigRegistryKey(e.ns)), "r"); c != "1" {
		t.Fatalf("R9 r = %s, want 1 (the item still exists)", c)
	}
}

func TestSetOnUnavailable(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	st := config.NewStore(tbl.DB, tbl.Name)
	ctx := context.Background()
	const ns = "Ab3dEf6hIjk"
	// On a missing item: created with the setting alone.
	if err := st.Writer(capability.ConfigWrite{}).SetOnUnavailable(ctx, ns, config.OnUnavailableAllow); err != nil {
		t.Fatal(err)
	}
	if l, ou, err := st.GetSystemLimits(ctx, ns); err != nil || len(l) != 0 || ou != config.OnUnavailableAllow {
		t.Fatalf("%v %q %v", l, ou, err)
	}
	// Limits and the setting live side by side; removing the setting keeps the limits.
	if err := st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("rpm", 5)}, config.SystemOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Writer(capability.ConfigWrite{}).SetOnUnavailable(ctx, ns, ""); err != nil {
		t.Fatal(err)
	}
	if l, ou, err := st.GetSystemLimits(ctx, ns); err != nil || len(l) != 1 || ou != "" {
		t.Fatalf("%v %q %v", l, ou, err)
	}
	if err := st.Writer(capability.ConfigWrite{}).SetOnUnavailable(ctx, ns, "maybe"); !schema.IsValidationError(err) {
		t.Fatalf("bad value: %v", err)
	}
}

// TestEmptyRegistriesAreDeleted: once the last resource config and the
// last entity config are gone, neither registry item is left (a namespace
// released whole keeps no empty R8 or R9). A counter another writer adds
// between the cleanup's two calls survives it.
func TestEmptyRegistriesAreDeleted(t *testing.T) {
	e := newEnv(t)
	ctx, ns := e.ctx, e.ns
	ls := []limit.Limit{limit.PerMinute("rpm", 1)}
	w := e.store().Writer(capability.ConfigWrite{})
	must(t, w.SetResourceLimits(ctx, ns, "gpt-4", ls))
	must(t, w.SetEntityLimits(ctx, ns, "e1", "gpt-4", ls))
	must(t, w.DeleteResourceLimits(ctx, ns, "gpt-4"))
	if it := e.get(t, schema.ResourceRegistryKey(ns)); it != nil {
		t.Errorf("R8 left after its last resource: %v", it)
	}
	must(t, w.DeleteEntityLimits(ctx, ns, "e1", "gpt-4"))
	if it := e.get(t, schema.EntityConfigRegistryKey(ns)); it != nil {
		t.Errorf("R9 left after its last entity config: %v", it)
	}

	// A concurrent writer registers e2/claude just before the cleanup's
	// delete reaches DynamoDB: its counter is added back.
	proxy := faultproxy.Start(t, e.tbl.Endpoint)
	racing := config.NewStore(proxy.DynamoDB(), e.tbl.Name).Writer(capability.ConfigWrite{})
	must(t, racing.SetEntityLimits(ctx, ns, "e1", "gpt-4", ls))
	var once sync.Once
	proxy.Add(faultproxy.Rule{Operation: "DeleteItem", Fault: faultproxy.InternalServerError(), Match: func(_ string, body []byte) bool {
		if strings.Contains(string(body), schema.SKEntityConfigResources) {
			once.Do(func() { must(t, w.SetEntityLimits(ctx, ns, "e2", "claude", ls)) })
		}
		return false
	}})
	must(t, racing.DeleteEntityLimits(ctx, ns, "e1", "gpt-4"))
	reg := e.get(t, schema.EntityConfigRegistryKey(ns))
	if nAttr(reg, "claude") != "1" || nAttr(reg, "gpt-4") != "" {
		t.Errorf("R9 after a cleanup raced by a new entity config: %v", reg)
	}
}
