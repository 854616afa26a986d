package usage

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

const fuzzNS = "fUzZ0000001"

// FuzzParseWindow: a name parses exactly when it is one of the three, and
// then prints back as itself; anything else is an *UnknownWindowError.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"hourly", "daily", "monthly", "Hourly", "", "weekly", "daily\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWindow(s)
		if err != nil {
			var uw *UnknownWindowError
			if !errors.As(err, &uw) || slices.Contains(Windows(), Window(s)) {
				t.Fatalf("ParseWindow(%q) = %v", s, err)
			}
			return
		}
		if w.String() != s || !w.known() {
			t.Fatalf("ParseWindow(%q) = %q", s, w)
		}
	})
}

// fuzzSelections are the selections the token fuzzer decodes against.
func fuzzSelections() []Selection {
	from, to := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	return []Selection{
		ForEntity("alice", "gpt-4", Hourly, from, to),
		ForResource("gpt-4", Daily, from, to),
	}
}

// FuzzPageToken decodes page tokens from outside (a command line, a URL):
// never a panic; what decodes is a key of the selection's query within its
// range, and encodes back to a token that decodes to the same key.
func FuzzPageToken(f *testing.F) {
	f.Add("", uint8(0))
	f.Add("e30", uint8(1))
	f.Add("not a token", uint8(0))
	for i, sel := range fuzzSelections() {
		first, last, _ := sel.starts()
		q := (&Reader{table: "t", ns: fuzzNS, pageSize: 1}).snapshotQuery(sel, first, last)
		var key map[string]types.AttributeValue
		if sel.ByResource() {
			k := schema.UsageItemKeys(fuzzNS, "bob", "gpt-4", "2026-02-01T00:00:00Z#daily")
			key = map[string]types.AttributeValue{"PK": schema.Str(k.Key.PK), "SK": schema.Str(k.Key.SK),
				"GSI2PK": schema.Str(k.GSI2.PK), "GSI2SK": schema.Str(k.GSI2.SK)}
		} else {
			key = schema.UsageKey(fuzzNS, "alice", "gpt-4", "2026-02-01T00:00:00Z#hourly").AttributeValues()
		}
		tok, err := encodeToken(key)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := decodeToken(sel, fuzzNS, tok, *q.lo, *q.hi); err != nil {
			f.Fatalf("a token of selection %d does not decode: %v", i, err)
		}
		f.Add(string(tok), uint8(i))
	}
	f.Fuzz(func(t *testing.T, tok string, which uint8) {
		sels := fuzzSelections()
		sel := sels[int(which)%len(sels)]
		first, last, _ := sel.starts()
		q := (&Reader{table: "t", ns: fuzzNS, pageSize: 1}).snapshotQuery(sel, first, last)
		key, err := decodeToken(sel, fuzzNS, PageToken(tok), *q.lo, *q.hi)
		if err != nil {
			var pte *PageTokenError
			if !errors.As(err, &pte) {
				t.Fatalf("error %v is not a *PageTokenError", err)
			}
			return
		}
		if tok == "" {
			if key != nil {
				t.Fatal("the empty token decoded to a key")
			}
			return
		}
		sortAttr := schema.AttrSK
		if sel.ByResource() {
			sortAttr = schema.AttrGSI2SK
		}
		if sk, _ := str(key[sortAttr]); sk < *q.lo || sk > *q.hi {
			t.Fatalf("sort key %q outside [%q, %q]", sk, *q.lo, *q.hi)
		}
		again, err := encodeToken(key)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeToken(sel, fuzzNS, again, *q.lo, *q.hi)
		if err != nil || !maps.EqualFunc(key, back, func(a, b types.AttributeValue) bool { x, _ := str(a); y, _ := str(b); return x == y }) {
			t.Fatalf("token %q: re-encoded %q decodes to %v, %v", tok, again, back, err)
		}
	})
}

// FuzzDecodeSnapshot decodes stored items built from fuzzed keys, window
// and attributes (a stored item is outside input): never a panic; what
// decodes has its key, a window start of its kind, and sorted limits with
// valid names.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(fuzzNS+"/ENTITY#alice", "#USAGE#gpt-4#2026-02-01T00:00:00Z#daily", "daily", "2026-02-01T00:00:00Z", "rpm=3,tpm=-20,tpm#od=2,seq#0=x,total_events=9")
	f.Add(fuzzNS+"/ENTITY#alice", "#USAGE#gpt-4#2026-02-01T05:00:00Z", "hourly", "2026-02-01T05:00:00Z", "seq=1,seq#od=1")
	f.Add(fuzzNS+"/ENTITY#a", "#USAGE#r#2026-02-01T00:00:00Z", "monthly", "2026-02-01T00:00:00Z", "")
	f.Add("x", "y", "z", "w", "=,==,a=")
	f.Fuzz(func(t *testing.T, pk, sk, window, start, attrs string) {
		it := map[string]types.AttributeValue{"PK": schema.Str(pk), "SK": schema.Str(sk), "window": schema.Str(window), "window_start": schema.Str(start)}
		for _, kv := range strings.Split(attrs, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "seq#") && !strings.HasSuffix(k, "#od") {
				it[k] = schema.Str(v)
			} else {
				it[k] = &types.AttributeValueMemberN{Value: v}
			}
		}
		s, err := DecodeSnapshot(fuzzNS, it)
		if err != nil {
			var ce *CorruptSnapshotError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CorruptSnapshotError", err)
			}
			return
		}
		suffix := strings.TrimPrefix(sk, schema.UsageKey(fuzzNS, s.Entity, s.Resource, formatStart(s.WindowStart)).SK)
		if k := schema.UsageKey(fuzzNS, s.Entity, s.Resource, formatStart(s.WindowStart)+suffix); k.PK != pk || k.SK != sk {
			t.Fatalf("decoded %+v from key %q %q", s, pk, sk)
		}
		if suffix != "" && suffix != s.Window.suffix() {
			t.Fatalf("window %s under suffix %q", s.Window, suffix)
		}
		if !s.Window.Start(s.WindowStart).Equal(s.WindowStart) {
			t.Fatalf("window start %v is not a %s start", s.WindowStart, s.Window)
		}
		for i, l := range s.Limits {
			if schema.ValidateLimitName(l.Name) != nil || (i > 0 && s.Limits[i-1].Name >= l.Name) {
				t.Fatalf("limits %+v", s.Limits)
			}
		}
	})
}
