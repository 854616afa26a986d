package schema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

var bucketFields = []schema.LimitField{
	schema.LimitTokens, schema.LimitCapacity, schema.LimitRefillAmount, schema.LimitRefillPeriod,
	schema.LimitConsumed, schema.LimitGrantShards, schema.LimitTopUp, schema.LimitWindowStart,
	schema.LimitResetAfter, schema.LimitWindowAnchor, schema.LimitWindowConsumed,
	schema.LimitSchedule, schema.LimitResetSchedule, schema.LimitSoft,
}

func TestLimitFieldNames(t *testing.T) {
	want := "tk cp ra rp tc gc tu ws rsa wa wtc sched rsched soft"
	var got []string
	for _, f := range bucketFields {
		got = append(got, string(f))
		if !schema.IsBucketField(f) {
			t.Errorf("IsBucketField(%q) = false", f)
		}
	}
	if strings.Join(got, " ") != want {
		t.Errorf("bucket fields = %q, want %q", strings.Join(got, " "), want)
	}
	config := map[schema.LimitField]bool{"cp": true, "ra": true, "rp": true, "rsa": true, "sched": true, "rsched": true, "soft": true}
	for _, f := range bucketFields {
		if schema.IsConfigField(f) != config[f] {
			t.Errorf("IsConfigField(%q) = %v", f, !config[f])
		}
	}
	for _, f := range []schema.LimitField{"", "bx", "TK", "tk ", "rf"} {
		if schema.IsBucketField(f) || schema.IsConfigField(f) {
			t.Errorf("%q accepted as a field", f)
		}
	}
}

func TestBucketAttr(t *testing.T) {
	cases := []struct {
		limit string
		field schema.LimitField
		attr  string
	}{
		{"rpm", schema.LimitTokens, "b_rpm_tk"},
		{"wcu", schema.LimitCapacity, "b_wcu_cp"},
		{"tpm_v2", schema.LimitConsumed, "b_tpm_v2_tc"},
		{"a_b_c", schema.LimitResetSchedule, "b_a_b_c_rsched"},
		{"x.y-z", schema.LimitSoft, "b_x.y-z_soft"},
		{"rpm_tk", schema.LimitTokens, "b_rpm_tk_tk"}, // a name that looks like an attribute
	}
	for _, c := range cases {
		if got := schema.BucketAttr(c.limit, c.field); got != c.attr {
			t.Errorf("BucketAttr(%q, %q) = %q, want %q", c.limit, c.field, got, c.attr)
		}
		l, f, ok := schema.ParseBucketAttr(c.attr)
		if !ok || l != c.limit || f != c.field {
			t.Errorf("ParseBucketAttr(%q) = %q, %q, %v", c.attr, l, f, ok)
		}
	}
	// Structural: an unknown field parses (it must be preserved, not lost).
	if l, f, ok := schema.ParseBucketAttr("b_rpm_future"); !ok || l != "rpm" || f != "future" {
		t.Errorf("unknown field: %q %q %v", l, f, ok)
	}
	for _, attr := range []string{
		"", "b_", "b__tk", "b_rpm_", "b_rpm", "b_tk", "l_rpm_tk", "B_rpm_tk", "rf", "entity_id",
		"b_r#m_tk", "GSI2PK", "b_rpm_tk#od",
	} {
		if l, f, ok := schema.ParseBucketAttr(attr); ok {
			t.Errorf("ParseBucketAttr(%q) = %q, %q, true; want not ok", attr, l, f)
		}
	}
}

func TestConfigAttr(t *testing.T) {
	if got := schema.ConfigAttr("rpm", schema.LimitCapacity); got != "l_rpm_cp" {
		t.Errorf("ConfigAttr = %q", got)
	}
	if got := schema.HiddenConfigAttr("session_tokens", schema.LimitResetAfter); got != "w_session_tokens_rsa" {
		t.Errorf("HiddenConfigAttr = %q", got)
	}
	cases := []struct {
		attr   string
		limit  string
		field  schema.LimitField
		hidden bool
		ok     bool
	}{
		{"l_rpm_cp", "rpm", "cp", false, true},
		{"l_tpm_v2_ra", "tpm_v2", "ra", false, true},
		{"w_session_rsa", "session", "rsa", true, true},
		{"w_a_b_soft", "a_b", "soft", true, true},
		{"l_rpm_sched", "rpm", "sched", false, true},
		{"l_", "", "", false, false},
		{"l__cp", "", "", false, false},
		{"l_rpm_", "", "", false, false},
		{"l_rpm", "", "", false, false},
		{"b_rpm_cp", "", "", false, false},
		{"x_rpm_cp", "", "", false, false},
		{"config_version", "", "", false, false},
		{"sched_tz", "", "", false, false},
		{"w_r#m_cp", "", "", false, false},
	}
	for _, c := range cases {
		l, f, h, ok := schema.ParseConfigAttr(c.attr)
		if l != c.limit || f != c.field || h != c.hidden || ok != c.ok {
			t.Errorf("ParseConfigAttr(%q) = %q, %q, %v, %v; want %q, %q, %v, %v",
				c.attr, l, f, h, ok, c.limit, c.field, c.hidden, c.ok)
		}
		if ok {
			rebuilt := schema.ConfigAttr(l, f)
			if h {
				rebuilt = schema.HiddenConfigAttr(l, f)
			}
			if rebuilt != c.attr {
				t.Errorf("rebuilt %q from %q", rebuilt, c.attr)
			}
		}
	}
}

func TestSnapshotBookkeepingAttrs(t *testing.T) {
	if got := schema.OverdrawAttr("tpm"); got != "tpm#od" {
		t.Errorf("OverdrawAttr = %q", got)
	}
	for attr, want := range map[string]string{"tpm#od": "tpm", "a_b#od": "a_b"} {
		if l, ok := schema.ParseOverdrawAttr(attr); !ok || l != want {
			t.Errorf("ParseOverdrawAttr(%q) = %q, %v", attr, l, ok)
		}
	}
	for _, attr := range []string{"#od", "tpm", "tpm#o", "a#b#od", "tpm#od#od", "seq#0"} {
		if l, ok := schema.ParseOverdrawAttr(attr); ok {
			t.Errorf("ParseOverdrawAttr(%q) = %q, true", attr, l)
		}
	}
	if got := schema.SeqAttr(0); got != "seq#0" {
		t.Errorf("SeqAttr(0) = %q", got)
	}
	if got := schema.SeqAttr(31); got != "seq#31" {
		t.Errorf("SeqAttr(31) = %q", got)
	}
	for attr, want := range map[string]int{"seq#0": 0, "seq#31": 31} {
		if s, ok := schema.ParseSeqAttr(attr); !ok || s != want {
			t.Errorf("ParseSeqAttr(%q) = %d, %v", attr, s, ok)
		}
	}
	for _, attr := range []string{"seq#", "seq#01", "seq#-1", "seq#+1", "seq#x", "seq0", "SEQ#0", "tpm#od"} {
		if s, ok := schema.ParseSeqAttr(attr); ok {
			t.Errorf("ParseSeqAttr(%q) = %d, true", attr, s)
		}
	}
	// No bookkeeping name can be a limit name, so none can collide with a
	// counter.
	for _, a := range []string{schema.OverdrawAttr("tpm"), schema.SeqAttr(3)} {
		if schema.ValidateLimitName(a) == nil {
			t.Errorf("%q is a valid limit name", a)
		}
	}
}

func TestPadSequenceNumber(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0", strings.Repeat("0", 40)},
		{"1", strings.Repeat("0", 39) + "1"},
		{"49545115243490985018280067714973144582180062593244200961", ""}, // 56 digits: too long
		{"4954511524349098501828006771497314458218", "4954511524349098501828006771497314458218"},
		{"100000000000000000000", strings.Repeat("0", 19) + "100000000000000000000"},
	}
	for _, c := range cases {
		got, err := schema.PadSequenceNumber(c.in)
		if c.want == "" {
			var ke *schema.KeyError
			if !errors.As(err, &ke) {
				t.Errorf("PadSequenceNumber(%q) = %q, %v; want a *KeyError", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want || len(got) != schema.SequenceNumberWidth {
			t.Errorf("PadSequenceNumber(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "12a", "-1", "+1", " 1", "1.0"} {
		if got, err := schema.PadSequenceNumber(bad); err == nil {
			t.Errorf("PadSequenceNumber(%q) = %q, nil", bad, got)
		}
	}
	// Padding makes lexical order numeric order.
	nums := []string{"9", "10", "99", "100", "21000000000000000000", "300000000000000000000"}
	prev := ""
	for _, n := range nums {
		p, err := schema.PadSequenceNumber(n)
		if err != nil {
			t.Fatal(err)
		}
		if prev != "" && !(prev < p) {
			t.Errorf("padded %q does not sort after %q", p, prev)
		}
		prev = p
	}
}

// FuzzParseBucketAttr: parsing never panics; whatever parses rebuilds to
// the same name with a field free of '_'; and names built from a valid
// limit and a known field parse back to them. The same holds for config
// attributes.
func FuzzParseBucketAttr(f *testing.F) {
	for _, s := range []string{"b_rpm_tk", "b_tpm_v2_tc", "b__tk", "b_", "b_rpm_", "l_rpm_cp", "w_x_rsa", "b_a#b_tk", ""} {
		f.Add(s, "rpm", "tk")
	}
	f.Add("b_rpm_tk_tk", "rpm_tk", "rsched")
	f.Add("x", "a.b-c_d", "soft")
	f.Fuzz(func(t *testing.T, attr, limit, field string) {
		if l, fl, ok := schema.ParseBucketAttr(attr); ok {
			if got := schema.BucketAttr(l, fl); got != attr {
				t.Fatalf("ParseBucketAttr(%q) = %q, %q rebuilds to %q", attr, l, fl, got)
			}
			if l == "" || fl == "" || strings.Contains(string(fl), "_") || strings.Contains(l, "#") {
				t.Fatalf("ParseBucketAttr(%q) = %q, %q: bad split", attr, l, fl)
			}
		}
		if l, fl, hidden, ok := schema.ParseConfigAttr(attr); ok {
			rebuilt := schema.ConfigAttr(l, fl)
			if hidden {
				rebuilt = schema.HiddenConfigAttr(l, fl)
			}
			if rebuilt != attr || strings.Contains(string(fl), "_") {
				t.Fatalf("ParseConfigAttr(%q) = %q, %q, %v rebuilds to %q", attr, l, fl, hidden, rebuilt)
			}
		} else if hidden || l != "" || fl != "" {
			t.Fatalf("ParseConfigAttr(%q) returned values with ok=false", attr)
		}

		lf := schema.LimitField(field)
		if schema.ValidateLimitName(limit) != nil || !schema.IsBucketField(lf) {
			return
		}
		if l, fl, ok := schema.ParseBucketAttr(schema.BucketAttr(limit, lf)); !ok || l != limit || fl != lf {
			t.Fatalf("bucket attr round trip of (%q, %q) = %q, %q, %v", limit, field, l, fl, ok)
		}
		if l, fl, h, ok := schema.ParseConfigAttr(schema.HiddenConfigAttr(limit, lf)); !ok || !h || l != limit || fl != lf {
			t.Fatalf("hidden config attr round trip of (%q, %q) = %q, %q, %v, %v", limit, field, l, fl, h, ok)
		}
	})
}
