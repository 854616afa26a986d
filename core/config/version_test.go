package config_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestCheckAndWriteVersion(t *testing.T) {
	e := newBareEnv(t)
	clock := newClock()
	st := e.store(config.WithClock(clock.Now))
	ctx := e.ctx

	// A fresh table: no record, allowed.
	vc, err := st.CheckVersion(ctx, "0.17.0")
	if err != nil || vc.Found {
		t.Fatalf("fresh table: %+v, %v", vc, err)
	}
	if _, err := st.CheckVersion(ctx, "not-a-version"); !schema.IsValidationError(err) {
		t.Fatalf("bad own version = %v", err)
	}

	must(t, st.WriteVersion(ctx, config.VersionRecord{ClientMinVersion: "0.15.0", LambdaVersion: "0.16.0", UpdatedBy: "test"}))
	raw := e.get(t, schema.VersionKey())
	if sAttr(raw, "schema_version") != config.SchemaVersion || sAttr(raw, "client_min_version") != "0.15.0" ||
		sAttr(raw, "lambda_version") != "0.16.0" || sAttr(raw, "updated_by") != "test" ||
		sAttr(raw, "updated_at") != "2026-11-29T10:20:30Z" || sAttr(raw, "GSI4PK") != "_" || sAttr(raw, "GSI4SK") != "_/SYSTEM#" {
		t.Fatalf("record = %v", raw)
	}

	cases := []struct {
		own        string
		mismatch   bool
		schemaErr  bool
		updateHint bool
	}{
		{"0.17.0", false, false, true},           // lambda 0.16.0 is older
		{"0.16.0", false, false, false},          // same release
		{"0.16.0rc1", false, false, false},       // release part only
		{"0.15.0", false, false, false},          // at the minimum
		{"0.15.0rc1", true, false, false},        // a pre-release is below its release
		{"0.14.9", true, false, false},           // below the minimum
		{"0.15.0.dev3+gabc", true, false, false}, // PEP 440 dev build below the release
		{"1.0.0", false, true, false},            // schema 0.10.0: majors differ
	}
	for _, c := range cases {
		vc, err := st.CheckVersion(ctx, c.own)
		var vm *config.VersionMismatchError
		var is *config.IncompatibleSchemaError
		switch {
		case c.mismatch:
			if !errors.As(err, &vm) || vm.ClientMinVersion != "0.15.0" || vm.ClientVersion != c.own || vm.LambdaVersion != "0.16.0" {
				t.Errorf("%s: %v, want VersionMismatchError", c.own, err)
			}
		case c.schemaErr:
			if !errors.As(err, &is) || is.SchemaVersion != config.SchemaVersion || is.MigrationGuideURL == "" {
				t.Errorf("%s: %v, want IncompatibleSchemaError", c.own, err)
			}
		default:
			if err != nil || !vc.Found || vc.LambdaUpdateAvailable != c.updateHint {
				t.Errorf("%s: %+v, %v; want ok with update hint %v", c.own, vc, err, c.updateHint)
			}
		}
	}

	// client_min_version never goes down; unknown attributes survive.
	e.set(t, schema.VersionKey(), map[string]types.AttributeValue{"template_version": s("0.9.0")})
	must(t, st.WriteVersion(ctx, config.VersionRecord{ClientMinVersion: "0.1.0"}))
	rec, found, err := st.ReadVersion(ctx)
	if err != nil || !found || rec.ClientMinVersion != "0.15.0" || rec.LambdaVersion != "" || rec.UpdatedBy != "" {
		t.Fatalf("after a lower write: %+v, %v, %v", rec, found, err)
	}
	raw = e.get(t, schema.VersionKey())
	if _, ok := raw["lambda_version"].(*types.AttributeValueMemberNULL); !ok || sAttr(raw, "template_version") != "0.9.0" {
		t.Fatalf("record = %v", raw)
	}
	must(t, st.WriteVersion(ctx, config.VersionRecord{ClientMinVersion: "0.16.0"}))
	if rec, _, _ := st.ReadVersion(ctx); rec.ClientMinVersion != "0.16.0" {
		t.Fatalf("ratchet up: %+v", rec)
	}
	if err := st.WriteVersion(ctx, config.VersionRecord{SchemaVersion: "zero"}); !schema.IsValidationError(err) {
		t.Fatalf("bad schema version = %v", err)
	}

	// A record whose schema_version does not parse is incompatible.
	e.set(t, schema.VersionKey(), map[string]types.AttributeValue{"schema_version": s("garbage")})
	var is *config.IncompatibleSchemaError
	if _, err := st.CheckVersion(ctx, "0.17.0"); !errors.As(err, &is) {
		t.Fatalf("garbage schema = %v", err)
	}
}

// TestWriteVersionRatchetRace: a concurrent writer raises client_min_version
// between WriteVersion's read and its write; the conditional write fails and
// the retry keeps the higher value.
func TestWriteVersionRatchetRace(t *testing.T) {
	e := newBareEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	st := config.NewStore(p.DynamoDB(), e.tbl.Name)
	must(t, st.WriteVersion(e.ctx, config.VersionRecord{ClientMinVersion: "0.10.0"}))
	p.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Delay(0), Count: 1,
		OnFire: func(string) {
			e.set(t, schema.VersionKey(), map[string]types.AttributeValue{"client_min_version": s("0.17.0")})
		}})
	p.ResetStats()
	must(t, st.WriteVersion(e.ctx, config.VersionRecord{ClientMinVersion: "0.12.0"}))
	if rec, _, _ := st.ReadVersion(e.ctx); rec.ClientMinVersion != "0.17.0" {
		t.Fatalf("client_min_version = %s, want the concurrent 0.17.0 kept", rec.ClientMinVersion)
	}
	if f := p.StatsFor("UpdateItem"); f.Forwarded != 2 {
		t.Fatalf("UpdateItem forwarded %d, want 2 (one lost, one retried)", f.Forwarded)
	}
}
