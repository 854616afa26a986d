package manifest

import (
	"strconv"
	"strings"
)

// Problem is one bad field of a manifest.
type Problem struct {
	// Path names the field, in the manifest's own spelling, e.g.
	// `Entities.api-key-1.Resources.gpt-4.Limits.tpm.Capacity`.
	Path string
	// Message says what is wrong with it.
	Message string
	// Unknown is true for a field the manifest does not define (a typo, or
	// a field of another tool).
	Unknown bool
}

// String is `path: message`.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// InvalidManifestError lists every problem of a manifest that was refused.
// Nothing is written for a refused manifest.
type InvalidManifestError struct {
	// Problems lists every bad field, in field order.
	Problems []Problem
}

// Error implements error: every problem, in field order.
func (e *InvalidManifestError) Error() string {
	return problemsText("invalid limits manifest", e.Problems)
}

// maxListedProblems is how many problems an error's text lists; the
// Problems field holds them all.
const maxListedProblems = 50

// problemsText is `{head} (N problem(s)): path: message; …`, listing the
// first maxListedProblems.
func problemsText(head string, problems []Problem) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(len(problems)))
	if len(problems) == 1 {
		b.WriteString(" problem): ")
	} else {
		b.WriteString(" problems): ")
	}
	for i, p := range problems {
		if i == maxListedProblems {
			b.WriteString("; … and " + strconv.Itoa(len(problems)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}
