package lookback

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"24h":     24 * time.Hour,
		"90m":     90 * time.Minute,
		"1h30m":   90 * time.Minute,
		"1s":      time.Second,
		"7d":      7 * 24 * time.Hour,
		"1d12h":   36 * time.Hour,
		"0d1h":    time.Hour,
		"007d":    7 * 24 * time.Hour,
		"106751d": 106751 * 24 * time.Hour,
		"1.5h":    90 * time.Minute,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, reason := range map[string]string{
		"":           "not after now",
		"0":          "not after now",
		"0d":         "not after now",
		"0s":         "not after now",
		"-2h":        "signed",
		"1d-2h":      "signed",
		"+1h":        "signed",
		"-1d":        "not a number of days",
		"d":          "not a number of days",
		"7 d":        "not a number of days",
		"1.5d":       "not a number of days",
		"1000000d":   "not a number of days",
		"106752d":    "more than 106751 days",
		"3w":         "not a duration",
		"24":         "not a duration",
		"1d2d":       "not a duration",
		"1dh":        "not a duration",
		"yesterday":  "not a number of days", // its d comes first
		"106751d24h": "too long",
		"2562048h":   "not a duration", // past what a duration holds
	} {
		_, err := Parse(in)
		var e *Error
		if !errors.As(err, &e) || e.Reason != reason || err.Error() != reason+": pass a duration such as 24h, 90m, 7d or 1d12h" {
			t.Errorf("Parse(%q) = %v, want %q and the accepted form", in, err, reason)
		}
	}
}

// FuzzParse: whatever --since is given, the parser answers without a
// panic, and what it accepts is a positive duration that reads back the
// same in the days-and-duration form it documents.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"24h", "7d", "1d12h", "-1h", "106751d", "1d2562047h", "0.5ms", "1d1d", "d", "\xffd", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !strings.HasSuffix(err.Error(), Form) {
				t.Fatalf("%q: not an *Error naming the accepted form: %v", s, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("%q accepted as %v", s, d)
		}
		days := d / (24 * time.Hour)
		text := fmt.Sprintf("%dd%s", days, d-days*24*time.Hour)
		back, err := Parse(text)
		if err != nil || back != d {
			t.Fatalf("%q = %v, written %q, read back %v (%v)", s, d, text, back, err)
		}
	})
}
