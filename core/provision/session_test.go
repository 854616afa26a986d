package provision_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// A manifest declaring a session quota is planned like any other (the plan
// shows the quota it would write) and refused by the apply before anything
// is read or written: no owner record, no claim, no config (docs/decisions.md
// P53). The same manifest without it applies.
func TestSessionQuotaPlannedNeverApplied(t *testing.T) {
	e := newEnv(t)
	const doc = "namespace: tenant-alpha\nresources:\n  r:\n    limits:\n      rpm: {capacity: 10}\n" +
		"      tokens: {capacity: 10000, refill_amount: 0, reset_after_seconds: 18000}\n"
	m := e.parse(doc)
	pl, err := e.prov.Plan(e.ctx, e.ns, m, e.req)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 {
		t.Fatalf("changes %v", pl.Changes)
	}
	if got, ok := limit.Find(pl.Changes[0].After().Limits, "tokens"); !ok || got != limit.Session("tokens", 10_000, 5*time.Hour) {
		t.Fatalf("planned %+v", pl.Changes[0].After().Limits)
	}

	e.proxy.ResetStats()
	for _, apply := range []func() error{
		func() error { _, err := e.prov.Apply(e.ctx, e.ns, m, e.req); return err },
		func() error { _, err := e.prov.ApplyPlan(e.ctx, pl); return err },
	} {
		err := apply()
		var ue *manifest.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, limit.ErrSessionQuotaUnsupported) || len(ue.Problems) != 1 ||
			ue.Problems[0].Path != "resources.r.limits.tokens.reset_after_seconds" {
			t.Fatalf("apply = %v, want the session quota refused", err)
		}
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("a refused apply wrote %s", w)
	}
	if st, err := e.prov.ReadState(e.ctx, e.ns, e.req.Owner); err != nil || st.Found {
		t.Fatalf("owner record after a refused apply: %+v %v", st, err)
	}
	e.apply("namespace: tenant-alpha\nresources: {r: {limits: {rpm: {capacity: 10}}}}")
	if got, err := e.store.GetResourceLimits(e.ctx, e.ns, "r"); err != nil || len(got) != 1 || got[0] != limit.PerMinute("rpm", 10) {
		t.Fatalf("after the supported apply: %v %v", got, err)
	}
}
