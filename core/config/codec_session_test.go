package config_test

import (
	"errors"
	"reflect"

	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// The limits of the Python client's hidden-config tests (ADR-142): a
// dripping rpm beside a session quota of 10,000 tokens for five hours, with
// a parameter schedule halving it from midnight to six.
var (
	pyRPM     = limit.PerMinute("rpm", 100)
	pySession = limit.Session("session", 10_000, 5*time.Hour).
			WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), ScalePerMille: 500}}, "")
)

// pythonLevel is the config item the Python client of the 0.17 generation
// writes for [pyRPM, pySession] at any level: the session quota's
// attributes under w_ only, its window length in seconds, the schedule in
// the compact form (docs/design.md §7, §14).
func pythonLevel() attrs {
	return merge(lim("rpm", "100", "100", "60"), attrs{
		"config_version":  n("1"),
		"w_session_cp":    n("10000"),
		"w_session_ra":    n("0"),
		"w_session_rp":    n("1"),
		"w_session_rsa":   n("18000"),
		"w_session_sched": s("h0-6s500"),
	})
}

// TestEncodeSessionAsPythonWrites: what this codec stores for a session
// quota is exactly the Python client's item: no l_ attribute of it at all
// (what a pre-0.15 reader sees is the rpm limit alone), and nothing else.
func TestEncodeSessionAsPythonWrites(t *testing.T) {
	got, err := config.EncodeConfigItem(config.LevelEntity, config.Config{Limits: []limit.Limit{pyRPM, pySession}})
	if err != nil {
		t.Fatal(err)
	}
	if want := pythonLevel(); !reflect.DeepEqual(got, want) {
		t.Fatalf("encoded\n%v\nwant\n%v", got, want)
	}
	for a := range got {
		if strings.HasPrefix(a, "l_session") {
			t.Errorf("%s: a session quota's attribute under l_", a)
		}
	}
	soft, err := config.EncodeLimits([]limit.Limit{limit.Session("s", 5, time.Minute).AsSoft()})
	if err != nil {
		t.Fatal(err)
	}
	want := attrs{"w_s_cp": n("5"), "w_s_ra": n("0"), "w_s_rp": n("1"), "w_s_rsa": n("60"), "w_s_soft": b(true)}
	if !reflect.DeepEqual(soft, want) {
		t.Fatalf("soft session = %v, want %v", soft, want)
	}
}

// TestDecodePythonSessionLevel: the Python client's item decodes to the
// limits it was written from, the session quota among them (the client
// enforces its window: docs/decisions.md P55), keeping the access
// settings.
func TestDecodePythonSessionLevel(t *testing.T) {
	for _, level := range []config.Level{config.LevelSystem, config.LevelResource, config.LevelEntity, config.LevelEntityDefault} {
		it := merge(pythonLevel(), attrs{"PK": s("ns/ENTITY#u"), "SK": s("#CONFIG#gpt-4")})
		if level != config.LevelSystem {
			it["disabled"], it["cascade"] = b(false), b(true)
		}
		d, err := config.DecodeConfigItem(level, it)
		if err != nil || len(d.Problems) > 0 {
			t.Fatalf("%v: %v %v", level, err, d.Problems)
		}
		if want := []limit.Limit{pyRPM, pySession}; !reflect.DeepEqual(d.Limits, want) {
			t.Fatalf("%v: limits %+v, want %+v", level, d.Limits, want)
		}
		if level != config.LevelSystem && (d.Disabled != config.AccessEnforce || d.Cascade != config.CascadeOn) {
			t.Fatalf("%v: access settings %+v", level, d.Config)
		}
	}
}

// TestSessionRoundTrip: whatever the codec writes for a session quota, its
// full decoding reads back unchanged.
func TestSessionRoundTrip(t *testing.T) {
	sets := [][]limit.Limit{
		{limit.Session("s", 1, time.Second)},
		{limit.Session("a.b-c_d", limit.MaxTokens, limit.MaxRefillPeriod).AsSoft(), limit.PerHour("rph", 5)},
		{limit.Session("tokens", 10_000, 5*time.Hour).WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 250}}, "America/New_York"),
			limit.Quota("monthly", 100_000, schedule.Resets{schedule.MustParseCron("0 0 1 * *")}, "America/New_York")},
	}
	for _, ls := range sets {
		item, err := config.EncodeLimits(ls)
		if err != nil {
			t.Fatal(err)
		}
		d, err := config.DecodeConfigItem(config.LevelResource, item)
		if err != nil || len(d.Problems) > 0 {
			t.Fatalf("%v: %v %v", ls, err, d.Problems)
		}
		want := append([]limit.Limit{}, ls...)
		limit.SortByName(want)
		if !reflect.DeepEqual(d.Limits, want) {
			t.Fatalf("round trip %+v, want %+v", d.Limits, want)
		}
	}
}

// TestDecodeSessionShapes are the stored shapes of session quotas and what
// a reader makes of each (ADR-142): corrupt items (a name under both
// prefixes, a w_ limit without a readable window length), limits breaking
// ADR-137 or ADR-139, fields under one prefix that never join a limit under
// the other, and the l_ form of an unreleased upstream build.
func TestDecodeSessionShapes(t *testing.T) {
	w := func(name, cp, ra, rp string) attrs {
		return attrs{"w_" + name + "_cp": n(cp), "w_" + name + "_ra": n(ra), "w_" + name + "_rp": n(rp)}
	}
	session := limit.Session("session", 10_000, 5*time.Hour)
	tests := []struct {
		name     string
		item     attrs
		want     []limit.Limit // the full decoding, sessions included
		problems []string
		refused  string // the attribute of the refusal ("" = a session refusal or none)
		corrupt  bool   // the refusal's cause is a *CorruptConfigError
	}{
		{name: "a name under both prefixes",
			item:    merge(lim("session", "10000", "100", "60"), w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("18000")}),
			refused: "w_session_cp", corrupt: true},
		{name: "a w_ limit without its window length", item: merge(lim("rpm", "60", "60", "60"), w("session", "10000", "0", "1")),
			refused: "w_session_cp", corrupt: true},
		{name: "a w_ limit without rp", item: attrs{"w_session_cp": n("10000"), "w_session_ra": n("0"), "w_session_rsa": n("18000")},
			refused: "w_session_cp", corrupt: true},
		{name: "a w_ limit with a bad name", item: merge(w("9x", "1", "0", "1"), attrs{"w_9x_rsa": n("60")}),
			refused: "w_9x_cp", corrupt: true},
		{name: "a window length of 0", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("0")}),
			refused: "w_session_rsa", corrupt: true},
		{name: "a negative window length", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("-60")}),
			refused: "w_session_rsa", corrupt: true},
		{name: "a fractional window length", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("1.5")}),
			refused: "w_session_rsa", corrupt: true},
		{name: "a window length as S", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": s("18000")}),
			refused: "w_session_rsa", corrupt: true},
		{name: "a window length past a Duration", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("9223372037")}),
			refused: "w_session_rsa", corrupt: true},
		{name: "a window beside a drip", item: merge(w("session", "10000", "100", "60"), attrs{"w_session_rsa": n("18000")}),
			refused: "w_session_rsa"},
		{name: "a window beside a reset schedule",
			item:    merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("18000"), "w_session_rsched": s("m0h0")}),
			refused: "w_session_rsched"},
		{name: "a corrupt item is reported before an unsupported one",
			item:    merge(w("a", "1", "5", "1"), attrs{"w_a_rsa": n("60")}, w("b", "1", "0", "1")),
			refused: "w_b_cp", corrupt: true},
		{name: "a stray l_ field does not join the w_ limit",
			item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("18000"), "l_session_sched": s("garbage")}),
			want: []limit.Limit{session}, problems: nil},
		{name: "w_ fields without cp are not a limit",
			item: merge(lim("rpm", "60", "60", "60"), attrs{"w_session_rsa": n("18000"), "w_session_ra": n("0")}),
			want: []limit.Limit{limit.PerMinute("rpm", 60)}, problems: []string{"w_session_"}},
		{name: "the l_ form of an unreleased build is a session quota",
			item: merge(lim("session", "10000", "0", "1"), attrs{"l_session_rsa": n("18000")}),
			want: []limit.Limit{session}},
		{name: "soft under w_", item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("18000"), "w_session_soft": b(true)}),
			want: []limit.Limit{session.AsSoft()}},
		{name: "a schedule under w_ reads the item's zone",
			item: merge(w("session", "10000", "0", "1"), attrs{"w_session_rsa": n("18000"), "w_session_sched": s("h9-17w1-5s500"), "sched_tz": s("Europe/Paris")}),
			want: []limit.Limit{session.WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500}}, "Europe/Paris")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := merge(tc.item, attrs{"PK": s("ns/RESOURCE#r"), "SK": s("#CONFIG")})
			d, err := config.DecodeConfigItem(config.LevelResource, it)
			if err != nil && d.Limits != nil {
				t.Fatalf("a refused item decoded limits %v", d.Limits)
			}
			if tc.refused != "" {
				var ue *config.UnsupportedConfigError
				var ce *config.CorruptConfigError
				if !errors.As(err, &ue) || ue.Attribute != tc.refused || errors.As(err, &ce) != tc.corrupt {
					t.Fatalf("DecodeConfigItem = %v, want a refusal at %s (corrupt %v)", err, tc.refused, tc.corrupt)
				}
				if tc.corrupt && (!strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "not supported") || ce.Limit == "") {
					t.Fatalf("corrupt message %q (limit %q)", err, ce.Limit)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeConfigItem = %v", err)
			}
			if !reflect.DeepEqual(d.Limits, tc.want) {
				t.Fatalf("limits %+v, want %+v", d.Limits, tc.want)
			}
			if got := problemAttrs(d.Problems); !reflect.DeepEqual(got, tc.problems) {
				t.Fatalf("problems %v (%v), want %v", got, d.Problems, tc.problems)
			}
		})
	}
}
