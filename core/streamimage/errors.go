package streamimage

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel causes wrapped by every *PathError; match them with errors.Is.
var (
	// ErrNilValue reports a missing value: a nil interface, a nil member
	// pointer or a zero events.DynamoDBAttributeValue (which holds nothing).
	ErrNilValue = errors.New("nil attribute value")
	// ErrUnsupportedType reports a type the converter does not know: an
	// events DataType outside the ten DynamoDB types, an SDK
	// UnknownUnionMember, or a JSON type label other than S, N, B, BOOL, NULL,
	// SS, NS, BS, L, M.
	ErrUnsupportedType = errors.New("unsupported attribute type")
	// ErrMalformed reports a value of a known type whose content is invalid,
	// such as JSON of the wrong shape, bad base64 or a NULL that is not true.
	ErrMalformed = errors.New("malformed attribute value")
)

// PathError reports where a conversion failed: Path names the attribute, for
// example NewImage.b_rpm_tk, NewImage.tags[2] or
// Records[0].dynamodb.Keys["odd key"]; it is empty when the failing value is
// the one passed in. Err wraps one of the sentinel errors.
type PathError struct {
	Path string
	Err  error
}

// Error implements error.
func (e *PathError) Error() string {
	if e.Path == "" {
		return "streamimage: attribute value: " + e.Err.Error()
	}
	return "streamimage: attribute " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *PathError) Unwrap() error { return e.Err }

// leafError starts a *PathError at the failing value; callers up the tree
// prefix their segment with within.
func leafError(err error) error { return &PathError{Err: err} }

// within prefixes seg (a key segment from keySeg or an index segment from
// indexSeg) to the path of err, which must come from leafError or within.
// Other errors are returned unchanged.
func within(err error, seg string) error {
	var pe *PathError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case pe.Path == "":
		pe.Path = seg
	case strings.HasPrefix(pe.Path, "["):
		pe.Path = seg + pe.Path
	default:
		pe.Path = seg + "." + pe.Path
	}
	return err
}

// keySeg renders a map key as a path segment: bare when it is a plain name,
// quoted in brackets otherwise.
func keySeg(k string) string {
	if plainName(k) {
		return k
	}
	return "[" + strconv.Quote(k) + "]"
}

// indexSeg renders a list or set index as a path segment.
func indexSeg(i int) string { return "[" + strconv.Itoa(i) + "]" }

func plainName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '#':
		default:
			return false
		}
	}
	return true
}
