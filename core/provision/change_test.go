package provision_test

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
)

// TestChangeBeforeAfter: a plan's changes say the config they read and
// the config they leave — the manifest's for a create and an update, none
// for a delete of a target the owner created — which `zl limits diff`
// shows side by side.
func TestChangeBeforeAfter(t *testing.T) {
	e := newEnv(t)
	e.apply("namespace: tenant-alpha\nresources:\n  gpt-4: {limits: {rpm: {capacity: 100}}}\n  old: {disabled: true}\n")
	pl, err := e.prov.Plan(e.ctx, e.ns, e.parse("namespace: tenant-alpha\nresources:\n  gpt-4: {limits: {rpm: {capacity: 50}}}\n  new: {limits: {tpm: {capacity: 9}}}\n"), e.req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]provision.Change{}
	for _, c := range pl.Changes {
		got[string(c.Action)+" "+c.Target.String()] = c
	}
	if len(got) != 3 {
		t.Fatalf("changes %v", pl.Changes)
	}
	up := got["update gpt-4"]
	if b, a := up.Before().Limits, up.After().Limits; len(b) != 1 || b[0] != limit.PerMinute("rpm", 100) || len(a) != 1 || a[0] != limit.PerMinute("rpm", 50) {
		t.Fatalf("update: before %v after %v", b, a)
	}
	cr := got["create new"]
	if b, a := cr.Before(), cr.After(); len(b.Limits) != 0 || len(a.Limits) != 1 || a.Limits[0] != limit.PerMinute("tpm", 9) {
		t.Fatalf("create: before %+v after %+v", b, a)
	}
	del := got["delete old"]
	if b, a := del.Before(), del.After(); b.Disabled != config.AccessDisabled || a.Disabled != config.AccessInherit || len(a.Limits) != 0 {
		t.Fatalf("delete: before %+v after %+v", b, a)
	}
}
