package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

func entry(cron string, scale, c, a, p int64) Entry {
	return Entry{Cron: MustParseCron(cron), ScalePerMille: scale, Capacity: c, RefillAmount: a, RefillPeriodSeconds: p}
}

// The stored strings of the Python client's own examples.
func TestEncodeMatchesUpstream(t *testing.T) {
	for _, tc := range []struct {
		s    Schedule
		want string
	}{
		{Schedule{entry("* 9-17 * * MON-FRI", 500, 0, 0, 0), entry("* 0-6 * * *", 0, 2000, 0, 0)}, "h9-17w1-5s500;h0-6c2000"},
		{Schedule{entry("* * * * 0", 500, 0, 0, 0)}, "w7s500"},
		{Schedule{entry("* * * * 7", 500, 0, 0, 0)}, "w7s500"},
		{Schedule{entry("* * * * sun", 500, 0, 0, 0)}, "w7s500"},
		{Schedule{entry("* * * * 6,0", 500, 0, 0, 0)}, "w6,7s500"},
		{Schedule{entry("* * * * SAT,SUN", 250, 0, 0, 0)}, "w6,7s250"},
		{Schedule{entry("* * * * SUN-THU", 500, 0, 0, 0)}, "w0-4s500"},
		{Schedule{entry("*/15 * * * *", 500, 0, 0, 0)}, "m*/15s500"},
		{Schedule{entry("* * 1-7 * *", 500, 0, 0, 0)}, "D1-7s500"},
		{Schedule{entry("0 0 1 JAN,JUL *", 0, 5000, 0, 0)}, "m0h0D1M1,7c5000"},
		{Schedule{entry("* * * * *", 0, 7, 3, 30)}, "c7a3p30"},
		{Schedule{entry("* * * * *", 0, 4, 0, 60)}, "c4p60"},
		{Schedule{entry("* * * * *", 2300, 0, 0, 0)}, "s2300"},
		{Schedule{entry("* * * * *", 333, 0, 0, 0)}, "s333"},
		{Schedule{entry("* * * * *", 1, 0, 0, 0)}, "s1"},
		{nil, ""},
	} {
		if err := tc.s.Validate(); err != nil {
			t.Errorf("%q: %v", tc.want, err)
		}
		got := tc.s.Encode()
		if got != tc.want {
			t.Errorf("Encode = %q, want %q", got, tc.want)
		}
		back, err := Decode(got)
		if err != nil {
			t.Errorf("Decode(%q): %v", got, err)
			continue
		}
		if back.Encode() != got || len(back) != len(tc.s) {
			t.Errorf("Decode(%q) re-encodes as %q", got, back.Encode())
		}
		for i := range back {
			if !back[i].Cron.Equal(tc.s[i].Cron) || back[i].ScalePerMille != tc.s[i].ScalePerMille ||
				back[i].Capacity != tc.s[i].Capacity || back[i].RefillAmount != tc.s[i].RefillAmount ||
				back[i].RefillPeriodSeconds != tc.s[i].RefillPeriodSeconds {
				t.Errorf("Decode(%q)[%d] = %+v, want %+v", got, i, back[i], tc.s[i])
			}
		}
	}
	if got := (Resets{MustParseCron("0 0 * * *")}).Encode(); got != "m0h0" {
		t.Errorf("reset Encode = %q, want m0h0", got)
	}
	if got := (Resets{MustParseCron("0 0 1 * *"), MustParseCron("0 12 * * MON")}).Encode(); got != "m0h0D1;m0h12w1" {
		t.Errorf("reset Encode = %q", got)
	}
}

// A newer Python client's versioned text reads the same; an unknown
// version is refused.
func TestDecodeVersioned(t *testing.T) {
	s, err := Decode("1h9-17w1-5s500;h0-6c2000")
	if err != nil || s.Encode() != "h9-17w1-5s500;h0-6c2000" {
		t.Errorf("Decode(versioned) = %q, %v", s.Encode(), err)
	}
	if s, err := Decode("1w6,7s250"); err != nil || len(s) != 1 || s[0].ScalePerMille != 250 || s[0].Cron.String() != "* * * * 6,7" {
		t.Errorf("Decode(1w6,7s250) = %+v, %v", s, err)
	}
	r, err := DecodeResets("1m0h0")
	if err != nil || len(r) != 1 || r[0].String() != "0 0 * * *" {
		t.Errorf("DecodeResets(1m0h0) = %v, %v", r, err)
	}
	for _, text := range []string{"2h9-17s500", "0h9-17s500", "1", "99999999999999999999h1s1"} {
		var ee *EncodingError
		if _, err := Decode(text); !errors.As(err, &ee) {
			t.Errorf("Decode(%q) = %v, want an *EncodingError", text, err)
		}
	}
	for _, text := range []string{"", None} {
		if s, err := Decode(text); err != nil || s != nil {
			t.Errorf("Decode(%q) = %v, %v", text, s, err)
		}
		if r, err := DecodeResets(text); err != nil || r != nil {
			t.Errorf("DecodeResets(%q) = %v, %v", text, r, err)
		}
	}
}

func TestDecodeRefused(t *testing.T) {
	for _, tc := range []struct {
		text   string
		offset int
	}{
		{"h", 0},                 // a tag with no value
		{"h9-17!", 0},            // not a cron field
		{"?", 0},                 // no tag
		{"h9-17w", 5},            // w with no value
		{"Xh9-17s500", 0},        // no tag X
		{"h9-17h0-6c10", 5},      // h twice
		{"h99c10", 0},            // hour out of range
		{"h9-17", 0},             // neither scale nor absolute
		{"h9-17s500c10", 0},      // both
		{"h9-17s500;", 10},       // empty entry
		{"s500;;s2", 5},          // empty entry
		{"s0", 0},                // not positive
		{"s-5", 0},               // not positive
		{"c+5", 0},               // not a plain number
		{"c1000000000000001", 0}, // beyond MaxTokens
		{"p1000000000001", 0},    // beyond MaxPeriodSeconds
		{"D30M2s500", 0},         // matches no minute
		{"h9 17s5", 0},           // a space
		{"hMONs5", 0},            // M is a tag: h has no value
	} {
		_, err := Decode(tc.text)
		var ee *EncodingError
		if !errors.As(err, &ee) {
			t.Errorf("Decode(%q) = %v, want an *EncodingError", tc.text, err)
			continue
		}
		if ee.Offset != tc.offset || ee.Text != tc.text {
			t.Errorf("Decode(%q): offset %d, want %d (%v)", tc.text, ee.Offset, tc.offset, err)
		}
	}
	var ee *EncodingError
	if _, err := DecodeResets("m0h0s500"); !errors.As(err, &ee) || ee.Offset != 4 {
		t.Errorf("DecodeResets with a scale = %v", err)
	}
	// A reset entry that matches no minute is still read (and resets
	// nothing); only writers refuse it.
	if r, err := DecodeResets("m0h0D30M2"); err != nil || len(r) != 1 || r.Validate() == nil {
		t.Errorf("DecodeResets(never) = %v, %v", r, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"h9-17w1-5s500;h0-6c2000", "1w6,7s250", "m0h0D1M1,7c5000", "c7a3p30", "m*/15s500", "h9-17h0-6c10", "1m0h0", "-", "D30M2s5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Decode(text)
		if err != nil {
			var ee *EncodingError
			if !errors.As(err, &ee) {
				t.Fatalf("Decode(%q): untyped error %v", text, err)
			}
		} else {
			enc := s.Encode()
			again, err := Decode(enc)
			if err != nil || again.Encode() != enc || len(again) != len(s) {
				t.Fatalf("Decode(%q) = %q does not read back: %v", text, enc, err)
			}
		}
		r, err := DecodeResets(text)
		if err == nil {
			enc := r.Encode()
			if again, err := DecodeResets(enc); err != nil || again.Encode() != enc {
				t.Fatalf("DecodeResets(%q) = %q does not read back: %v", text, enc, err)
			}
		}
	})
}

func TestEffective(t *testing.T) {
	ny := zone(t, "America/New_York")
	base := bucket.Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000, GrantShards: 2, TopUp: 5}
	s := Schedule{entry("* 9-17 * * MON-FRI", 500, 0, 0, 0), entry("* 0-6 * * *", 0, 2000, 0, 0), entry("* 7 * * *", 0, 0, 50, 30)}
	for _, tc := range []struct {
		now  string
		want bucket.Params
	}{
		// Tuesday 10:00 EDT: halved; GrantShards and TopUp untouched.
		{"2026-09-15T14:00:00Z", bucket.Params{Capacity: 50_000, RefillAmount: 50_000, RefillPeriod: 60_000, GrantShards: 2, TopUp: 5}},
		// 03:00 EDT: absolute capacity 2,000 tokens, the rest its own.
		{"2026-09-15T07:00:00Z", bucket.Params{Capacity: 2_000_000, RefillAmount: 100_000, RefillPeriod: 60_000, GrantShards: 2, TopUp: 5}},
		// 07:00 EDT: refill 50 tokens per 30 s.
		{"2026-09-15T11:00:00Z", bucket.Params{Capacity: 100_000, RefillAmount: 50_000, RefillPeriod: 30_000, GrantShards: 2, TopUp: 5}},
		// Saturday 10:00: nothing in force.
		{"2026-09-19T14:00:00Z", base},
	} {
		if got := s.Effective(base, at(t, tc.now), ny); got != tc.want {
			t.Errorf("Effective at %s = %+v, want %+v", tc.now, got, tc.want)
		}
	}
	// First match wins: hours 0-6 and 9-17 never overlap, but an earlier
	// entry does beat a later one.
	both := Schedule{entry("* * * * *", 250, 0, 0, 0), entry("* * * * *", 4000, 0, 0, 0)}
	if got := both.Effective(base, at(t, "2026-09-15T14:00:00Z"), ny); got.Capacity != 25_000 {
		t.Errorf("first entry did not win: %+v", got)
	}
	// The float product the Python client truncates: 100 × 0.29 is
	// 28.999999999999996 there, so 28, not 29.
	odd := Schedule{entry("* * * * *", 290, 0, 0, 0)}
	if got := odd.Effective(bucket.Params{Capacity: 100, RefillAmount: 0, RefillPeriod: 1000}, at(t, "2026-09-15T14:00:00Z"), time.UTC); got.Capacity != 28 || got.RefillAmount != 0 {
		t.Errorf("scaled = %+v, want capacity 28 and a quota's refill 0", got)
	}
	// Never below one millitoken.
	tiny := Schedule{entry("* * * * *", 1, 0, 0, 0)}
	if got := tiny.Effective(bucket.Params{Capacity: 10, RefillAmount: 10, RefillPeriod: 1000}, at(t, "2026-09-15T14:00:00Z"), time.UTC); got.Capacity != 1 || got.RefillAmount != 1 {
		t.Errorf("scaled = %+v, want 1 and 1", got)
	}
}

func TestNextBoundary(t *testing.T) {
	ny := zone(t, "America/New_York")
	business := Schedule{entry("* 9-17 * * MON-FRI", 500, 0, 0, 0)}
	daily := Resets{MustParseCron("0 0 * * *")}
	for _, tc := range []struct {
		s    Schedule
		r    Resets
		now  string
		want string
	}{
		// Upstream's example: at 22:00 EDT the daily reset at midnight
		// comes before Wednesday's 09:00.
		{business, daily, "2026-09-16T02:00:00Z", "2026-09-16T04:00:00Z"},
		{business, daily, "2026-09-15T10:00:00Z", "2026-09-15T13:00:00Z"},
		{business, nil, "2026-09-16T02:00:00Z", "2026-09-16T13:00:00Z"},
		{nil, daily, "2026-09-15T10:00:00Z", "2026-09-16T04:00:00Z"},
		{nil, nil, "2026-09-15T10:00:00Z", ""},
	} {
		got, ok := NextBoundary(tc.s, tc.r, at(t, tc.now), ny)
		if tc.want == "" {
			if ok {
				t.Errorf("NextBoundary at %s = %s, want none", tc.now, got)
			}
			continue
		}
		if !ok || !got.Equal(at(t, tc.want)) {
			t.Errorf("NextBoundary at %s = %s, %v; want %s", tc.now, got.UTC(), ok, tc.want)
		}
	}
	two := Resets{MustParseCron("0 0 * * *"), MustParseCron("0 12 * * *")}
	if p, ok := two.PrevEdge(at(t, "2026-09-15T19:00:00Z"), ny); !ok || !p.Equal(at(t, "2026-09-15T16:00:00Z")) {
		t.Errorf("PrevEdge over two entries = %s, %v", p.UTC(), ok)
	}
	if n, ok := two.NextEdge(at(t, "2026-09-15T19:00:00Z"), ny); !ok || !n.Equal(at(t, "2026-09-16T04:00:00Z")) {
		t.Errorf("NextEdge over two entries = %s, %v", n.UTC(), ok)
	}
}
