package version

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
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
		v, err := Parse(tc.in)
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
		if _, err := Parse(bad); !schema.IsValidationError(err) {
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
	parsed := make([]Version, len(ascending))
	for i, s := range ascending {
		v, err := Parse(s)
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
		a, _ := Parse(p[0])
		b, _ := Parse(p[1])
		if a.Compare(b) != 0 {
			t.Errorf("Compare(%s, %s) != 0", p[0], p[1])
		}
	}
	v, _ := Parse("0.15.0-rc.1")
	if v.Release().String() != "0.15.0" {
		t.Fatalf("Release = %s", v.Release())
	}
}

// FuzzParseVersion: parsing never panics, and whatever parses renders to a
// string that parses back to an equal version.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"0.17.0", "v1.2.3-rc.1+b", "0.15.0rc1.dev3", "0.15.0.dev3+g1", "1.2.3-a..b", "1.2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			if !schema.IsValidationError(err) {
				t.Fatalf("error type %T", err)
			}
			return
		}
		w, err := Parse(v.String())
		if err != nil {
			t.Fatalf("%q parsed to %s, which does not parse: %v", s, v, err)
		}
		if v.Compare(w) != 0 || w.Compare(v) != 0 {
			t.Fatalf("%q: %s does not round-trip (%s)", s, v, w)
		}
	})
}
