package config_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestRequireReadersAndRatchet: the writer gate opens only for readers at
// the feature's version (or this build), fails closed on a missing record
// or an unknown lambda_version, and the ratchet only ever raises
// client_min_version.
func TestRequireReadersAndRatchet(t *testing.T) {
	e := newBareEnv(t)
	st := e.store()
	var mv *config.MissingVersionError
	if err := st.RequireReaders(e.ctx, "0.17.0"); !errors.As(err, &mv) {
		t.Fatalf("no record: %v, want MissingVersionError", err)
	}
	for _, c := range []struct {
		lambda string // "" writes NULL
		open   bool
	}{
		{"", false}, {"0.16.3", false}, {"0.17.0rc1", false}, {"0.17.0", true}, {"0.18.2", true}, {"garbage", false},
	} {
		must(t, st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "", ClientMinVersion: "0.0.0"}))
		if c.lambda != "" {
			e.set(t, schema.VersionKey(), map[string]types.AttributeValue{"lambda_version": s(c.lambda)})
		}
		err := st.RequireReaders(e.ctx, "0.17.0")
		var vm *config.VersionMismatchError
		switch {
		case c.open && err != nil:
			t.Errorf("lambda_version %q: %v, want open", c.lambda, err)
		case !c.open && (!errors.As(err, &vm) || !vm.Gate || vm.ClientMinVersion != "0.17.0"):
			t.Errorf("lambda_version %q: %v, want a gate refusal", c.lambda, err)
		}
	}
	// The ratchet raises, never lowers.
	must(t, st.Ratchet(e.ctx, "0.17.0"))
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.17.0" {
		t.Fatalf("after ratchet to 0.17.0: %+v", rec)
	}
	must(t, st.Ratchet(e.ctx, "0.15.0"))
	e.set(t, schema.VersionKey(), map[string]types.AttributeValue{"client_min_version": s("0.18.1")})
	must(t, st.Ratchet(e.ctx, "0.17.0"))
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.18.1" {
		t.Fatalf("a lower ratchet lowered it: %+v", rec)
	}
}

// TestSoftLimitsPassTheGate (ADR-151 decision 7): storing a soft limit
// needs readers at 0.17.0 and ratchets client_min_version; a refused
// write changes nothing.
func TestSoftLimitsPassTheGate(t *testing.T) {
	e := newBareEnv(t)
	st := e.store()
	soft := []limit.Limit{limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000).AsSoft()}
	must(t, st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.16.0", ClientMinVersion: "0.0.0"}))
	var vm *config.VersionMismatchError
	if err := st.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "gpt", soft); !errors.As(err, &vm) {
		t.Fatalf("readers at 0.16.0: %v, want the gate's refusal", err)
	}
	if e.get(t, schema.ResourceConfigKey(e.ns, "gpt")) != nil {
		t.Fatal("a refused write stored the config")
	}
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.0.0" {
		t.Fatalf("a refused write ratcheted: %+v", rec)
	}
	// Hard limits pass without the gate.
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "gpt", soft[:1]))
	must(t, st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.17.0"}))
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "gpt", soft))
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.17.0" {
		t.Fatalf("after a soft limit: %+v, want client_min_version 0.17.0", rec)
	}
	got, err := st.GetResourceLimits(e.ctx, e.ns, "gpt")
	if err != nil || len(got) != 2 || !got[1].Soft || got[0].Soft {
		t.Fatalf("stored %+v, %v", got, err)
	}
}

// TestSetAccess: the tri-state setting on each level, kept apart from the
// item's limits; the walk sees it; system level and unknown values are
// refused; bypass passes the gate.
func TestSetAccess(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	r := st.Resolver()
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "gpt", []limit.Limit{limit.PerMinute("rpm", 10)}))
	walk := func(entity string) config.Walk {
		t.Helper()
		w, err := r.ResolveAccess(e.ctx, e.ns, entity, "gpt", config.AccessOptions{Consistent: true})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "gpt", config.AccessDisabled))
	if w := walk("a"); w.Mode != config.AccessDisabled || w.Level != config.LevelResource {
		t.Fatalf("resource disabled: %+v", w)
	}
	if got, _ := st.GetResourceLimits(e.ctx, e.ns, "gpt"); len(got) != 1 {
		t.Fatalf("the disable lost the limits: %v", got)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "a", "gpt", config.AccessEnforce)) // carve-out
	if w := walk("a"); w.Mode != config.AccessEnforce || w.Level != config.LevelEntity {
		t.Fatalf("carved out: %+v", w)
	}
	if w := walk("b"); w.Mode != config.AccessDisabled {
		t.Fatalf("another entity: %+v", w)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "b", schema.DefaultResource, config.AccessBypass))
	if w := walk("b"); w.Mode != config.AccessBypass || w.Level != config.LevelEntityDefault {
		t.Fatalf("entity-wide bypass: %+v", w)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "a", "gpt", config.AccessInherit))
	if w := walk("a"); w.Mode != config.AccessDisabled {
		t.Fatalf("carve-out removed: %+v", w)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "z", "gpt", config.AccessInherit)) // nothing to remove, nothing created
	if e.get(t, schema.EntityConfigKey(e.ns, "z", "gpt")) != nil {
		t.Fatal("inherit created an item")
	}
	for name, err := range map[string]error{
		"system":        st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "", config.AccessDisabled),
		"unknown value": st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "gpt", config.Access(42)),
		"bad resource":  st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "a#b", config.AccessDisabled),
	} {
		if !schema.IsValidationError(err) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.17.0" {
		t.Fatalf("bypass did not ratchet: %+v", rec)
	}
}

// TestSetCascade: the cascade policy is stored beside the item's other
// attributes, seen by the walk, gated at 0.16.0 and refused on the system
// level.
func TestSetCascade(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	must(t, st.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "gpt", config.AccessDisabled))
	must(t, st.Writer(capability.ConfigWrite{}).SetCascade(e.ctx, e.ns, "", "gpt", config.CascadeOff))
	w, err := st.Resolver().ResolveAccess(e.ctx, e.ns, "a", "gpt", config.AccessOptions{Consistent: true})
	if err != nil || w.Cascade != config.CascadeOff || w.Mode != config.AccessDisabled {
		t.Fatalf("walk %+v, %v", w, err)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetCascade(e.ctx, e.ns, "", "gpt", config.CascadeUnset))
	if w, _ := st.Resolver().ResolveAccess(e.ctx, e.ns, "a", "gpt", config.AccessOptions{Consistent: true}); w.Cascade != config.CascadeUnset || w.Mode != config.AccessDisabled {
		t.Fatalf("after unset: %+v", w)
	}
	if err := st.Writer(capability.ConfigWrite{}).SetCascade(e.ctx, e.ns, "", "", config.CascadeOn); !schema.IsValidationError(err) {
		t.Fatalf("system level: %v", err)
	}
	must(t, st.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.15.2"}))
	var vm *config.VersionMismatchError
	if err := st.Writer(capability.ConfigWrite{}).SetCascade(e.ctx, e.ns, "", "gpt", config.CascadeOn); !errors.As(err, &vm) {
		t.Fatalf("readers at 0.15.2: %v, want the gate's refusal", err)
	}
}
