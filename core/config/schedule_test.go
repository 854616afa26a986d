package config_test

import (
	"errors"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// A config item a Python client wrote with a schedule (its versioned
// stored form) decodes to a scheduled limit, and encodes back in the form
// this project writes; a limit marked as having none decodes without one.
func TestConfigScheduleFromPython(t *testing.T) {
	item := merge(lim("rpm", "100", "100", "60"), lim("tpm", "1000", "1000", "60"), attrs{
		"l_rpm_sched": s("1h9-17w1-5s500"), "l_tpm_sched": s("-"), "sched_tz": s("America/New_York"),
	})
	d, err := config.DecodeConfigItem(config.LevelResource, item)
	if err != nil {
		t.Fatal(err)
	}
	rpm, _ := limit.Find(d.Limits, "rpm")
	tpm, _ := limit.Find(d.Limits, "tpm")
	if rpm.Schedule != "h9-17w1-5s500" || rpm.Zone != "America/New_York" || tpm.Schedule != "" || tpm.Zone != "" {
		t.Fatalf("decoded %+v and %+v", rpm, tpm)
	}
	enc, err := config.EncodeLimits(d.Limits)
	if err != nil {
		t.Fatal(err)
	}
	if ddbtest.Render(enc["l_rpm_sched"]) != "S:h9-17w1-5s500" || ddbtest.Render(enc["sched_tz"]) != "S:America/New_York" {
		t.Errorf("encoded %v", enc)
	}
	if _, ok := enc["l_tpm_sched"]; ok {
		t.Error("an unscheduled limit carries a schedule")
	}
}

func TestConfigScheduleRefused(t *testing.T) {
	for name, extra := range map[string]attrs{
		"undecodable":     {"l_rpm_sched": s("h99s500")},
		"unknown zone":    {"l_rpm_sched": s("h9-17s500"), "sched_tz": s("Mars/Olympus_Mons")},
		"not a string":    {"l_rpm_sched": n("5")},
		"zone not text":   {"l_rpm_sched": s("h9-17s500"), "sched_tz": n("5")},
		"reset on a drip": {"l_rpm_rsched": s("m0h0")},
	} {
		_, err := config.DecodeConfigItem(config.LevelResource, merge(lim("rpm", "100", "100", "60"), extra))
		var ue *config.UnsupportedConfigError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err %v, want an *UnsupportedConfigError", name, err)
		}
	}
}

func TestLimitSetOneZone(t *testing.T) {
	s := schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500}}
	a := limit.PerMinute("rpm", 100).WithSchedule(s, "America/New_York")
	b := limit.PerMinute("tpm", 100).WithSchedule(s, "Europe/Paris")
	if _, err := config.EncodeLimits([]limit.Limit{a, b}); err == nil {
		t.Error("two zones in one limit set encoded")
	}
	if _, err := config.EncodeLimits([]limit.Limit{a, limit.PerMinute("tpm", 100)}); err != nil {
		t.Error(err)
	}
}

// A calendar quota as a Python client stores it (refill amount 0, period
// 1 s, the reset schedule in l_{n}_rsched, the zone in sched_tz) decodes to
// limit.Quota's value and encodes back to the same attributes.
func TestConfigQuotaRoundTrip(t *testing.T) {
	item := merge(lim("tpd", "100000", "0", "1"), lim("rpm", "100", "100", "60"), attrs{
		"l_tpd_rsched": s("m0h0"), "sched_tz": s("America/New_York"),
	})
	d, err := config.DecodeConfigItem(config.LevelResource, item)
	if err != nil {
		t.Fatal(err)
	}
	want := limit.Quota("tpd", 100_000, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "America/New_York")
	tpd, _ := limit.Find(d.Limits, "tpd")
	if tpd != want {
		t.Fatalf("decoded %+v, want %+v", tpd, want)
	}
	if rpm, _ := limit.Find(d.Limits, "rpm"); rpm != limit.PerMinute("rpm", 100) {
		t.Fatalf("the dripping limit decoded as %+v", rpm)
	}
	enc, err := config.EncodeLimits(d.Limits)
	if err != nil {
		t.Fatal(err)
	}
	for attr, want := range map[string]string{"l_tpd_rsched": "S:m0h0", "l_tpd_ra": "N:0", "l_tpd_rp": "N:1", "l_tpd_cp": "N:100000", "sched_tz": "S:America/New_York"} {
		if got := ddbtest.Render(enc[attr]); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
}
