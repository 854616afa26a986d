package schema_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// kind of error a case expects.
type errKind int

const (
	valid errKind = iota
	identErr
	nameErr
)

type validateCase struct {
	in     string
	want   errKind
	reason string // substring of the reason; "" = any
}

func checkValidator(t *testing.T, name, field string, fn func(string) error, cases []validateCase) {
	t.Helper()
	for _, c := range cases {
		err := fn(c.in)
		label := name + "(" + schema.TruncateValue(c.in) + ")"
		if c.want == valid {
			if err != nil {
				t.Errorf("%s = %v, want nil", label, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s = nil, want an error", label)
			continue
		}
		var ie *schema.InvalidIdentifierError
		var ne *schema.InvalidNameError
		switch {
		case c.want == identErr && !errors.As(err, &ie):
			t.Errorf("%s = %T, want *InvalidIdentifierError", label, err)
		case c.want == nameErr && !errors.As(err, &ne):
			t.Errorf("%s = %T, want *InvalidNameError", label, err)
		}
		var ve *schema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: not a *ValidationError", label)
			continue
		}
		if ve.Field != field {
			t.Errorf("%s: Field = %q, want %q", label, ve.Field, field)
		}
		if ve.Value != schema.TruncateValue(c.in) {
			t.Errorf("%s: Value = %q, want %q", label, ve.Value, schema.TruncateValue(c.in))
		}
		if !strings.Contains(ve.Reason, c.reason) {
			t.Errorf("%s: Reason = %q, want it to contain %q", label, ve.Reason, c.reason)
		}
	}
}

const (
	rEmpty   = "cannot be empty"
	rLong    = "exceeds maximum length"
	rHash    = "'#'"
	rPattern = "must start with"
	rReserve = "reserved"
)

// identifierCases are shared by every identifier field.
var identifierCases = []validateCase{
	{"user-123", valid, ""},
	{"a", valid, ""},
	{"0abc", valid, ""},
	{"user@example.com", valid, ""},
	{"org:team:key", valid, ""},
	{"sk-proj-AbC_dEf.1:2@x", valid, ""},
	{"01ARZ3NDEKTSV4RRFFQ69G5FAV", valid, ""},
	{strings.Repeat("a", 256), valid, ""},
	{"", identErr, rEmpty},
	{strings.Repeat("a", 257), identErr, rLong},
	{"a#b", identErr, rHash},
	{"#", identErr, rHash},
	{"user#", identErr, rHash},
	{"_user", identErr, rPattern},
	{"-user", identErr, rPattern},
	{".user", identErr, rPattern},
	{":user", identErr, rPattern},
	{"@user", identErr, rPattern},
	{"$SYSTEM", identErr, rPattern},
	{"a b", identErr, rPattern},
	{"a/b", identErr, rPattern},
	{"a\n", identErr, rPattern}, // Python's `$` would accept this; we do not
	{"a\x00", identErr, rPattern},
	{"usér", identErr, rPattern},
}

func TestValidateIdentifiers(t *testing.T) {
	checkValidator(t, "ValidateEntityID", "entity_id", schema.ValidateEntityID, identifierCases)
	checkValidator(t, "ValidateParentID", "parent_id", schema.ValidateParentID, identifierCases)
	checkValidator(t, "ValidateOperationID", "operation_id", schema.ValidateOperationID, identifierCases)
	checkValidator(t, "ValidateIdentifier", "custom", func(s string) error { return schema.ValidateIdentifier("custom", s) }, identifierCases)
}

func TestValidatePrincipal(t *testing.T) {
	cases := append([]validateCase{
		{"arn:aws:iam::123456789012:user/alice", valid, ""},
		{"arn:aws:sts::123456789012:assumed-role/Admin/session+1=x,y", valid, ""},
		{"arn:" + strings.Repeat("a", 2044), valid, ""}, // 2048 bytes
		{"arn:", identErr, "nothing after"},
		{"arn:" + strings.Repeat("a", 2045), identErr, rLong},
		{"arn:aws:iam::1:user/a b", identErr, "printable ASCII"},
		{"arn:aws:iam::1:user/a#b", identErr, rHash},
		{"arn:aws:iam::1:user/\x7f", identErr, "printable ASCII"},
		{"ARN:aws:iam::1:user/a", identErr, rPattern}, // not the ARN form: an identifier with '/'
	}, identifierCases...)
	checkValidator(t, "ValidatePrincipal", "principal", schema.ValidatePrincipal, cases)
}

func TestValidateLimitName(t *testing.T) {
	cases := []validateCase{
		{"rpm", valid, ""},
		{"tpm_v2", valid, ""},
		{"a.b-c_d", valid, ""},
		{"R", valid, ""},
		{strings.Repeat("n", 64), valid, ""},
		// Reservations are case-sensitive, like attribute names.
		{"TTL", valid, ""},
		{"Window", valid, ""},
		{"WCU", valid, ""},
		{"pk_rate", valid, ""},
		{"Pk", valid, ""},
		{"gsi", valid, ""},
		{"wcu2", valid, ""},
		{"", nameErr, rEmpty},
		{strings.Repeat("n", 65), nameErr, rLong},
		{"r#m", nameErr, rHash},
		{"#rpm", nameErr, rHash},
		{"1rpm", nameErr, rPattern},
		{"_rpm", nameErr, rPattern},
		{"-rpm", nameErr, rPattern},
		{"r/m", nameErr, rPattern},
		{"r:m", nameErr, rPattern},
		{"r@m", nameErr, rPattern},
		{"r m", nameErr, rPattern},
		{"wcu", nameErr, rReserve},
		{"ttl", nameErr, rReserve},
		{"window", nameErr, rReserve},
		{"window_start", nameErr, rReserve},
		{"total_events", nameErr, rReserve},
		{"entity_id", nameErr, rReserve},
		{"resource", nameErr, rReserve},
		{"PK", nameErr, rReserve},
		{"PKG", nameErr, rReserve},
		{"SK", nameErr, rReserve},
		{"SKU_count", nameErr, rReserve},
		{"GSI1PK", nameErr, rReserve},
		{"GSI", nameErr, rReserve},
		{"LSI3SK", nameErr, rReserve},
	}
	checkValidator(t, "ValidateLimitName", "limit_name", schema.ValidateLimitName, cases)
}

func TestIsReservedLimitName(t *testing.T) {
	for _, n := range []string{"wcu", "ttl", "window", "window_start", "total_events", "entity_id", "resource", "PK", "SKx", "GSI4SK", "LSI1SK"} {
		if !schema.IsReservedLimitName(n) {
			t.Errorf("IsReservedLimitName(%q) = false", n)
		}
	}
	for _, n := range []string{"rpm", "tpm", "ttl2", "windows", "P", "S", "GS", "LS", "pk", "Ttl", ""} {
		if schema.IsReservedLimitName(n) {
			t.Errorf("IsReservedLimitName(%q) = true", n)
		}
	}
}

func TestValidateResource(t *testing.T) {
	cases := []validateCase{
		{"gpt-4", valid, ""},
		{"openai/gpt-4", valid, ""},
		{"anthropic/claude-3.5-sonnet", valid, ""},
		{"a/b/c", valid, ""},
		{"a/", valid, ""},
		{"gpt_4", valid, ""},
		{strings.Repeat("r", 64), valid, ""},
		{"_default_", nameErr, "entity config scope"},
		{"", nameErr, rEmpty},
		{strings.Repeat("r", 65), nameErr, rLong},
		{"a#b", nameErr, rHash},
		{"openai/gpt-4#x", nameErr, rHash},
		{"1abc", nameErr, rPattern},
		{"/abc", nameErr, rPattern},
		{"_abc", nameErr, rPattern},
		{".abc", nameErr, rPattern},
		{"a:b", nameErr, rPattern},
		{"a@b", nameErr, rPattern},
		{"a b", nameErr, rPattern},
	}
	checkValidator(t, "ValidateResource", "resource", schema.ValidateResource, cases)

	scope := []validateCase{
		{"_default_", valid, ""},
		{"openai/gpt-4", valid, ""},
		{"_default", nameErr, rPattern},
		{"default_", valid, ""},
		{"", nameErr, rEmpty},
		{"a#b", nameErr, rHash},
	}
	checkValidator(t, "ValidateConfigScope", "resource", schema.ValidateConfigScope, scope)
}

func TestValidateNamespaceName(t *testing.T) {
	cases := []validateCase{
		{"default", valid, ""},
		{"tenant-a", valid, ""},
		{"A1", valid, ""},
		{"team.prod:eu@x", valid, ""},
		{"9lives", valid, ""},
		{strings.Repeat("n", 64), valid, ""},
		{"_", nameErr, rReserve},
		{"", nameErr, rEmpty},
		{strings.Repeat("n", 65), nameErr, rLong},
		{"a#b", nameErr, rHash},
		{"a/b", nameErr, rPattern},
		{"_x", nameErr, rPattern},
		{"-x", nameErr, rPattern},
		{"a b", nameErr, rPattern},
	}
	checkValidator(t, "ValidateNamespaceName", "namespace", schema.ValidateNamespaceName, cases)
}

func TestValidateNamespaceID(t *testing.T) {
	cases := []validateCase{
		{"a7x3kq2b9Pz", valid, ""},
		{"A-_bcdefghi", valid, ""},
		{"_abcdefghij", valid, ""},
		{"0123456789A", valid, ""},
		{"-abcdefghij", identErr, "'-'"},
		{"abc", identErr, "11"},
		{"", identErr, "11"},
		{"abcdefghijkl", identErr, "11"},
		{"_", identErr, "11"},
		{"abcdefghij#", identErr, "base64"},
		{"abcdefghij/", identErr, "base64"},
		{"abcdefghij=", identErr, "base64"},
		{"abcdefghij+", identErr, "base64"},
	}
	checkValidator(t, "ValidateNamespaceID", "namespace_id", schema.ValidateNamespaceID, cases)
}

func TestValidateStackName(t *testing.T) {
	cases := []validateCase{
		{"zae-limiter", valid, ""},
		{"a", valid, ""},
		{"Prod2", valid, ""},
		{"a" + strings.Repeat("-", 54), valid, ""},
		{"a" + strings.Repeat("b", 55), nameErr, rLong},
		{"", nameErr, rEmpty},
		{"1abc", nameErr, rPattern},
		{"-abc", nameErr, rPattern},
		{"a_b", nameErr, rPattern},
		{"a.b", nameErr, rPattern},
		{"a#b", nameErr, rPattern},
	}
	checkValidator(t, "ValidateStackName", "stack_name", schema.ValidateStackName, cases)
}

var sinkErr error

// TestValidatorsDoNotAllocate pins that the validators on the acquire path
// allocate nothing when the input is valid.
func TestValidatorsDoNotAllocate(t *testing.T) {
	long := strings.Repeat("a", 256)
	checks := map[string]func(){
		"entity":    func() { sinkErr = schema.ValidateEntityID("user:1@example.com") },
		"entityMax": func() { sinkErr = schema.ValidateEntityID(long) },
		"principal": func() { sinkErr = schema.ValidatePrincipal("arn:aws:iam::1:user/x") },
		"limit":     func() { sinkErr = schema.ValidateLimitName("tpm_v2") },
		"resource":  func() { sinkErr = schema.ValidateResource("openai/gpt-4") },
		"scope":     func() { sinkErr = schema.ValidateConfigScope("_default_") },
		"nsName":    func() { sinkErr = schema.ValidateNamespaceName("tenant-a") },
		"nsID":      func() { sinkErr = schema.ValidateNamespaceID("a7x3kq2b9Pz") },
		"stack":     func() { sinkErr = schema.ValidateStackName("zae-limiter") },
	}
	for name, fn := range checks {
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations per valid input, want 0", name, n)
		}
		if sinkErr != nil {
			t.Errorf("%s: unexpected error %v", name, sinkErr)
		}
	}
}

// Reference patterns, copied from docs/design.md §2, for differential checks.
var (
	reIdentifier = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-:@]*$`)
	reName       = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.\-]*$`)
	reResource   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.\-/]*$`)
	reStack      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
	reNamespace  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{10}$`)
)

// FuzzValidateNames checks that no validator panics, that an accepted value
// never contains '#' and obeys its length bound, and that each validator
// agrees exactly with the docs/design.md §2 regular expression it implements.
func FuzzValidateNames(f *testing.F) {
	for _, s := range []string{
		"", "a", "user-1", "openai/gpt-4", "wcu", "ttl", "PKG", "_default_", "_", "a#b",
		"arn:aws:iam::1:user/x", "arn:", "a7x3kq2b9Pz", "-abcdefghij", "zae-limiter",
		strings.Repeat("a", 256), strings.Repeat("a", 257), "é", "a\n", "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		type check struct {
			name  string
			err   error
			max   int
			match bool // what the reference says
		}
		checks := []check{
			{"entity", schema.ValidateEntityID(s), 256, reIdentifier.MatchString(s)},
			{"limit", schema.ValidateLimitName(s), 64, reName.MatchString(s) && !schema.IsReservedLimitName(s)},
			{"resource", schema.ValidateResource(s), 64, reResource.MatchString(s)},
			{"scope", schema.ValidateConfigScope(s), 64, s == "_default_" || reResource.MatchString(s)},
			{"namespace", schema.ValidateNamespaceName(s), 64, s != "_" && reIdentifier.MatchString(s)},
			{"namespaceID", schema.ValidateNamespaceID(s), 11, reNamespace.MatchString(s)},
			{"stack", schema.ValidateStackName(s), 55, reStack.MatchString(s)},
			{"principal", schema.ValidatePrincipal(s), 2048, principalRef(s)},
		}
		for _, c := range checks {
			want := c.match && len(s) <= c.max
			if got := c.err == nil; got != want {
				t.Fatalf("%s(%q): accepted = %v, reference says %v (err %v)", c.name, s, got, want, c.err)
			}
			if c.err == nil && strings.Contains(s, "#") {
				t.Fatalf("%s accepted %q, which contains '#'", c.name, s)
			}
			if c.err != nil && !schema.IsValidationError(c.err) {
				t.Fatalf("%s(%q) returned %T, not a validation error", c.name, s, c.err)
			}
		}
		if schema.ValidateLimitName(s) == nil && (s == "wcu" || schema.IsReservedLimitName(s)) {
			t.Fatalf("reserved limit name %q accepted", s)
		}
	})
}

func principalRef(s string) bool {
	if !strings.HasPrefix(s, "arn:") {
		return reIdentifier.MatchString(s) && len(s) <= 256
	}
	return len(s) > 4 && reARN.MatchString(s)
}

// reARN is printable ASCII without space and '#'.
var reARN = regexp.MustCompile(`^[!-"$-~]+$`)

func BenchmarkValidateAcquireInputs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = schema.ValidateEntityID("user:1@example.com")
		if sinkErr == nil {
			sinkErr = schema.ValidateResource("openai/gpt-4")
		}
		if sinkErr == nil {
			sinkErr = schema.ValidateLimitName("tpm_v2")
		}
	}
}
