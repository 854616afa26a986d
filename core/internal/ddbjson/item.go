// Package ddbjson reads an item in DynamoDB's JSON wire form
// ({"name":{"S":"text"},"n":{"N":"12"},...}) straight from the bytes of an
// answer, without building SDK attribute values (docs/design.md §5, "The
// answer's decoding").
//
// It reads a narrow, strict subset on purpose: attributes of type S, N,
// BOOL and NULL whose names and texts are printable ASCII with no escape.
// Anything else — another type, an escape, a byte outside ASCII, a
// duplicated type tag, JSON it cannot read — is ErrUnsupported, and the
// caller lets the SDK decode the answer instead. So whatever this package
// accepts reads exactly as the SDK's decoder reads it (FuzzAnswerReader in
// core/limiter/internal/answer holds the two to that).
package ddbjson

import (
	"errors"
)

// ErrUnsupported is returned for input outside the subset the package reads
// (the package doc). It is not a verdict on the input: the SDK's decoder may
// read it.
var ErrUnsupported = errors.New("ddbjson: outside the subset read without the SDK")

// Value is one attribute's value: its DynamoDB type and, for an S or an N,
// its text; for a BOOL or a NULL, its boolean.
type Value struct {
	Type string // "S", "N", "BOOL" or "NULL"
	Text string // an S's or an N's text
	Bool bool   // a BOOL's or a NULL's literal
}

// Member returns the text of the value of the one member of the JSON object
// doc, which must be named name: the body of an answer such as
// {"Attributes":{...}}. An object with another member, or none, is
// ErrUnsupported.
func Member(doc, name string) (string, error) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return "", ErrUnsupported
	}
	k, i, err := readString(doc, skipSpace(doc, i+1))
	if err != nil || k != name {
		return "", ErrUnsupported
	}
	if i = skipSpace(doc, i); i >= len(doc) || doc[i] != ':' {
		return "", ErrUnsupported
	}
	start := skipSpace(doc, i+1)
	end, err := objectEnd(doc, start)
	if err != nil {
		return "", err
	}
	if i = skipSpace(doc, end); i >= len(doc) || doc[i] != '}' {
		return "", ErrUnsupported
	}
	if skipSpace(doc, i+1) != len(doc) {
		return "", ErrUnsupported
	}
	return doc[start:end], nil
}

// Item iterates over the attributes of an item's JSON object. The zero
// value is not usable; use NewItem.
type Item struct {
	s    string
	i    int
	done bool
}

// NewItem returns an iterator over the item whose JSON object text is s.
func NewItem(s string) (Item, error) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return Item{}, ErrUnsupported
	}
	it := Item{s: s, i: skipSpace(s, i+1)}
	if it.i < len(s) && s[it.i] == '}' {
		it.done = true
		if skipSpace(s, it.i+1) != len(s) {
			return Item{}, ErrUnsupported
		}
	}
	return it, nil
}

// Next returns the next attribute's name and value, or ok false after the
// last one. An error ends the iteration.
func (it *Item) Next() (name string, v Value, ok bool, err error) {
	if it.done {
		return "", Value{}, false, nil
	}
	s := it.s
	name, i, err := readString(s, it.i)
	if err != nil {
		return it.fail()
	}
	if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
		return it.fail()
	}
	if i = skipSpace(s, i+1); i >= len(s) || s[i] != '{' {
		return it.fail()
	}
	tag, i, err := readString(s, skipSpace(s, i+1))
	if err != nil {
		return it.fail()
	}
	if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
		return it.fail()
	}
	i = skipSpace(s, i+1)
	switch tag {
	case "S", "N":
		v.Type = tag
		v.Text, i, err = readString(s, i)
	case "BOOL", "NULL":
		v.Type = tag
		v.Bool, i, err = readBool(s, i)
	default:
		return it.fail()
	}
	if err != nil {
		return it.fail()
	}
	// The type object holds exactly one member.
	if i = skipSpace(s, i); i >= len(s) || s[i] != '}' {
		return it.fail()
	}
	i = skipSpace(s, i+1)
	switch {
	case i < len(s) && s[i] == ',':
		it.i = skipSpace(s, i+1)
	case i < len(s) && s[i] == '}':
		if skipSpace(s, i+1) != len(s) {
			return it.fail()
		}
		it.done = true
	default:
		return it.fail()
	}
	return name, v, true, nil
}

func (it *Item) fail() (string, Value, bool, error) {
	it.done = true
	return "", Value{}, false, ErrUnsupported
}

// objectEnd returns the index just past the JSON object starting at s[i],
// reading through strings (which must be in the subset) and nested
// brackets. What lies inside is checked by Item, not here.
func objectEnd(s string, i int) (int, error) {
	if i >= len(s) || s[i] != '{' {
		return 0, ErrUnsupported
	}
	depth := 0
	for i < len(s) {
		switch c := s[i]; c {
		case '"':
			_, next, err := readString(s, i)
			if err != nil {
				return 0, err
			}
			i = next
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c != '}' {
					return 0, ErrUnsupported
				}
				return i + 1, nil
			}
		}
		i++
	}
	return 0, ErrUnsupported
}

// readString reads the JSON string starting at s[i] and returns its text and
// the index past its closing quote. Only printable ASCII with no escape is
// read; anything else is ErrUnsupported.
func readString(s string, i int) (string, int, error) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, ErrUnsupported
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i+1 : j], j + 1, nil
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", 0, ErrUnsupported
		}
	}
	return "", 0, ErrUnsupported
}

func readBool(s string, i int) (bool, int, error) {
	switch {
	case len(s)-i >= 4 && s[i:i+4] == "true":
		return true, i + 4, nil
	case len(s)-i >= 5 && s[i:i+5] == "false":
		return false, i + 5, nil
	}
	return false, 0, ErrUnsupported
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipSpace returns the index of the first byte of s at or after i that is
// not JSON whitespace.
func SkipSpace(s string, i int) int { return skipSpace(s, i) }

// ReadString reads the JSON string that starts at s[i] when it is in the
// subset (printable ASCII, no escape), and returns its text, a view of s,
// and the index past its closing quote; otherwise ErrUnsupported.
func ReadString(s string, i int) (string, int, error) { return readString(s, i) }

// ObjectEnd returns the index just past the JSON object that starts at
// s[i] (after any whitespace), reading its strings as the subset does; its
// content is checked by Item, not here.
func ObjectEnd(s string, i int) (int, error) {
	return objectEnd(s, skipSpace(s, i))
}
