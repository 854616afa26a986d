package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func b(v bool) types.AttributeValue   { return &types.AttributeValueMemberBOOL{Value: v} }

type attrs = map[string]types.AttributeValue

// lim returns the three numeric attributes of a limit, l_{name}_cp/ra/rp.
func lim(name, cp, ra, rp string) attrs {
	return attrs{"l_" + name + "_cp": n(cp), "l_" + name + "_ra": n(ra), "l_" + name + "_rp": n(rp)}
}

func merge(ms ...attrs) attrs {
	out := attrs{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestEncodeLimits(t *testing.T) {
	got, err := config.EncodeLimits([]limit.Limit{
		limit.PerMinute("rpm", 60),
		limit.PerMinute("tpm", 10_000).WithBurst(15_000).AsSoft(),
		limit.Custom("a.b-c_d", 5, 1, 3*time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := merge(lim("rpm", "60", "60", "60"), lim("tpm", "15000", "10000", "60"), lim("a.b-c_d", "5", "1", "3"),
		attrs{"l_tpm_soft": b(true)})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EncodeLimits =\n%v\nwant\n%v", got, want)
	}

	for _, bad := range [][]limit.Limit{
		{limit.PerMinute("rpm", 0)},
		{limit.PerMinute("rpm", 1), limit.PerMinute("rpm", 2)},
		{limit.Custom("q", 10, 0, time.Hour)},
		{limit.PerSecond("wcu", 1)},
	} {
		if _, err := config.EncodeLimits(bad); !schema.IsValidationError(err) {
			t.Errorf("EncodeLimits(%v) = %v, want a validation error", bad, err)
		}
	}
}

func TestEncodeConfigItem(t *testing.T) {
	ls := []limit.Limit{limit.PerMinute("rpm", 60)}
	got, err := config.EncodeConfigItem(config.LevelResource, config.Config{Limits: ls, Disabled: config.AccessBypass, Cascade: config.CascadeOff})
	if err != nil {
		t.Fatal(err)
	}
	want := merge(lim("rpm", "60", "60", "60"), attrs{"config_version": n("1"), "disabled": s("bypass"), "cascade": b(false)})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resource item = %v, want %v", got, want)
	}
	got, err = config.EncodeConfigItem(config.LevelSystem, config.Config{Limits: ls, OnUnavailable: config.OnUnavailableAllow})
	if err != nil {
		t.Fatal(err)
	}
	want = merge(lim("rpm", "60", "60", "60"), attrs{"config_version": n("1"), "on_unavailable": s("allow")})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("system item = %v, want %v", got, want)
	}
	for _, d := range []config.Access{config.AccessEnforce, config.AccessDisabled} {
		got, err := config.EncodeConfigItem(config.LevelEntity, config.Config{Disabled: d})
		if err != nil {
			t.Fatal(err)
		}
		if got["disabled"].(*types.AttributeValueMemberBOOL).Value != (d == config.AccessDisabled) {
			t.Fatalf("disabled %v encoded as %v", d, got["disabled"])
		}
	}

	rejects := []struct {
		level config.Level
		c     config.Config
		field string
	}{
		{config.LevelSystem, config.Config{Disabled: config.AccessDisabled}, "disabled"},
		{config.LevelSystem, config.Config{Disabled: config.AccessEnforce}, "disabled"},
		{config.LevelSystem, config.Config{Cascade: config.CascadeOn}, "cascade"},
		{config.LevelResource, config.Config{OnUnavailable: config.OnUnavailableBlock}, "on_unavailable"},
		{config.LevelSystem, config.Config{OnUnavailable: "maybe"}, "on_unavailable"},
		{config.LevelEntity, config.Config{Limits: []limit.Limit{limit.PerMinute("x", -1)}}, "capacity"},
		{config.LevelNone, config.Config{}, "level"},
	}
	for _, r := range rejects {
		_, err := config.EncodeConfigItem(r.level, r.c)
		var ve *schema.ValidationError
		if !errors.As(err, &ve) || ve.Field != r.field {
			t.Errorf("EncodeConfigItem(%v, %+v) = %v, want a validation error on %s", r.level, r.c, err, r.field)
		}
	}
}

// TestDecodeConfigItem is the table of docs/design.md §2 decoding rules.
func TestDecodeConfigItem(t *testing.T) {
	rpm := limit.PerMinute("rpm", 60)
	tests := []struct {
		name        string
		level       config.Level
		item        attrs
		want        config.Config
		problems    []string // attributes reported, in order
		unsupported string   // offending attribute of an *UnsupportedConfigError
	}{
		{name: "empty", level: config.LevelEntity, item: attrs{}},
		{name: "one limit", level: config.LevelEntity, item: lim("rpm", "60", "60", "60"),
			want: config.Config{Limits: []limit.Limit{rpm}}},
		{name: "burst and custom period", level: config.LevelResource, item: lim("tpm", "15000", "10000", "3600"),
			want: config.Config{Limits: []limit.Limit{limit.Custom("tpm", 15000, 10000, time.Hour)}}},
		{name: "names with _ - . sorted", level: config.LevelEntity,
			item: merge(lim("tok_per_min", "1", "1", "1"), lim("a-b", "2", "2", "2"), lim("x.y", "3", "3", "3")),
			want: config.Config{Limits: []limit.Limit{
				limit.Custom("a-b", 2, 2, 2*time.Second),
				limit.Custom("tok_per_min", 1, 1, time.Second),
				limit.Custom("x.y", 3, 3, 3*time.Second),
			}}},
		{name: "soft true", level: config.LevelEntity, item: merge(lim("rpm", "60", "60", "60"), attrs{"l_rpm_soft": b(true)}),
			want: config.Config{Limits: []limit.Limit{rpm.AsSoft()}}},
		{name: "soft false is hard", level: config.LevelEntity, item: merge(lim("rpm", "60", "60", "60"), attrs{"l_rpm_soft": b(false)}),
			want: config.Config{Limits: []limit.Limit{rpm}}},
		{name: "soft of wrong type is hard and reported", level: config.LevelEntity,
			item:     merge(lim("rpm", "60", "60", "60"), attrs{"l_rpm_soft": s("yes")}),
			want:     config.Config{Limits: []limit.Limit{rpm}},
			problems: []string{"l_rpm_soft"}},
		{name: "missing ra is corrupt", level: config.LevelEntity,
			item:     merge(lim("rpm", "60", "60", "60"), attrs{"l_tpm_cp": n("5"), "l_tpm_rp": n("60")}),
			want:     config.Config{Limits: []limit.Limit{rpm}},
			problems: []string{"l_tpm_"}},
		{name: "missing rp is corrupt", level: config.LevelEntity,
			item: attrs{"l_tpm_cp": n("5"), "l_tpm_ra": n("5")}, problems: []string{"l_tpm_"}},
		{name: "fields without cp are not a limit", level: config.LevelEntity,
			item: attrs{"l_tpm_ra": n("5"), "l_tpm_rp": n("60")}, problems: []string{"l_tpm_"}},
		{name: "legacy bx is ignored", level: config.LevelEntity, item: merge(lim("rpm", "60", "60", "60"), attrs{"l_rpm_bx": n("90")}),
			want: config.Config{Limits: []limit.Limit{rpm}}},
		{name: "S instead of N", level: config.LevelEntity, item: attrs{"l_rpm_cp": s("60"), "l_rpm_ra": n("60"), "l_rpm_rp": n("60")},
			problems: []string{"l_rpm_"}},
		{name: "fraction", level: config.LevelEntity, item: lim("rpm", "60.5", "60", "60"), problems: []string{"l_rpm_"}},
		{name: "exponent", level: config.LevelEntity, item: lim("rpm", "6E1", "60", "60"), problems: []string{"l_rpm_"}},
		{name: "int64 overflow", level: config.LevelEntity, item: lim("rpm", "9223372036854775808", "60", "60"), problems: []string{"l_rpm_"}},
		{name: "millitoken overflow", level: config.LevelEntity, item: lim("rpm", "9223372036854776", "60", "60"), problems: []string{"l_rpm_"}},
		{name: "period overflows a Duration", level: config.LevelEntity, item: lim("rpm", "1", "1", "9223372037"), problems: []string{"l_rpm_"}},
		{name: "zero capacity", level: config.LevelEntity, item: lim("rpm", "0", "60", "60"), problems: []string{"l_rpm_"}},
		{name: "negative refill", level: config.LevelEntity, item: lim("rpm", "1", "-1", "60"), problems: []string{"l_rpm_"}},
		{name: "zero period", level: config.LevelEntity, item: lim("rpm", "1", "1", "0"), problems: []string{"l_rpm_"}},
		{name: "reserved name wcu", level: config.LevelEntity, item: merge(lim("wcu", "1", "1", "1"), lim("rpm", "60", "60", "60")),
			want: config.Config{Limits: []limit.Limit{rpm}}, problems: []string{"l_wcu_"}},
		{name: "reserved name ttl", level: config.LevelEntity, item: lim("ttl", "1", "1", "1"), problems: []string{"l_ttl_"}},
		{name: "bad name", level: config.LevelEntity, item: lim("9x", "1", "1", "1"), problems: []string{"l_9x_"}},
		{name: "unrelated attributes ignored", level: config.LevelEntity,
			item: merge(lim("rpm", "60", "60", "60"), attrs{"PK": s("ns/ENTITY#e"), "SK": s("#CONFIG#r"), "entity_id": s("e"),
				"config_version": n("1"), "sched_tz": s("UTC"), "l_": s("x"), "l__cp": n("1"), "future": s("?")}),
			want: config.Config{Limits: []limit.Limit{rpm}}},

		{name: "disabled true", level: config.LevelEntity, item: attrs{"disabled": b(true)}, want: config.Config{Disabled: config.AccessDisabled}},
		{name: "disabled false", level: config.LevelResource, item: attrs{"disabled": b(false)}, want: config.Config{Disabled: config.AccessEnforce}},
		{name: "disabled bypass", level: config.LevelEntityDefault, item: attrs{"disabled": s("bypass")}, want: config.Config{Disabled: config.AccessBypass}},
		{name: "disabled NULL", level: config.LevelEntity, item: attrs{"disabled": &types.AttributeValueMemberNULL{Value: true}}},
		{name: "disabled other string", level: config.LevelEntity, item: attrs{"disabled": s("yes")}, problems: []string{"disabled"}},
		{name: "disabled on system", level: config.LevelSystem, item: attrs{"disabled": b(true)}, problems: []string{"disabled"}},
		{name: "cascade true", level: config.LevelEntity, item: attrs{"cascade": b(true)}, want: config.Config{Cascade: config.CascadeOn}},
		{name: "cascade false", level: config.LevelResource, item: attrs{"cascade": b(false)}, want: config.Config{Cascade: config.CascadeOff}},
		{name: "cascade string", level: config.LevelEntity, item: attrs{"cascade": s("true")}, problems: []string{"cascade"}},
		{name: "cascade on system", level: config.LevelSystem, item: attrs{"cascade": b(true)}, problems: []string{"cascade"}},
		{name: "on_unavailable allow", level: config.LevelSystem, item: attrs{"on_unavailable": s("allow")}, want: config.Config{OnUnavailable: config.OnUnavailableAllow}},
		{name: "on_unavailable block", level: config.LevelSystem, item: attrs{"on_unavailable": s("block")}, want: config.Config{OnUnavailable: config.OnUnavailableBlock}},
		{name: "on_unavailable bad", level: config.LevelSystem, item: attrs{"on_unavailable": s("ALLOW")}, problems: []string{"on_unavailable"}},
		{name: "on_unavailable below system", level: config.LevelResource, item: attrs{"on_unavailable": s("allow")}, problems: []string{"on_unavailable"}},

		{name: "name under both prefixes", level: config.LevelEntity,
			item: merge(lim("rpm", "60", "60", "60"), attrs{"w_rpm_cp": n("60"), "w_rpm_ra": n("60"), "w_rpm_rp": n("60")}), unsupported: "w_rpm_cp"},
		{name: "schedule", level: config.LevelResource, item: merge(lim("rpm", "60", "60", "60"), attrs{"l_rpm_sched": s("x")}), unsupported: "l_rpm_sched"},
		{name: "unreadable reset schedule", level: config.LevelResource, item: merge(lim("q", "60", "0", "60"), attrs{"l_q_rsched": s("x")}), unsupported: "l_q_rsched"},
		{name: "reset schedule beside a drip", level: config.LevelResource, item: merge(lim("q", "60", "60", "60"), attrs{"l_q_rsched": s("m0h0")}), unsupported: "l_q_rsched"},
		{name: "never-matching reset schedule", level: config.LevelResource, item: merge(lim("q", "60", "0", "1"), attrs{"l_q_rsched": s("m0h0D30M2")}), unsupported: "l_q_rsched"},
		{name: "reset_after", level: config.LevelSystem, item: merge(lim("q", "60", "60", "60"), attrs{"l_q_rsa": n("60")}), unsupported: "l_q_rsa"},
		{name: "quota without a reset", level: config.LevelEntity, item: lim("q", "60", "0", "60"), unsupported: "l_q_ra"},
		{name: "inherit_limits", level: config.LevelEntity, item: merge(lim("rpm", "60", "60", "60"), attrs{"inherit_limits": b(true)}), unsupported: "inherit_limits"},
		{name: "exclude_limits", level: config.LevelEntity, item: attrs{"exclude_limits": &types.AttributeValueMemberSS{Value: []string{"rpm"}}}, unsupported: "exclude_limits"},
		{name: "patch_limits", level: config.LevelResource, item: attrs{"patch_limits": b(true)}, unsupported: "patch_limits"},
		{name: "schedule patch", level: config.LevelEntity, item: attrs{"p_rpm_sched": s("x")}, unsupported: "p_rpm_sched"},
		{name: "unsupported keeps access settings", level: config.LevelEntity,
			item:        attrs{"w_s_cp": n("1"), "disabled": b(true), "cascade": b(true)},
			want:        config.Config{Disabled: config.AccessDisabled, Cascade: config.CascadeOn},
			unsupported: "w_s_cp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			item := merge(tc.item, attrs{"PK": s("ns/ENTITY#e"), "SK": s("#CONFIG#r")})
			d, err := config.DecodeConfigItem(tc.level, item)
			if tc.unsupported != "" {
				var ue *config.UnsupportedConfigError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want *UnsupportedConfigError", err)
				}
				if ue.Attribute != tc.unsupported || ue.Item != (schema.Key{PK: "ns/ENTITY#e", SK: "#CONFIG#r"}) {
					t.Fatalf("unsupported = %+v, want attribute %q", ue, tc.unsupported)
				}
				if d.Limits != nil {
					t.Fatalf("unsupported item returned limits %v", d.Limits)
				}
				if !strings.Contains(err.Error(), tc.unsupported) {
					t.Fatalf("message %q does not name the attribute", err)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(d.Config, tc.want) {
				t.Errorf("config = %+v, want %+v", d.Config, tc.want)
			}
			if got := problemAttrs(d.Problems); !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems = %v (%v), want %v", got, d.Problems, tc.problems)
			}
		})
	}
}

// problemAttrs lists the attributes of problems, in order; nil for none.
func problemAttrs(problems []config.Problem) []string {
	var got []string
	for _, p := range problems {
		got = append(got, p.Attribute)
	}
	return got
}

// TestEncodeDecodeRoundTrip: whatever EncodeConfigItem writes,
// DecodeConfigItem reads back unchanged and without problems.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := []struct {
		level config.Level
		c     config.Config
	}{
		{config.LevelSystem, config.Config{Limits: []limit.Limit{limit.PerDay("rpd", 9).AsSoft(), limit.PerMinute("rpm", 1)}, OnUnavailable: config.OnUnavailableAllow}},
		{config.LevelResource, config.Config{Limits: []limit.Limit{limit.PerHour("a_b", 5).WithBurst(7)}, Disabled: config.AccessDisabled, Cascade: config.CascadeOn}},
		{config.LevelEntity, config.Config{Disabled: config.AccessBypass, Cascade: config.CascadeOff}},
		{config.LevelEntityDefault, config.Config{Limits: []limit.Limit{limit.Custom("x-y.z", limit.MaxTokens, 1, limit.MaxRefillPeriod)}, Disabled: config.AccessEnforce}},
	}
	for _, tc := range cases {
		item, err := config.EncodeConfigItem(tc.level, tc.c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := config.DecodeConfigItem(tc.level, item)
		if err != nil || len(d.Problems) > 0 {
			t.Fatalf("decode: %v %v", err, d.Problems)
		}
		if !reflect.DeepEqual(d.Config, tc.c) {
			t.Fatalf("round trip: %+v, want %+v", d.Config, tc.c)
		}
	}
}

func TestDecodeEntity(t *testing.T) {
	e := config.DecodeEntity(attrs{
		"PK": s("ns/ENTITY#k1"), "SK": s("#META"), "entity_id": s("k1"), "name": s("Key one"),
		"parent_id": s("org"), "cascade": b(true), "pgen": n("3"), "pinc": s("01ARZ3NDEKTSV4RRFFQ69G5FAV"),
		"metadata":   &types.AttributeValueMemberM{Value: attrs{"tier": s("gold"), "n": n("1")}},
		"created_at": s("2024-01-02T03:04:05Z"),
	})
	want := config.Entity{ID: "k1", Name: "Key one", ParentID: "org", Cascade: true, PGen: 3, Pinc: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
		Metadata: map[string]string{"tier": "gold"}, CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("DecodeEntity = %+v, want %+v", e, want)
	}
	// Defaults: name = id (from the PK), root, pinc "0", pgen 0.
	e = config.DecodeEntity(attrs{"PK": s("ns/ENTITY#k2"), "SK": s("#META"), "parent_id": &types.AttributeValueMemberNULL{Value: true}})
	want = config.Entity{ID: "k2", Name: "k2", Pinc: "0", Metadata: map[string]string{}}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("DecodeEntity defaults = %+v, want %+v", e, want)
	}
}

func TestEffectiveCascade(t *testing.T) {
	root := config.Entity{ID: "r", Cascade: true}
	child := config.Entity{ID: "c", ParentID: "r", Cascade: true}
	childNo := config.Entity{ID: "c", ParentID: "r"}
	tests := []struct {
		e    config.Entity
		p    config.CascadePolicy
		want bool
	}{
		{root, config.CascadeOn, false}, {root, config.CascadeUnset, false},
		{child, config.CascadeUnset, true}, {child, config.CascadeOff, false}, {child, config.CascadeOn, true},
		{childNo, config.CascadeUnset, false}, {childNo, config.CascadeOn, true}, {childNo, config.CascadeOff, false},
	}
	for _, tc := range tests {
		if got := config.EffectiveCascade(tc.e, tc.p); got != tc.want {
			t.Errorf("EffectiveCascade(%+v, %v) = %v, want %v", tc.e, tc.p, got, tc.want)
		}
	}
}

func TestPickOnUnavailable(t *testing.T) {
	const a, bl = config.OnUnavailableAllow, config.OnUnavailableBlock
	tests := []struct{ perCall, system, last, want config.OnUnavailable }{
		{"", "", "", bl},
		{a, bl, bl, a},
		{"", a, bl, a},
		{"", "", a, a},
		{"", bl, a, bl},
		{"bogus", "", a, a},
		{bl, a, a, bl},
	}
	for _, tc := range tests {
		if got := config.PickOnUnavailable(tc.perCall, tc.system, tc.last); got != tc.want {
			t.Errorf("Pick(%q, %q, %q) = %q, want %q", tc.perCall, tc.system, tc.last, got, tc.want)
		}
	}
	if err := config.ValidateOnUnavailable("nope"); !schema.IsValidationError(err) {
		t.Fatalf("ValidateOnUnavailable(nope) = %v", err)
	}
	for _, ok := range []config.OnUnavailable{"", a, bl} {
		if err := config.ValidateOnUnavailable(ok); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLevelStrings(t *testing.T) {
	for l, want := range map[config.Level]string{config.LevelNone: "none", config.LevelEntity: "entity",
		config.LevelEntityDefault: "entity_default", config.LevelResource: "resource", config.LevelSystem: "system"} {
		if l.String() != want {
			t.Errorf("%d.String() = %q, want %q", l, l.String(), want)
		}
	}
}
