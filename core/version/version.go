// Package version parses and orders the versions the table's version
// record holds: semver as this project writes it, and PEP 440 as the Python
// client writes it.
package version

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Version is a parsed version: semver 2.0 (`1.2.3`, `1.2.3-rc.1`, build
// metadata `+…` ignored, optional leading `v`) or PEP 440 as Python
// packages write it, mapped onto semver pre-releases (docs/design.md; the version record, docs/compatibility.md C16):
//
//	0.15.0.dev3          → 0.15.0-dev.3
//	0.15.0rc1 / a2 / b1  → 0.15.0-rc.1 / -a.2 / -b.1
//	0.15.0rc1.dev3       → 0.15.0-rc.1.dev.3
//	0.15.0+gabc123       → 0.15.0   (local label dropped)
//
// Ordering is semver precedence: a pre-release sorts below its release;
// pre-release identifiers compare numerically when numeric, else in ASCII
// order, numeric before alphanumeric, a shorter list before a longer one
// with the same prefix. For PEP 440 inputs this agrees with PEP 440 except
// between kinds of pre-release of one release (PEP puts `.devN` below `aN`,
// ASCII puts "a" below "dev") and for a dev release of a pre-release
// (`rc1.dev3` sorts above `rc1` here, below it in PEP 440). Gates only
// compare against releases, where the two orders agree.
type Version struct {
	Major, Minor, Patch uint64
	// Pre holds the dot-separated pre-release identifiers; nil for a
	// release.
	Pre []string
}

// Parse parses s (see Version). Failures are *schema.ValidationError
// with Field "version".
func Parse(s string) (Version, error) {
	bad := func(reason string) (Version, error) {
		return Version{}, schema.NewValidationError("version", s, reason)
	}
	rest := strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		rest = rest[:i]
	}
	var v Version
	var nums [3]uint64
	for i := range nums {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 {
			return bad("want MAJOR.MINOR.PATCH")
		}
		n, err := strconv.ParseUint(rest[:j], 10, 64)
		if err != nil {
			return bad("number out of range")
		}
		nums[i] = n
		rest = rest[j:]
		if i < 2 {
			if !strings.HasPrefix(rest, ".") {
				return bad("want MAJOR.MINOR.PATCH")
			}
			rest = rest[1:]
		}
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	switch {
	case rest == "":
		return v, nil
	case rest[0] == '-':
		if rest == "-" {
			return bad("empty pre-release")
		}
		v.Pre = strings.Split(rest[1:], ".")
		for _, id := range v.Pre {
			if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
				return bad("pre-release identifiers are non-empty [0-9A-Za-z-]")
			}
		}
		return v, nil
	}
	// PEP 440: [aN|bN|rcN][.devN]
	for _, kind := range [...]string{"rc", "a", "b"} {
		if !strings.HasPrefix(rest, kind) {
			continue
		}
		n, tail, ok := cutDigits(rest[len(kind):])
		if !ok {
			return bad("want a digit after " + kind)
		}
		v.Pre = append(v.Pre, kind, n)
		rest = tail
		break
	}
	if strings.HasPrefix(rest, ".dev") {
		n, tail, ok := cutDigits(rest[len(".dev"):])
		if !ok {
			return bad("want a digit after .dev")
		}
		v.Pre = append(v.Pre, "dev", n)
		rest = tail
	}
	if rest != "" || v.Pre == nil {
		return bad("unrecognised suffix " + strconv.Quote(rest))
	}
	return v, nil
}

// cutDigits splits the leading decimal digits off s, without leading zeros.
func cutDigits(s string) (digits, rest string, ok bool) {
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 0 {
		return "", s, false
	}
	d := strings.TrimLeft(s[:j], "0")
	if d == "" {
		d = "0"
	}
	return d, s[j:], true
}

// String renders v in semver form.
func (v Version) String() string {
	s := strconv.FormatUint(v.Major, 10) + "." + strconv.FormatUint(v.Minor, 10) + "." + strconv.FormatUint(v.Patch, 10)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	return s
}

// Release returns v without its pre-release.
func (v Version) Release() Version { return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch} }

// Compare returns −1, 0 or +1 as v sorts before, with or after w.
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(w.Pre); i++ {
		if c := compareIdent(v.Pre[i], w.Pre[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(v.Pre), len(w.Pre))
}

func compareIdent(a, b string) int {
	an, aErr := strconv.ParseUint(a, 10, 64)
	bn, bErr := strconv.ParseUint(b, 10, 64)
	switch {
	case aErr == nil && bErr == nil:
		return cmp.Compare(an, bn)
	case aErr == nil:
		return -1
	case bErr == nil:
		return 1
	}
	return strings.Compare(a, b)
}
