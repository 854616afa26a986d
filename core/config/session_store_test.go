package config_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// TestSessionQuotaWritersRefuse: every setter of every level, and the bulk
// create, refuses a set holding a session quota with an *limit.UnsupportedError
// that says session quotas are not supported by this version yet, and
// writes nothing: neither a new item nor a change to a level the Python
// client wrote with one (docs/decisions.md P53).
func TestSessionQuotaWritersRefuse(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	w := st.Writer(capability.ConfigWrite{})
	set := []limit.Limit{limit.PerMinute("rpm", 100), limit.Session("session", 10_000, 5*time.Hour)}
	check := func(what string, err error) {
		t.Helper()
		var ue *limit.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, limit.ErrSessionQuotaUnsupported) || ue.Value != "session" {
			t.Errorf("%s: %v, want the session quota refused", what, err)
		}
	}
	for _, lv := range levels() {
		check(lv.name, lv.set(e.ctx, st, e.ns, set))
	}
	_, err := w.CreateEntityConfigs(e.ctx, e.ns, []config.NewEntityConfig{
		{Entity: "u", Resource: "r", Limits: []limit.Limit{limit.PerMinute("rpm", 5)}},
		{Entity: "v", Resource: "r", Limits: set},
	})
	check("CreateEntityConfigs", err)
	if n := e.count(t); n != 0 {
		t.Fatalf("%d items written for a refused session quota", n)
	}

	// A level the Python client wrote keeps its session quota: the refused
	// write changes nothing, and the getter reads it (docs/decisions.md P55).
	for _, lv := range levels() {
		k := lv.keys(e.ns)
		e.put(t, k, merge(lv.ident, pythonLevel()))
		before := e.get(t, k.Key)
		check(lv.name+" over a Python level", lv.set(e.ctx, st, e.ns, set))
		if after := e.get(t, k.Key); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: a refused write changed the item:\n%v\n%v", lv.name, before, after)
		}
		if got, err := lv.get(e.ctx, st, e.ns); err != nil || !reflect.DeepEqual(got, []limit.Limit{pyRPM, pySession}) {
			t.Errorf("%s: get = %v, %v, want the Python level's limits", lv.name, got, err)
		}
	}
}
