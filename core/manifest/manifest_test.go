package manifest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFile(t *testing.T) {
	m, err := manifest.Parse(readFile(t, "tenant-alpha.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &manifest.Manifest{
		Namespace: "tenant-alpha",
		System: &manifest.System{OnUnavailable: config.OnUnavailableBlock,
			Limits: []limit.Limit{limit.PerMinute("rpm", 1000)}},
		Resources: map[string]manifest.Level{
			"gpt-4": {Limits: []limit.Limit{
				limit.PerMinute("rpm", 100),
				limit.Custom("tpm", 20000, 10000, time.Minute).AsSoft(),
			}},
			"gpt-3.5": {Disabled: config.AccessDisabled},
		},
		Entities: map[string]manifest.Entity{
			"api-key-1": {Resources: map[string]manifest.Level{
				"gpt-4":   {Limits: []limit.Limit{limit.Custom("tpm", 50000, 25000, time.Minute)}, Cascade: config.CascadeOff},
				"gpt-3.5": {Disabled: config.AccessEnforce},
			}},
			"api-key-2": {Resources: map[string]manifest.Level{"_default_": {Disabled: config.AccessBypass}}},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v\nwant %+v", m, want)
	}
	if got := m.ReadersNeeded(); got != config.SoftBypassVersion {
		t.Fatalf("ReadersNeeded %q", got)
	}
	var names []string
	for _, tg := range m.Targets() {
		names = append(names, string(tg.Kind)+":"+tg.String())
	}
	wantT := "system:system resource:gpt-3.5 resource:gpt-4 entity:api-key-1/gpt-3.5 entity:api-key-1/gpt-4 entity:api-key-2/_default_"
	if strings.Join(names, " ") != wantT {
		t.Fatalf("targets %v", names)
	}
}

// The same manifest as JSON properties (every scalar a string) and as a
// YAML file decodes to the same value: the coercion is idempotent on native
// values.
func TestPropertiesAndFileAgree(t *testing.T) {
	props := map[string]any{
		"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:x",
		"Namespace":    "tenant-alpha",
		"System":       map[string]any{"OnUnavailable": "block", "Limits": map[string]any{"rpm": map[string]any{"Capacity": "1000"}}},
		"Resources": map[string]any{
			"gpt-4": map[string]any{"Limits": map[string]any{
				"rpm": map[string]any{"Capacity": "100", "RefillAmount": "100", "RefillPeriod": "60"},
				"tpm": map[string]any{"Capacity": "20000", "RefillAmount": "10000", "Soft": "True"},
			}},
			"gpt-3.5": map[string]any{"Disabled": "TRUE"},
		},
		"Entities": map[string]any{
			"api-key-1": map[string]any{"Resources": map[string]any{
				"gpt-4":   map[string]any{"Limits": map[string]any{"tpm": map[string]any{"Burst": "50000", "RefillAmount": "25000"}}, "Cascade": "false"},
				"gpt-3.5": map[string]any{"Disabled": "False"},
			}},
			"api-key-2": map[string]any{"Resources": map[string]any{"_default_": map[string]any{"Disabled": "Bypass"}}},
		},
	}
	fromProps, err := manifest.FromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := manifest.Parse(readFile(t, "tenant-alpha.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromProps, fromFile) {
		t.Fatalf("properties %+v\nfile %+v", fromProps, fromFile)
	}
	if fromProps.Hash() != fromFile.Hash() {
		t.Fatal("hashes differ")
	}
	// Properties writes the CloudFormation form back: every scalar a string,
	// defaults filled in, and it decodes to the same manifest.
	props2 := fromFile.Properties()
	if got := props2["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["tpm"]; !reflect.DeepEqual(got,
		map[string]any{"Capacity": "20000", "RefillAmount": "10000", "RefillPeriod": "60", "Soft": "true"}) {
		t.Fatalf("tpm properties %v", got)
	}
	back, err := manifest.FromProperties(props2)
	if err != nil || !reflect.DeepEqual(back, fromFile) {
		t.Fatalf("round trip %+v %v", back, err)
	}
}

// Every bad field is reported at once, each with its path.
func TestEveryProblemWithItsPath(t *testing.T) {
	var props map[string]any
	if err := json.Unmarshal(readFile(t, "properties-bad.json"), &props); err != nil {
		t.Fatal(err)
	}
	_, err := manifest.FromProperties(props)
	var inv *manifest.InvalidManifestError
	if !errors.As(err, &inv) {
		t.Fatalf("err %v", err)
	}
	want := []string{
		`Entities.api-key-1.Resources.gpt-4.InheritLimits: config merge attributes`,
		`Entities.api-key-1.Resources.gpt-4.Limits.daily.ResetAfter: is not a field: a session window's length is ResetAfterSeconds`,
		`Entities.api-key-1.Resources.gpt-4.Limits.monthly.ResetSchedule[0].Cron: "0 0 L * *": day of month: "L" is not supported`,
		`Entities.api-key-1.Resources.gpt-4.Limits.monthly.ResetSchedule[0].Scale: a reset entry takes only cron and tz`,
		`Entities.api-key-1.Resources.gpt-4.Limits.monthly.ResetSchedule[1].Cron: "0 0 30 2 *" matches no minute of any year`,
		`Entities.api-key-1.Resources.gpt-4.Limits.rph.Capacity: is required`,
		`Entities.api-key-1.Resources.gpt-4.Limits.rph.RefillAmount: "true" is not an integer`,
		`Entities.api-key-1.Resources.gpt-4.Limits.tpm.Capacity: "lots" is not an integer`,
		`Entities.api-key-1.Resources.gpt-4.Limits.ttl: "ttl": `,
		`Resources.bad#name: "bad#name": cannot contain '#'`,
		`Resources.gpt-4.Disabled: "yes" is not true, false or bypass`,
		`Resources.gpt-4.Limits.rpm.RefillPeriod: "1.5" is not an integer`,
		`System.Disabled: is not allowed at system level`,
	}
	got := make([]string, len(inv.Problems))
	for i, p := range inv.Problems {
		got[i] = p.String()
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing %q in\n%s", w, strings.Join(got, "\n"))
		}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), strings.SplitN(w, ":", 2)[0]) {
			t.Errorf("Error() lacks %q", w)
		}
	}
}

func TestCoercionTable(t *testing.T) {
	daily, monthly := schedule.MustParseCron("0 0 * * *"), schedule.MustParseCron("0 0 1 * *")
	lim := func(fields map[string]any) map[string]any {
		return map[string]any{"namespace": "n", "resources": map[string]any{"r": map[string]any{"limits": map[string]any{"l": fields}}}}
	}
	level := func(fields map[string]any) map[string]any {
		return map[string]any{"namespace": "n", "resources": map[string]any{"r": fields}}
	}
	cases := []struct {
		name    string
		doc     map[string]any
		want    manifest.Level
		problem string // "" when valid
	}{
		{"defaults", lim(map[string]any{"capacity": "10"}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 10)}}, ""},
		{"native int", lim(map[string]any{"capacity": 10}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 10)}}, ""},
		{"integral float", lim(map[string]any{"capacity": 10.0}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 10)}}, ""},
		{"json number", lim(map[string]any{"capacity": json.Number("10")}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 10)}}, ""},
		{"fraction", lim(map[string]any{"capacity": 10.5}), manifest.Level{}, "10.5 is not an integer"},
		{"fraction string", lim(map[string]any{"capacity": "10.0"}), manifest.Level{}, `"10.0" is not an integer`},
		{"bool as int", lim(map[string]any{"capacity": true}), manifest.Level{}, "true is a boolean, not an integer"},
		{"bool string as int", lim(map[string]any{"capacity": "true"}), manifest.Level{}, `"true" is not an integer`},
		{"out of range", lim(map[string]any{"capacity": "99999999999999999999"}), manifest.Level{}, "is out of range"},
		{"capacity empty", lim(map[string]any{"capacity": ""}), manifest.Level{}, "capacity: is required"},
		{"capacity zero", lim(map[string]any{"capacity": "0"}), manifest.Level{}, "capacity: \"0\": limit \"l\": must be > 0"},
		{"empty optional is absent", lim(map[string]any{"capacity": "5", "refill_amount": "", "refill_period": ""}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 5)}}, ""},
		{"burst alias", lim(map[string]any{"burst": "7", "refill_amount": "1", "refill_period": "1"}), manifest.Level{Limits: []limit.Limit{limit.Custom("l", 7, 1, time.Second)}}, ""},
		{"burst disagrees", lim(map[string]any{"burst": "7", "capacity": "8"}), manifest.Level{}, "burst: is an alias of capacity and disagrees"},
		{"quota refused", lim(map[string]any{"capacity": "5", "refill_amount": "0"}), manifest.Level{}, "quota"},
		{"negative period", lim(map[string]any{"capacity": "5", "refill_period": "-1"}), manifest.Level{}, "refill_period: -1 must be between"},
		{"soft any case", lim(map[string]any{"capacity": "5", "soft": "TrUe"}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 5).AsSoft()}}, ""},
		{"soft yes refused", lim(map[string]any{"capacity": "5", "soft": "yes"}), manifest.Level{}, `"yes" is not a boolean`},
		{"soft 1 refused", lim(map[string]any{"capacity": "5", "soft": "1"}), manifest.Level{}, `"1" is not a boolean`},
		{"schedule", lim(map[string]any{"capacity": "100", "schedule": []any{
			map[string]any{"cron": "* 9-17 * * MON-FRI", "tz": "America/New_York", "scale": "0.5"},
			map[string]any{"cron": "* 0-6 * * *", "tz": "America/New_York", "capacity": "2000"},
		}}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 100).WithSchedule(schedule.Schedule{
			{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500},
			{Cron: schedule.MustParseCron("* 0-6 * * *"), Capacity: 2000},
		}, "America/New_York")}}, ""},
		{"schedule scale kept to the per mille", lim(map[string]any{"capacity": "100", "schedule": []any{map[string]any{"cron": "* * * * 0", "scale": 0.3333}}}),
			manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 100).WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* * * * 7"), ScalePerMille: 333}}, "")}}, ""},
		{"schedule empty", lim(map[string]any{"capacity": "5", "schedule": []any{}}), manifest.Level{Limits: []limit.Limit{limit.PerMinute("l", 5)}}, ""},
		{"schedule not a list", lim(map[string]any{"capacity": "5", "schedule": "* * * * *"}), manifest.Level{}, "schedule: must be a list"},
		{"schedule cron refused", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "0 0 L * *", "scale": "2"}}}), manifest.Level{}, "schedule[0].cron: \"0 0 L * *\": day of month"},
		{"schedule cron required", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"scale": "2"}}}), manifest.Level{}, "schedule[0].cron: is required"},
		{"schedule both", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "* * * * *", "scale": "2", "capacity": "3"}}}), manifest.Level{}, "sets both a scale and absolute parameters"},
		{"schedule scale zero", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "* * * * *", "scale": "0"}}}), manifest.Level{}, "schedule[0].scale: 0 must be a positive number"},
		{"schedule two zones", lim(map[string]any{"capacity": "5", "schedule": []any{
			map[string]any{"cron": "* 1 * * *", "scale": "2", "tz": "Europe/Paris"},
			map[string]any{"cron": "* 2 * * *", "scale": "2", "tz": "Asia/Tokyo"},
		}}), manifest.Level{}, "differs from the first entry's"},
		{"schedule unknown zone", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "* * * * *", "scale": "2", "tz": "Mars/Base"}}}), manifest.Level{}, "not a time zone"},
		{"schedule unknown key", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "* * * * *", "scale": "2", "timezone": "UTC"}}}), manifest.Level{}, "schedule[0].timezone: unknown field"},
		{"schedule never", lim(map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "0 0 30 2 *", "scale": "2"}}}), manifest.Level{}, "matches no minute"},
		{"quota", lim(map[string]any{"capacity": "1000", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}),
			manifest.Level{Limits: []limit.Limit{limit.Quota("l", 1000, schedule.Resets{daily}, "")}}, ""},
		{"quota native zero, in a zone", lim(map[string]any{"capacity": 1000, "refill_amount": 0, "reset_schedule": []any{map[string]any{"cron": "0 0 1 * *", "tz": "Europe/Paris"}}}),
			manifest.Level{Limits: []limit.Limit{limit.Quota("l", 1000, schedule.Resets{monthly}, "Europe/Paris")}}, ""},
		{"quota refill period kept", lim(map[string]any{"capacity": "5", "refill_amount": "0", "refill_period": "3600", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}),
			manifest.Level{Limits: []limit.Limit{func() limit.Limit {
				q := limit.Quota("l", 5, schedule.Resets{daily}, "")
				q.RefillPeriod = time.Hour
				return q
			}()}}, ""},
		{"quota two resets", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{
			map[string]any{"cron": "0 0 * * MON", "tz": "Asia/Tokyo"}, map[string]any{"cron": "0 12 * * THU", "tz": "Asia/Tokyo"}}}),
			manifest.Level{Limits: []limit.Limit{limit.Quota("l", 5, schedule.Resets{schedule.MustParseCron("0 0 * * 1"), schedule.MustParseCron("0 12 * * 4")}, "Asia/Tokyo")}}, ""},
		{"quota with a parameter schedule", lim(map[string]any{"capacity": "1000", "refill_amount": "0",
			"schedule":       []any{map[string]any{"cron": "* 9-17 * * MON-FRI", "tz": "Europe/Paris", "scale": "0.5"}},
			"reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "tz": "Europe/Paris"}}}),
			manifest.Level{Limits: []limit.Limit{limit.Quota("l", 1000, schedule.Resets{daily}, "Europe/Paris").
				WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500}}, "Europe/Paris")}}, ""},
		{"quota without its refill amount", lim(map[string]any{"capacity": "5", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}), manifest.Level{},
			"refill_amount: is required beside a reset_schedule: a quota's refill_amount is 0"},
		{"reset beside a drip", lim(map[string]any{"capacity": "5", "refill_amount": "5", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}), manifest.Level{},
			"refill_amount: 5 beside a reset_schedule: a limit drips or resets, never both"},
		{"quota with an empty reset schedule", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{}}), manifest.Level{},
			"refill_amount: 0 is a quota, which needs a reset_schedule"},
		{"quota made to drip by its schedule", lim(map[string]any{"capacity": "5", "refill_amount": "0",
			"schedule":       []any{map[string]any{"cron": "* 9-17 * * *", "refill_amount": "3"}},
			"reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}), manifest.Level{},
			"never drips"},
		{"reset never", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 30 2 *"}}}), manifest.Level{},
			`reset_schedule[0].cron: "0 0 30 2 *" matches no minute of any year`},
		{"reset L", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 L * *"}}}), manifest.Level{},
			`reset_schedule[0].cron: "0 0 L * *": day of month: "L" is not supported`},
		{"reset W", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 15W * *"}}}), manifest.Level{},
			`reset_schedule[0].cron: "0 0 15W * *": day of month: "15W" is not supported`},
		{"reset #", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * 1#1"}}}), manifest.Level{},
			`reset_schedule[0].cron: "0 0 * * 1#1": day of week: "#" is not supported`},
		{"reset cron required", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"tz": "UTC"}}}), manifest.Level{},
			"reset_schedule[0].cron: is required"},
		{"reset unknown zone", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "tz": "Mars/Base"}}}), manifest.Level{},
			`reset_schedule[0].tz: "Mars/Base" is not a time zone`},
		{"reset two zones", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{
			map[string]any{"cron": "0 0 * * *", "tz": "Europe/Paris"}, map[string]any{"cron": "0 12 * * *", "tz": "Asia/Tokyo"}}}), manifest.Level{},
			`reset_schedule[1].tz: "Asia/Tokyo" differs from the first entry's "Europe/Paris"`},
		{"reset and schedule in two zones", lim(map[string]any{"capacity": "5", "refill_amount": "0",
			"schedule":       []any{map[string]any{"cron": "* 9-17 * * *", "tz": "Europe/Paris", "scale": "2"}},
			"reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "tz": "Asia/Tokyo"}}}), manifest.Level{},
			`limits.l.reset_schedule: reads time zone "Asia/Tokyo" but the limit's schedule reads "Europe/Paris"`},
		{"reset scale refused", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "scale": "2"}}}), manifest.Level{},
			"reset_schedule[0].scale: a reset entry takes only cron and tz"},
		{"reset capacity refused", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "capacity": "10"}}}), manifest.Level{},
			"reset_schedule[0].capacity: a reset entry takes only cron and tz"},
		{"reset unknown key", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "timezone": "UTC"}}}), manifest.Level{},
			"reset_schedule[0].timezone: unknown field"},
		{"reset not a list", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": "0 0 * * *"}), manifest.Level{}, "reset_schedule: must be a list"},
		{"reset_after is not the field", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after": "86400"}), manifest.Level{},
			"reset_after: is not a field: a session window's length is reset_after_seconds, a whole number of seconds"},
		// Session quotas (ADR-139): a window length in whole seconds, a
		// refill amount of 0 written out, the inert period defaulted.
		{"session", lim(map[string]any{"capacity": "10000", "refill_amount": "0", "reset_after_seconds": "18000"}),
			manifest.Level{Limits: []limit.Limit{limit.Session("l", 10_000, 5*time.Hour)}}, ""},
		{"session native numbers, soft, period kept", lim(map[string]any{"capacity": 5, "refill_amount": 0, "refill_period": 60, "reset_after_seconds": 1, "soft": true}),
			manifest.Level{Limits: []limit.Limit{func() limit.Limit {
				q := limit.Session("l", 5, time.Second).AsSoft()
				q.RefillPeriod = time.Minute
				return q
			}()}}, ""},
		{"session with a parameter schedule", lim(map[string]any{"capacity": "1000", "refill_amount": "0", "reset_after_seconds": "3600",
			"schedule": []any{map[string]any{"cron": "* 0-6 * * *", "tz": "Europe/Paris", "scale": "0.5"}}}),
			manifest.Level{Limits: []limit.Limit{limit.Session("l", 1000, time.Hour).
				WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), ScalePerMille: 500}}, "Europe/Paris")}}, ""},
		{"session without its refill amount", lim(map[string]any{"capacity": "5", "reset_after_seconds": "60"}), manifest.Level{},
			"refill_amount: is required beside a reset_after_seconds: a quota's refill_amount is 0"},
		{"session beside a drip", lim(map[string]any{"capacity": "5", "refill_amount": "5", "reset_after_seconds": "60"}), manifest.Level{},
			"refill_amount: 5 beside a reset_after_seconds: a limit drips or resets, never both"},
		{"session beside a reset schedule", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": "60",
			"reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}), manifest.Level{},
			"limits.l.reset_after_seconds: beside a reset_schedule: a quota resets one way"},
		{"session of zero seconds", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": "0"}), manifest.Level{},
			"limits.l.reset_after_seconds: 0 must be between 1 and 9223372036 seconds"},
		{"session of negative seconds", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": -5}), manifest.Level{},
			"limits.l.reset_after_seconds: -5 must be between 1"},
		{"session past a Duration", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": "9223372037"}), manifest.Level{},
			"limits.l.reset_after_seconds: 9223372037 must be between 1"},
		{"session of a fraction", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": 1.5}), manifest.Level{},
			"limits.l.reset_after_seconds: 1.5 is not an integer"},
		{"session as a word", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": "5h"}), manifest.Level{},
			`limits.l.reset_after_seconds: "5h" is not an integer`},
		{"session made to drip by its schedule", lim(map[string]any{"capacity": "5", "refill_amount": "0", "reset_after_seconds": "60",
			"schedule": []any{map[string]any{"cron": "* 9-17 * * *", "refill_amount": "3"}}}), manifest.Level{},
			"limits.l.schedule: "},
		{"a zero refill needs a reset of either kind", lim(map[string]any{"capacity": "5", "refill_amount": "0"}), manifest.Level{},
			"refill_amount: 0 is a quota, which needs a reset_schedule or a reset_after_seconds"},
		{"two zones on one level", level(map[string]any{"limits": map[string]any{
			"a": map[string]any{"capacity": "5", "schedule": []any{map[string]any{"cron": "* 9-17 * * *", "tz": "Europe/Paris", "scale": "2"}}},
			"b": map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "tz": "Asia/Tokyo"}}},
		}}), manifest.Level{}, `limits.b.reset_schedule: reads time zone "Asia/Tokyo" but limit a reads "Europe/Paris"`},
		{"two quotas on one level share a zone", level(map[string]any{"limits": map[string]any{
			"a": map[string]any{"capacity": "5", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 * * *", "tz": "Asia/Tokyo"}}},
			"b": map[string]any{"capacity": "7", "refill_amount": "0", "reset_schedule": []any{map[string]any{"cron": "0 0 1 * *", "tz": "Asia/Tokyo"}}},
		}}), manifest.Level{Limits: []limit.Limit{limit.Quota("a", 5, schedule.Resets{daily}, "Asia/Tokyo"), limit.Quota("b", 7, schedule.Resets{monthly}, "Asia/Tokyo")}}, ""},
		{"unknown field", lim(map[string]any{"capacity": "5", "refil_amount": "1"}), manifest.Level{}, "refil_amount: unknown field"},
		{"other style named", lim(map[string]any{"Capacity": "5"}), manifest.Level{}, `Capacity: unknown field (did you mean "capacity"?)`},
		{"disabled absent inherits", level(map[string]any{}), manifest.Level{}, ""},
		{"disabled null inherits", level(map[string]any{"disabled": nil}), manifest.Level{}, ""},
		{"disabled false is a carve-out", level(map[string]any{"disabled": "false"}), manifest.Level{Disabled: config.AccessEnforce}, ""},
		{"disabled native true", level(map[string]any{"disabled": true}), manifest.Level{Disabled: config.AccessDisabled}, ""},
		{"disabled BYPASS", level(map[string]any{"disabled": "BYPASS"}), manifest.Level{Disabled: config.AccessBypass}, ""},
		{"disabled empty refused", level(map[string]any{"disabled": ""}), manifest.Level{}, `"" is not true, false or bypass`},
		{"cascade true", level(map[string]any{"cascade": "true"}), manifest.Level{Cascade: config.CascadeOn}, ""},
		{"cascade bypass refused", level(map[string]any{"cascade": "bypass"}), manifest.Level{}, `"bypass" is not a boolean`},
		{"limits as list", level(map[string]any{"limits": []any{map[string]any{"name": "x"}}}), manifest.Level{}, "not a list"},
		{"merge refused", level(map[string]any{"exclude_limits": []any{"x"}}), manifest.Level{}, "config merge attributes"},
		{"reserved name", map[string]any{"namespace": "n", "resources": map[string]any{"r": map[string]any{"limits": map[string]any{"GSI1PK": map[string]any{"capacity": 1}}}}}, manifest.Level{}, "reserved"},
		{"wcu reserved", map[string]any{"namespace": "n", "resources": map[string]any{"r": map[string]any{"limits": map[string]any{"wcu": map[string]any{"capacity": 1}}}}}, manifest.Level{}, "wcu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := manifest.FromDocument(c.doc)
			if c.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := m.Resources["r"]; !reflect.DeepEqual(got, c.want) {
					t.Fatalf("got %+v want %+v", got, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.problem) {
				t.Fatalf("err %v, want %q", err, c.problem)
			}
		})
	}
}

func TestTopLevelRules(t *testing.T) {
	cases := []struct {
		doc     string
		problem string
	}{
		{"resources: {}", "namespace: is required"},
		{"namespace: n\nsystem: {cascade: true}", "system.cascade: is not allowed at system level"},
		{"namespace: n\nsystem: {on_unavailable: maybe}", `"maybe" is not allow or block`},
		{"namespace: n\nresources: {_default_: {}}", "_default_"},
		{"namespace: n\nentities: {u1: {resources: {r: {limits: {a: {capacity: 1}, a: {capacity: 2}}}}}}", "already defined"},
		{"- a\n- b", "must be a mapping"},
		{"namespace: n\nresources: {r: &l {limits: {a: {capacity: 1}}}, s: *l}", ""},
		{"namespace: n\nresources: {r: {<<: {limits: {a: {capacity: 1}}}}}", "merge keys (<<) are not supported"},
		{"&a [*a]", "refers to itself"},
		{"namespace: n\nnamespace: m", `line 2: mapping key "namespace" already defined`},
		{"", "empty"},
		{"namespace: [", "not YAML or JSON"},
		{`{"namespace": "n", "resources": {"r": {"limits": {"l": {"capacity": 3}}}}}`, ""},
	}
	for _, c := range cases {
		_, err := manifest.Parse([]byte(c.doc))
		if c.problem == "" {
			if err != nil {
				t.Errorf("%q: %v", c.doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("%q: err %v, want %q", c.doc, err, c.problem)
		}
	}
	// CloudFormation properties name the namespace "default" when they
	// name none.
	m, err := manifest.FromProperties(map[string]any{"ServiceToken": "x"})
	if err != nil || m.Namespace != manifest.DefaultNamespace {
		t.Fatalf("%v %v", m, err)
	}
}

func TestReadersNeeded(t *testing.T) {
	cases := map[string]string{
		"namespace: n": "",
		"namespace: n\nresources: {r: {cascade: false}}":                                                                                                       config.CascadePolicyVersion,
		"namespace: n\nresources: {r: {disabled: true}}":                                                                                                       "",
		"namespace: n\nresources: {r: {disabled: bypass}}":                                                                                                     config.SoftBypassVersion,
		"namespace: n\nsystem: {limits: {a: {capacity: 1, soft: true}}}":                                                                                       config.SoftBypassVersion,
		"namespace: n\nentities: {u: {resources: {r: {cascade: true, disabled: bypass}}}}":                                                                     config.SoftBypassVersion,
		"namespace: n\nentities: {u: {resources: {_default_: {limits: {a: {capacity: 1}}}}}}":                                                                  "",
		"namespace: n\nentities: {u: {resources: {_default_: {cascade: true}}}}":                                                                               config.CascadePolicyVersion,
		"namespace: n\nresources: {r: {limits: {a: {capacity: 1, soft: false}}, disabled: false}}":                                                             "",
		"namespace: n\nresources: {r: {limits: {s: {capacity: 1, refill_amount: 0, reset_after_seconds: 60}}}}":                                                config.SessionQuotaVersion,
		"namespace: n\nsystem: {limits: {s: {capacity: 1, refill_amount: 0, reset_after_seconds: 60}}}":                                                        config.SessionQuotaVersion,
		"namespace: n\nresources: {r: {cascade: false, limits: {s: {capacity: 1, refill_amount: 0, reset_after_seconds: 60}}}}":                                config.CascadePolicyVersion,
		"namespace: n\nentities: {u: {resources: {r: {limits: {s: {capacity: 1, refill_amount: 0, reset_after_seconds: 60}, t: {capacity: 1, soft: true}}}}}}": config.SoftBypassVersion,
	}
	for doc, want := range cases {
		m, err := manifest.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.ReadersNeeded(); got != want {
			t.Errorf("%q: %q want %q", doc, got, want)
		}
	}
}

// A schedule survives both written forms, and how a cron is spelt does not
// change the manifest's hash (MON-FRI and 1-5 alike).
func TestScheduleRoundTripAndHash(t *testing.T) {
	doc := func(cron string) map[string]any {
		return map[string]any{"namespace": "n", "resources": map[string]any{"r": map[string]any{"limits": map[string]any{
			"rpm": map[string]any{"capacity": 100, "schedule": []any{
				map[string]any{"cron": cron, "tz": "America/New_York", "scale": 0.5},
				map[string]any{"cron": "* 0-6 * * *", "tz": "America/New_York", "capacity": 2000, "refill_period_seconds": 30},
			}},
		}}}}
	}
	a, err := manifest.FromDocument(doc("* 9-17 * * MON-FRI"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.FromDocument(doc("* 9-17 * * 1-5"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Errorf("MON-FRI and 1-5 hash differently: %s, %s", a.Hash(), b.Hash())
	}
	back, err := manifest.FromProperties(a.Properties())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Resources, a.Resources) {
		t.Errorf("through Properties: %+v, want %+v", back.Resources, a.Resources)
	}
	again, err := manifest.FromDocument(a.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Resources, a.Resources) || again.Hash() != a.Hash() {
		t.Errorf("through Canonical: %+v", again.Resources)
	}
	rpm := a.Resources["r"].Limits[0]
	if rpm.Schedule != "h9-17w1-5s500;h0-6c2000p30" || rpm.Zone != "America/New_York" {
		t.Errorf("stored %q in %q", rpm.Schedule, rpm.Zone)
	}
}

// A quota's reset schedule survives both written forms, each cron written
// as stored; how a cron is spelt (month names or numbers, spacing) does
// not change the manifest or its hash, and another cron does.
func TestQuotaRoundTripAndHash(t *testing.T) {
	doc := func(quarterly, monthly string) map[string]any {
		return map[string]any{"namespace": "n", "resources": map[string]any{"r": map[string]any{"limits": map[string]any{
			"tpq": map[string]any{"capacity": 1_000_000, "refill_amount": 0, "reset_schedule": []any{
				map[string]any{"cron": quarterly, "tz": "Europe/Paris"},
			}},
			"tpm": map[string]any{"capacity": 100_000, "refill_amount": 0,
				"schedule":       []any{map[string]any{"cron": "* 9-17 * * MON-FRI", "tz": "Europe/Paris", "scale": 0.5}},
				"reset_schedule": []any{map[string]any{"cron": monthly, "tz": "Europe/Paris"}}},
		}}}}
	}
	a, err := manifest.FromDocument(doc("0 0 1 JAN,APR,JUL,OCT *", "0 0 1 * *"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.FromDocument(doc("0 0 1 1,4,7,10 *", " 0  0 1 *\t* "))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.Hash() != b.Hash() {
		t.Errorf("one cron spelt two ways: %+v, %+v; hashes %s, %s", a.Resources, b.Resources, a.Hash(), b.Hash())
	}
	c, err := manifest.FromDocument(doc("0 0 1 1,4,7,10 *", "0 0 2 * *"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash() == a.Hash() {
		t.Error("another reset cron hashes the same")
	}
	ls := a.Resources["r"].Limits
	if got := ls[1]; got.Name != "tpq" || got.ResetSchedule != "m0h0D1M1,4,7,10" || got.Zone != "Europe/Paris" || !got.IsQuota() ||
		got.RefillAmount != 0 || got.RefillPeriod != limit.QuotaRefillPeriod {
		t.Errorf("tpq = %+v", got)
	}
	if got := ls[0]; got.Schedule != "h9-17w1-5s500" || got.ResetSchedule != "m0h0D1" || got.Zone != "Europe/Paris" {
		t.Errorf("tpm = %+v", got)
	}
	props := a.Properties()
	tpq := props["Resources"].(map[string]any)["r"].(map[string]any)["Limits"].(map[string]any)["tpq"]
	if want := map[string]any{"Capacity": "1000000", "RefillAmount": "0", "RefillPeriod": "1",
		"ResetSchedule": []any{map[string]any{"Cron": "0 0 1 1,4,7,10 *", "Tz": "Europe/Paris"}}}; !reflect.DeepEqual(tpq, want) {
		t.Errorf("tpq properties %v\nwant %v", tpq, want)
	}
	back, err := manifest.FromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Resources, a.Resources) || back.Hash() != a.Hash() {
		t.Errorf("through Properties: %+v, want %+v", back.Resources, a.Resources)
	}
	again, err := manifest.FromDocument(a.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Resources, a.Resources) || again.Hash() != a.Hash() {
		t.Errorf("through Canonical: %+v", again.Resources)
	}
	// A UTC quota writes no tz.
	u, err := manifest.Parse([]byte("namespace: n\nsystem: {limits: {tpd: {capacity: 5, refill_amount: 0, reset_schedule: [{cron: '0 0 * * *'}]}}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Canonical()["system"].(map[string]any)["limits"].(map[string]any)["tpd"]; !reflect.DeepEqual(got, map[string]any{
		"capacity": int64(5), "refill_amount": int64(0), "refill_period": int64(1), "reset_schedule": []any{map[string]any{"cron": "0 0 * * *"}}}) {
		t.Errorf("canonical tpd %v", got)
	}
}

// A session quota in both written forms: reset_after_seconds in the file,
// ResetAfterSeconds in CloudFormation's strings; it survives both, enters
// the hash, and leaves the hash of a manifest without one as it was.
func TestSessionQuotaForms(t *testing.T) {
	file := "namespace: n\nresources:\n  gpt-4:\n    limits:\n      rpm: {capacity: 100}\n" +
		"      tokens: {capacity: 10000, refill_amount: 0, reset_after_seconds: 18000}\n" +
		"entities:\n  u:\n    resources:\n      _default_:\n        limits:\n          session: {capacity: 5, refill_amount: 0, refill_period: 1, reset_after_seconds: 60, soft: true}\n"
	m, err := manifest.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	tokens := m.Resources["gpt-4"].Limits[1]
	if want := limit.Session("tokens", 10_000, 5*time.Hour); tokens != want {
		t.Fatalf("tokens = %+v, want %+v", tokens, want)
	}
	props := m.Properties()
	got := props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["tokens"]
	want := map[string]any{"Capacity": "10000", "RefillAmount": "0", "RefillPeriod": "1", "ResetAfterSeconds": "18000"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("properties %v, want %v", got, want)
	}
	back, err := manifest.FromProperties(props)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("through Properties: %+v %v", back, err)
	}
	canon := m.Canonical()["resources"].(map[string]any)["gpt-4"].(map[string]any)["limits"].(map[string]any)["tokens"]
	if c := canon.(map[string]any); c["reset_after_seconds"] != int64(18000) {
		t.Fatalf("canonical %v", c)
	}
	again, err := manifest.FromDocument(m.Canonical())
	if err != nil || again.Hash() != m.Hash() {
		t.Fatalf("through Canonical: %v %v", again, err)
	}
	longer, err := manifest.Parse([]byte(strings.Replace(file, "18000", "18001", 1)))
	if err != nil || longer.Hash() == m.Hash() {
		t.Fatalf("another window length hashes the same: %v", err)
	}
	if rpmOnly, _ := manifest.Parse([]byte("namespace: n\nresources: {gpt-4: {limits: {rpm: {capacity: 100}}}}")); rpmOnly.Hash() !=
		"sha256:"+sha256Hex(`{"namespace": "n", "resources": {"gpt-4": {"limits": {"rpm": {"capacity": 100, "refill_amount": 100, "refill_period": 60}}}}}`) {
		t.Fatal("a manifest without a session quota hashes differently")
	}

	if got := m.ReadersNeeded(); got != config.SoftBypassVersion {
		t.Fatalf("ReadersNeeded %q, want the soft limit's", got)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// BenchmarkParseLargeManifest parses a manifest of 98,923 resources (4 MB,
// about the largest MaxDocumentSize holds): the walk of the node tree is
// linear in its keys, where yaml.v3's own decode into Go values compares
// each key with every key before it: with it, this manifest took 92 s to
// parse in the provisioner's scale test; the walk takes about 1 s here.
func BenchmarkParseLargeManifest(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("namespace: tenant-alpha\nresources:\n")
	for i := range 98_923 {
		fmt.Fprintf(&doc, "  r%05d: {limits: {rpm: {capacity: 1}}}\n", i)
	}
	data := []byte(doc.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := manifest.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
