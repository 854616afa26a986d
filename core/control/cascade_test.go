package control_test

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// TestCascadePolicyReachesBuckets: a resource's cascade policy overrides
// the entity's own default on that resource, on existing buckets before the
// setter returns: off, the child's acquires no longer debit the parent;
// cleared, they do again. Audited.
func TestCascadePolicyReachesBuckets(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.CreateEntity(e.ctx, e.ns, "org", config.EntityOptions{}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.CreateEntity(e.ctx, e.ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}, ""); err != nil {
		t.Fatal(err)
	}
	e.acquire("key", "r")
	e.acquire("key", "r")
	parentTC := func() int64 { return consumed(e.bucket("org", "r", 0), "rpm") }
	if parentTC() != 2000 {
		t.Fatalf("parent tc %d, want 2000: the child cascades by its own default", parentTC())
	}
	p, err := e.ctl.SetCascade(e.ctx, e.ns, "", "r", config.CascadeOff, "ops")
	if err != nil || p.Stamped != 2 {
		t.Fatalf("cascade off: %+v, %v; want the child's and the parent's buckets re-stamped", p, err)
	}
	if got := e.acquire("key", "r"); got != "ok" || parentTC() != 2000 {
		t.Fatalf("cascade off: %s, parent tc %d; want the parent untouched", got, parentTC())
	}
	if _, err := e.ctl.SetCascade(e.ctx, e.ns, "", "r", config.CascadeUnset, "ops"); err != nil {
		t.Fatal(err)
	}
	if got := e.acquire("key", "r"); got != "ok" || parentTC() != 3000 {
		t.Fatalf("cascade cleared: %s, parent tc %d; want the parent debited again", got, parentTC())
	}
	evs, err := e.ctl.AuditEvents(e.ctx, e.ns, "$RESOURCE:r")
	if err != nil || len(evs) != 3 || evs[1].Action != "cascade_set" || evs[2].Action != "cascade_cleared" {
		t.Fatalf("audit %+v, %v", evs, err)
	}
	if evs, _ := e.ctl.AuditEvents(e.ctx, e.ns, "key"); len(evs) != 1 || evs[0].Action != "entity_created" || evs[0].Details["parent_id"] != "org" {
		t.Fatalf("entity audit %+v", evs)
	}
}

// TestBypassCreateIsFundedAsEnforced (ADR-151 decision 6, the part phase 1
// has): a bucket created under bypass starts at its full share, exactly
// as an enforced one; nothing is debited from it.
func TestBypassCreateIsFundedAsEnforced(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 10)}, ""); err != nil {
		t.Fatal(err)
	}
	e.set("", "r", config.AccessBypass)
	if got := e.acquire("new", "r"); got != "bypass" {
		t.Fatalf("first acquire: %s", got)
	}
	it := e.bucket("new", "r", 0)
	if tk(it, "rpm") != 10_000 || consumed(it, "rpm") != 1000 {
		t.Fatalf("created under bypass: tk %d tc %d, want the full share and the consumption counted", tk(it, "rpm"), consumed(it, "rpm"))
	}
}
