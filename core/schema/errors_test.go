package schema_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func TestTruncateValue(t *testing.T) {
	fifty := strings.Repeat("a", 50)
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "user-1", "user-1"},
		{"exactly 50", fifty, fifty},
		{"51 cut to 50 plus dots", fifty + "b", fifty + "..."},
		{"long", strings.Repeat("x", 300), strings.Repeat("x", 50) + "..."},
		// 50 two-byte runes are 100 bytes but only 50 characters: kept whole.
		{"50 multibyte runes", strings.Repeat("é", 50), strings.Repeat("é", 50)},
		{"51 multibyte runes cut on a rune boundary", strings.Repeat("é", 51), strings.Repeat("é", 50) + "..."},
		{"invalid bytes count one each", strings.Repeat("\xff", 51), strings.Repeat("\xff", 50) + "..."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := schema.TruncateValue(c.in); got != c.want {
				t.Errorf("TruncateValue(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestValidationErrorKinds(t *testing.T) {
	long := strings.Repeat("e", 300)
	cases := []struct {
		name      string
		err       error
		wantIdent bool
		wantName  bool
		field     string
		value     string
	}{
		{"identifier", schema.ValidateEntityID("a#b"), true, false, "entity_id", "a#b"},
		{"identifier truncated", schema.ValidateEntityID(long), true, false, "entity_id", strings.Repeat("e", 50) + "..."},
		{"name", schema.ValidateLimitName("wcu"), false, true, "limit_name", "wcu"},
		{"resource is a name", schema.ValidateResource(""), false, true, "resource", ""},
		{"plain validation error", schema.NewValidationError("limits", "", "no limits configured"), false, false, "limits", ""},
		{"wrapped identifier", fmt.Errorf("create entity: %w", schema.ValidateParentID("-x")), true, false, "parent_id", "-x"},
		{"wrapped name", fmt.Errorf("set limits: %w", schema.ValidateNamespaceName("_")), false, true, "namespace", "_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("no error")
			}
			var ve *schema.ValidationError
			if !errors.As(c.err, &ve) {
				t.Fatalf("errors.As(%T, *ValidationError) = false", c.err)
			}
			if ve.Field != c.field || ve.Value != c.value || ve.Reason == "" {
				t.Errorf("ValidationError = %+v, want field %q value %q and a reason", *ve, c.field, c.value)
			}
			var ie *schema.InvalidIdentifierError
			if got := errors.As(c.err, &ie); got != c.wantIdent {
				t.Errorf("errors.As(InvalidIdentifierError) = %v, want %v", got, c.wantIdent)
			}
			var ne *schema.InvalidNameError
			if got := errors.As(c.err, &ne); got != c.wantName {
				t.Errorf("errors.As(InvalidNameError) = %v, want %v", got, c.wantName)
			}
			if !schema.IsValidationError(c.err) {
				t.Error("IsValidationError = false")
			}
			if ie != nil && ie.Field != c.field {
				t.Errorf("InvalidIdentifierError.Field = %q", ie.Field)
			}
			if ne != nil && ne.Field != c.field {
				t.Errorf("InvalidNameError.Field = %q", ne.Field)
			}
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	err := schema.ValidateEntityID("a#b")
	want := `invalid entity_id "a#b": cannot contain '#' (reserved delimiter)`
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
	// The embedded error and its wrapper print the same.
	var ve *schema.ValidationError
	errors.As(err, &ve)
	if ve.Error() != want {
		t.Errorf("embedded Error() = %q", ve.Error())
	}
}

func TestKeyError(t *testing.T) {
	_, err := schema.ParseBucketPK("ns/BUCKET#e#r#01")
	var ke *schema.KeyError
	if !errors.As(fmt.Errorf("wrap: %w", err), &ke) {
		t.Fatalf("errors.As(KeyError) failed for %v", err)
	}
	if ke.Key != "ns/BUCKET#e#r#01" || ke.Shape != schema.ShapeBucketPK || ke.Reason == "" {
		t.Errorf("KeyError = %+v", *ke)
	}
	if !strings.Contains(ke.Error(), "ns/BUCKET#e#r#01") || !strings.Contains(ke.Error(), schema.ShapeBucketPK) {
		t.Errorf("Error() = %q lacks the key or the shape", ke.Error())
	}
	if schema.IsValidationError(err) {
		t.Error("a KeyError is not a validation error")
	}
}
