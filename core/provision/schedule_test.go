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
