package schema

import (
	"strconv"
	"unicode/utf8"
)

// MaxEcho is how many bytes of an input value an error or a log line
// repeats (Excerpt): enough to recognise it, never the whole of a value an
// attacker or a mistake made megabytes long.
const MaxEcho = 256

// Excerpt is s when it has at most max bytes, else its longest start of at
// most max bytes that ends on a whole UTF-8 character, marked with how much
// was cut: "abc…[cut 1048573 bytes]". It bounds free text that repeats
// input (a manifest problem's path and message); a ValidationError's value
// keeps TruncateValue's 50-character form.
func Excerpt(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…[cut " + strconv.Itoa(len(s)-n) + " bytes]"
}
