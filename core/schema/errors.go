package schema

import (
	"errors"
	"strconv"
)

// MaxErrorValueLen is the number of characters of an offending value an
// error keeps; a longer value is cut there and "..." is appended (docs/design.md §5).
const MaxErrorValueLen = 50

// ValidationError reports an input that breaks a rule of docs/design.md §2. It is the
// category every validation failure belongs to: whatever the concrete type
// (*InvalidIdentifierError, *InvalidNameError or *ValidationError itself),
//
//	var ve *schema.ValidationError
//	errors.As(err, &ve)
//
// succeeds and yields Field, Value and Reason. Never retry; HTTP 400.
type ValidationError struct {
	// Field names the input, e.g. "entity_id", "resource", "limit_name",
	// "limits" or "operation_id".
	Field string
	// Value is the offending value, truncated to MaxErrorValueLen
	// characters plus "..." when it was longer.
	Value string
	// Reason says what rule the value breaks, in words.
	Reason string
}

// NewValidationError returns a ValidationError for field, truncating value.
func NewValidationError(field, value, reason string) *ValidationError {
	return &ValidationError{Field: field, Value: TruncateValue(value), Reason: reason}
}

// Error implements error: `invalid {field} "{value}": {reason}`.
func (e *ValidationError) Error() string {
	return "invalid " + e.Field + " " + strconv.Quote(e.Value) + ": " + e.Reason
}

// InvalidIdentifierError is the ValidationError for identifiers: entity_id,
// parent_id, principal, operation_id and namespace ids. Match it with
// errors.As(err, &*InvalidIdentifierError); errors.As with a
// *ValidationError target matches it too.
type InvalidIdentifierError struct {
	ValidationError
}

// NewInvalidIdentifierError returns an InvalidIdentifierError for field,
// truncating value.
func NewInvalidIdentifierError(field, value, reason string) *InvalidIdentifierError {
	return &InvalidIdentifierError{ValidationError{Field: field, Value: TruncateValue(value), Reason: reason}}
}

// Unwrap exposes the embedded ValidationError to errors.As and errors.Is.
func (e *InvalidIdentifierError) Unwrap() error { return &e.ValidationError }

// InvalidNameError is the ValidationError for names: limit names, resources,
// namespace names and stack names. Match it with
// errors.As(err, &*InvalidNameError); errors.As with a *ValidationError
// target matches it too.
type InvalidNameError struct {
	ValidationError
}

// NewInvalidNameError returns an InvalidNameError for field, truncating value.
func NewInvalidNameError(field, value, reason string) *InvalidNameError {
	return &InvalidNameError{ValidationError{Field: field, Value: TruncateValue(value), Reason: reason}}
}

// Unwrap exposes the embedded ValidationError to errors.As and errors.Is.
func (e *InvalidNameError) Unwrap() error { return &e.ValidationError }

// IsValidationError reports whether err is, or wraps, a validation error of
// any kind.
func IsValidationError(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}

// TruncateValue returns v unchanged when it has at most MaxErrorValueLen
// characters, else its first MaxErrorValueLen characters followed by "...".
// It counts runes, so it never splits a UTF-8 sequence; invalid bytes count
// as one character each.
func TruncateValue(v string) string {
	if len(v) <= MaxErrorValueLen {
		return v // at most 50 bytes is at most 50 characters
	}
	n := 0
	for i := range v {
		if n == MaxErrorValueLen {
			return v[:i] + "..."
		}
		n++
	}
	return v
}

// KeyError reports a partition or sort key (or an attribute name) that does
// not have the shape a parser expects. Items whose keys fail to parse are
// corrupt or foreign: readers skip them (docs/design.md §2).
type KeyError struct {
	// Key is the offending value, in full.
	Key string
	// Shape is the expected form, e.g. "{ns}/BUCKET#{entity}#{resource}#{shard}".
	Shape string
	// Reason says what is wrong with Key.
	Reason string
}

// Error implements error.
func (e *KeyError) Error() string {
	return "malformed key " + strconv.Quote(TruncateValue(e.Key)) + " (want " + e.Shape + "): " + e.Reason
}

// keyErr builds a *KeyError; kept separate so the success paths of the
// parsers stay free of allocation.
func keyErr(key, shape, reason string) error {
	return &KeyError{Key: key, Shape: shape, Reason: reason}
}
