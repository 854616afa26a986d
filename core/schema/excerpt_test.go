package schema

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExcerpt(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd…[cut 1 bytes]"},
		{"ééé", 3, "é…[cut 4 bytes]"}, // 2-byte runes: 3 bytes hold one whole
		{"ééé", 4, "éé…[cut 2 bytes]"},
		{strings.Repeat("x", 1<<20), MaxEcho, strings.Repeat("x", MaxEcho) + "…[cut 1048320 bytes]"},
	}
	for _, c := range cases {
		got := Excerpt(c.in, c.max)
		if got != c.want {
			t.Errorf("Excerpt(%.20q…, %d) = %.40q…, want %.40q…", c.in, c.max, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Excerpt(%.20q…, %d) is not valid UTF-8", c.in, c.max)
		}
	}
}
