package config_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// TestSessionQuotaWritersGated: every setter of every level stores a set
// holding a session quota only past the version gate (ADR-141,
// docs/decisions.md P55): with the table's readers at 0.14.0 each is
// refused with a *VersionMismatchError and writes nothing, neither a new
// item nor a change to a level the Python client wrote; with readers at
// 0.15.0 each writes the Python client's very attributes (the hidden w_
// prefix, the window length in seconds) and raises client_min_version to
// 0.15.0.
func TestSessionQuotaWritersGated(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	set := []limit.Limit{pyRPM, pySession}
	if err := st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.14.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	for _, lv := range levels() {
		var vm *config.VersionMismatchError
		if err := lv.set(e.ctx, st, e.ns, set); !errors.As(err, &vm) || !vm.Gate || vm.ClientMinVersion != config.SessionQuotaVersion {
			t.Errorf("%s: %v, want the gate's refusal at %s", lv.name, err, config.SessionQuotaVersion)
		}
	}
	if n := e.count(t); n != 0 {
		t.Fatalf("%d items written past a refusing gate", n)
	}
	for _, lv := range levels() {
		k := lv.keys(e.ns)
		e.put(t, k, merge(lv.ident, pythonLevel()))
		before := e.get(t, k.Key)
		if err := lv.set(e.ctx, st, e.ns, []limit.Limit{pyRPM, limit.Session("session", 5, time.Hour)}); err == nil {
			t.Errorf("%s: a session quota stored over a Python level with readers at 0.14.0", lv.name)
		}
		if after := e.get(t, k.Key); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: a refused write changed the item:\n%v\n%v", lv.name, before, after)
		}
		if got, err := lv.get(e.ctx, st, e.ns); err != nil || !reflect.DeepEqual(got, set) {
			t.Errorf("%s: get = %v, %v, want the Python level's limits", lv.name, got, err)
		}
	}

	if err := st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.15.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	for _, lv := range levels() {
		if err := lv.set(e.ctx, st, e.ns, set); err != nil {
			t.Fatalf("%s: %v", lv.name, err)
		}
		got := e.get(t, lv.keys(e.ns).Key)
		for a, v := range pythonLevel() {
			if a == "config_version" {
				continue
			}
			if !reflect.DeepEqual(got[a], v) {
				t.Errorf("%s: %s = %v, want %v as the Python client writes it", lv.name, a, got[a], v)
			}
		}
		if ls, err := lv.get(e.ctx, st, e.ns); err != nil || !reflect.DeepEqual(ls, set) {
			t.Errorf("%s: read back %v, %v", lv.name, ls, err)
		}
	}
	rec, _, err := st.ReadVersion(e.ctx)
	if err != nil || rec.ClientMinVersion != config.SessionQuotaVersion {
		t.Fatalf("client_min_version %q (%v), want it ratcheted to %s", rec.ClientMinVersion, err, config.SessionQuotaVersion)
	}
}

// TestReadersFor: the version a limit set needs stored is the latest of
// its features' (soft 0.17.0 over session 0.15.0), "" for neither.
func TestReadersFor(t *testing.T) {
	for _, c := range []struct {
		set  []limit.Limit
		want string
	}{
		{[]limit.Limit{limit.PerMinute("rpm", 1)}, ""},
		{[]limit.Limit{limit.Session("s", 1, time.Hour)}, "0.15.0"},
		{[]limit.Limit{limit.Session("s", 1, time.Hour), limit.PerMinute("rpm", 1).AsSoft()}, "0.17.0"},
		{[]limit.Limit{limit.PerMinute("rpm", 1).AsSoft(), limit.Session("s", 1, time.Hour)}, "0.17.0"},
	} {
		if got := config.ReadersFor(c.set); got != c.want {
			t.Errorf("ReadersFor(%v) = %q, want %q", c.set, got, c.want)
		}
	}
}
