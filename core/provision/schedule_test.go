package provision_test

import (
	"fmt"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// A manifest limit with a schedule is written to its config item as the
// Python client stores it; the same manifest with the weekdays spelt as
// numbers changes nothing; dropping the schedule removes it.
func TestApplyScheduledLimit(t *testing.T) {
	e := newEnv(t)
	const doc = `
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      rpm:
        capacity: 100
        schedule:
          - {cron: "* 9-17 * * %s", tz: America/New_York, scale: 0.5}
`
	e.apply(fmt.Sprintf(doc, "MON-FRI"))
	it := e.item(schema.ResourceConfigKey(e.ns, "gpt-4"))
	if got := ddbtest.Render(it["l_rpm_sched"]); got != "S:h9-17w1-5s500" {
		t.Errorf("l_rpm_sched = %s", got)
	}
	if got := ddbtest.Render(it["sched_tz"]); got != "S:America/New_York" {
		t.Errorf("sched_tz = %s", got)
	}
	if res := e.apply(fmt.Sprintf(doc, "1-5")); res.StateWritten || len(res.Changes) != 0 {
		t.Errorf("the same schedule spelt with numbers: %d changes, state written %v; want nothing", len(res.Changes), res.StateWritten)
	}
	e.apply(`
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      rpm: {capacity: 100}
`)
	it = e.item(schema.ResourceConfigKey(e.ns, "gpt-4"))
	if _, ok := it["l_rpm_sched"]; ok {
		t.Error("l_rpm_sched left behind")
	}
	if _, ok := it["sched_tz"]; ok {
		t.Error("sched_tz left behind")
	}
}

// A manifest quota is written to its config item as the Python client
// stores it: refill amount 0, the reset schedule in its compact form
// beside the item's zone. Applying it again, or with the cron spelt
// another way, writes nothing; another cron is a change of limits.
func TestApplyQuota(t *testing.T) {
	e := newEnv(t)
	const doc = `
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      tpd:
        capacity: 1000000
        refill_amount: 0
        reset_schedule:
          - {cron: "%s", tz: America/New_York}
`
	res := e.apply(fmt.Sprintf(doc, "0 0 * * *"))
	if res.Created != 1 {
		t.Fatalf("created %d, want 1: %v", res.Created, res.Changes)
	}
	it := e.item(schema.ResourceConfigKey(e.ns, "gpt-4"))
	for attr, want := range map[string]string{
		"l_tpd_rsched": "S:m0h0", "l_tpd_ra": "N:0", "l_tpd_cp": "N:1000000", "l_tpd_rp": "N:1", "sched_tz": "S:America/New_York",
	} {
		if got := ddbtest.Render(it[attr]); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
	if _, ok := it["l_tpd_sched"]; ok {
		t.Error("a quota without a parameter schedule stores l_tpd_sched")
	}
	if res := e.apply(fmt.Sprintf(doc, "0 0 * * *")); res.StateWritten || len(res.Changes) != 0 {
		t.Errorf("the same manifest again: %v, state written %v; want nothing", res.Changes, res.StateWritten)
	}
	if res := e.apply(fmt.Sprintf(doc, "0  0  *  *  *")); res.StateWritten || len(res.Changes) != 0 {
		t.Errorf("the same cron spelt another way: %v, state written %v; want nothing", res.Changes, res.StateWritten)
	}
	pl, err := e.prov.Plan(e.ctx, e.ns, e.parse(fmt.Sprintf(doc, "0 0 1 * *")), e.req)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 || pl.Changes[0].String() != "update resource gpt-4 (limits)" {
		t.Fatalf("plan of a monthly reset: %v", pl.Changes)
	}
	e.apply(fmt.Sprintf(doc, "0 0 1 * *"))
	if got := ddbtest.Render(e.item(schema.ResourceConfigKey(e.ns, "gpt-4"))["l_tpd_rsched"]); got != "S:m0h0D1" {
		t.Errorf("l_tpd_rsched after the change = %s", got)
	}
	// Back to a limit that drips: the reset schedule and the zone go.
	e.apply(`
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      tpd: {capacity: 1000000}
`)
	it = e.item(schema.ResourceConfigKey(e.ns, "gpt-4"))
	for _, attr := range []string{"l_tpd_rsched", "sched_tz"} {
		if _, ok := it[attr]; ok {
			t.Errorf("%s left behind", attr)
		}
	}
}

// One limit with both a parameter schedule and a reset schedule, in one
// zone: both stored beside one sched_tz, and the weekdays spelt as
// numbers change nothing.
func TestApplyQuotaWithSchedule(t *testing.T) {
	e := newEnv(t)
	const doc = `
namespace: tenant-alpha
entities:
  api-key-1:
    resources:
      gpt-4:
        limits:
          tpd:
            capacity: 50000
            refill_amount: 0
            schedule:
              - {cron: "* 9-17 * * %s", tz: Europe/Paris, scale: 0.5}
            reset_schedule:
              - {cron: "0 0 * * %s", tz: Europe/Paris}
`
	e.apply(fmt.Sprintf(doc, "MON-FRI", "MON"))
	it := e.item(schema.EntityConfigKey(e.ns, "api-key-1", "gpt-4"))
	for attr, want := range map[string]string{
		"l_tpd_sched": "S:h9-17w1-5s500", "l_tpd_rsched": "S:m0h0w1", "l_tpd_ra": "N:0", "sched_tz": "S:Europe/Paris",
	} {
		if got := ddbtest.Render(it[attr]); got != want {
			t.Errorf("%s = %s, want %s", attr, got, want)
		}
	}
	if res := e.apply(fmt.Sprintf(doc, "1-5", "1")); res.StateWritten || len(res.Changes) != 0 {
		t.Errorf("the same schedules spelt with numbers: %v, state written %v; want nothing", res.Changes, res.StateWritten)
	}
}
