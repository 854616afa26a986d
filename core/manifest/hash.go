package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Canonical is the manifest as the apply records it: the snake_case
// document with every default filled in (`capacity`, `refill_amount`,
// `refill_period` on every limit; `soft`, `disabled`, `cascade` and
// `on_unavailable` only when set; `schedule` and `reset_schedule` only when
// not empty, each cron as stored (schedule.Cron.String);
// `reset_after_seconds` only on a session quota; `resources` and
// `entities` only when not empty). Values are string, int64, bool, lists
// or nested maps.
func (m *Manifest) Canonical() map[string]any { return m.document(snakeCase) }

// Hash is `sha256:` and the hex SHA-256 of the canonical document written as
// Python's json.dumps(sort_keys=True) writes it (keys sorted, separators
// ", " and ": ", non-ASCII escaped as \uXXXX), so that a Go and a Python
// provisioner record the same hash for the same manifest (docs/design.md §12).
func (m *Manifest) Hash() string {
	sum := sha256.Sum256(PythonJSON(m.Canonical()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PythonJSON writes v (maps with string keys, slices, strings, integers,
// booleans, nil) byte for byte as Python's json.dumps(v, sort_keys=True).
func PythonJSON(v any) []byte {
	return appendPy(nil, v)
}

func appendPy(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case string:
		return appendPyString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPy(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Python sorts str keys by code point; UTF-8 byte order is the same.
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyString(b, k)
			b = append(b, ": "...)
			b = appendPy(b, x[k])
		}
		return append(b, '}')
	default:
		panic("manifest: PythonJSON: unsupported type") // the canonical document holds none
	}
}

const hexDigits = "0123456789abcdef"

// appendPyString escapes as json.dumps with ensure_ascii: `"`, `\`, the
// short escapes \n \r \t \b \f, and every other character outside ' '..'~'
// as \uXXXX in lower-case hex (UTF-16 surrogate pairs above U+FFFF).
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			switch {
			case r >= ' ' && r <= '~':
				b = append(b, byte(r))
			case r > 0xFFFF:
				r -= 0x10000
				b = appendU(b, 0xD800+(r>>10))
				b = appendU(b, 0xDC00+(r&0x3FF))
			default:
				if r == utf8.RuneError {
					r = 0xFFFD
				}
				b = appendU(b, r)
			}
		}
	}
	return append(b, '"')
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
