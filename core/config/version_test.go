package config_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestParseVersion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0.17.0", "0.17.0"},
		{"v1.2.3", "1.2.3"},
		{"1.2.3-rc.1", "1.2.3-rc.1"},
		{"1.2.3-alpha", "1.2.3-alpha"},
		{"1.2.3+build.5", "1.2.3"},
		{"0.15.0.dev3", "0.15.0-dev.3"},
		{"0.15.0.dev3+gabcdef", "0.15.0-dev.3"},
		{"0.14.1.dev99+g1234567", "0.14.1-dev.99"},
		{"0.15.0rc1", "0.15.0-rc.1"},
		{"0.15.0a2", "0.15.0-a.2"},
		{"0.15.0b01", "0.15.0-b.1"},
		{"0.15.0rc1.dev3", "0.15.0-rc.1.dev.3"},
		{"0.15.0+d20260926", "0.15.0"},
	}
	for _, tc := range tests {
		v, err := config.ParseVersion(tc.in)
		if err != nil {
			t.Errorf("ParseVersion(%q): %v", tc.in, err)
			continue
		}
		if v.String() != tc.want {
			t.Errorf("ParseVersion(%q) = %s, want %s", tc.in, v, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "1.2", "1.2.x", "a.b.c", "1.2.3-", "1.2.3-a..b", "1.2.3.post1", "1.2.3rc", "1.2.3.dev",
		"1.2.3 ", "99999999999999999999.0.0", "1.2.3_rc1", "1.2.3-ü"} {
		if _, err := config.ParseVersion(bad); !schema.IsValidationError(err) {
			t.Errorf("ParseVersion(%q) = %v, want a validation error", bad, err)
		}
	}
}

// TestVersionCompare is the semver ordering table, PEP 440 forms included.
func TestVersionCompare(t *testing.T) {
	ascending := []string{
		"0.0.0",
		"0.9.9",
		"0.14.1.dev99+gabc", // a development build of the next release sorts below it
		"0.14.1",
		"0.15.0-1", // numeric identifiers before alphanumeric ones
		"0.15.0-a.1",
		"0.15.0-a.2",
		"0.15.0-a.10", // numeric identifiers compare as numbers
		"0.15.0b1",
		"0.15.0.dev3",
		"0.15.0-rc.1",
		"0.15.0rc1.dev3", // a longer identifier list sorts after its prefix
		"0.15.0rc2",
		"0.15.0",
		"0.15.1",
		"0.16.0",
		"0.17.0",
		"1.0.0-alpha",
		"1.0.0",
		"10.0.0",
	}
	parsed := make([]config.Version, len(ascending))
	for i, s := range ascending {
		v, err := config.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		parsed[i] = v
	}
	for i := range parsed {
		for j := range parsed {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := parsed[i].Compare(parsed[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ascending[i], ascending[j], got, want)
			}
		}
	}
	eq := [][2]string{{"1.2.3", "v1.2.3"}, {"1.2.3+a", "1.2.3+b"}, {"0.15.0rc1", "0.15.0-rc.1"}, {"0.15.0.dev3", "0.15.0-dev.3"}}
	for _, p := range eq {
		a, _ := config.ParseVersion(p[0])
		b, _ := config.ParseVersion(p[1])
		if a.Compare(b) != 0 {
			t.Errorf("Compare(%s, %s) != 0", p[0], p[1])
		}
	}
	v, _ := config.ParseVersion("0.15.0-rc.1")
	if v.Release().String() != "0.15.0" {
		t.Fatalf("Release = %s", v.Release())
	}
}

func TestCheckAndWriteVersion(t *testing.T) {
	e := newEnv(t)
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
	e := newEnv(t)
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

// FuzzParseVersion: parsing never panics, and whatever parses renders to a
// string that parses back to an equal version.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"0.17.0", "v1.2.3-rc.1+b", "0.15.0rc1.dev3", "0.15.0.dev3+g1", "1.2.3-a..b", "1.2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := config.ParseVersion(s)
		if err != nil {
			if !schema.IsValidationError(err) {
				t.Fatalf("error type %T", err)
			}
			return
		}
		w, err := config.ParseVersion(v.String())
		if err != nil {
			t.Fatalf("%q parsed to %s, which does not parse: %v", s, v, err)
		}
		if v.Compare(w) != 0 || w.Compare(v) != 0 {
			t.Fatalf("%q: %s does not round-trip (%s)", s, v, w)
		}
	})
}
