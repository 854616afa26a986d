package schema

import "strconv"

// Validation limits (docs/design.md §2, §5).
const (
	// MaxIdentifierLen bounds entity ids, parent ids, principals and
	// operation ids.
	MaxIdentifierLen = 256
	// MaxNameLen bounds limit names and resources.
	MaxNameLen = 64
	// MaxNamespaceNameLen bounds namespace names (a decision of this package:
	// docs/design.md §2 gives no bound).
	MaxNamespaceNameLen = 64
	// MaxStackNameLen bounds stack names (the IAM role-name budget).
	MaxStackNameLen = 55
	// MaxPrincipalARNLen bounds a principal given as an ARN (IAM's ARN bound).
	MaxPrincipalARNLen = 2048
	// NamespaceIDLen is the length of a namespace id: 8 random bytes in
	// unpadded URL-safe base64.
	NamespaceIDLen = 11
)

// Field names carried by validation errors.
const (
	FieldEntityID      = "entity_id"
	FieldParentID      = "parent_id"
	FieldPrincipal     = "principal"
	FieldOperationID   = "operation_id"
	FieldLimitName     = "limit_name"
	FieldResource      = "resource"
	FieldNamespace     = "namespace"
	FieldNamespaceID   = "namespace_id"
	FieldStackName     = "stack_name"
	FieldLimits        = "limits"
	FieldOnUnavailable = "on_unavailable"
)

// WCULimit is the reserved write-capacity limit every bucket carries
// (docs/design.md §2). No user limit may take its name.
const WCULimit = "wcu"

// DefaultResource is the entity-config scope that applies to every resource
// of an entity (`#CONFIG#_default_`). It is never a bucket resource.
const DefaultResource = "_default_"

// ReservedNamespace is the namespace id of table-level records (R1–R3); it
// is also the one namespace name nobody may register.
const ReservedNamespace = "_"

// reservedLimitNames are the limit names docs/design.md §2 reserves because they
// are attributes of the usage snapshot (R12), plus wcu (docs/design.md §2).
var reservedLimitNames = [...]string{WCULimit, "ttl", "window", "window_start", "total_events", "entity_id", "resource"}

// reservedLimitPrefixes are the prefixes of key attribute names (PK, SK,
// GSI…, LSI…): a limit name starting with one is refused.
var reservedLimitPrefixes = [...]string{"PK", "SK", "GSI", "LSI"}

// Character classes, one bit each, looked up in charClass.
const (
	cIdentFirst uint8 = 1 << iota // [a-zA-Z0-9]
	cIdent                        // [a-zA-Z0-9_.\-:@]
	cNameFirst                    // [a-zA-Z]
	cName                         // [a-zA-Z0-9_.\-]
	cResource                     // [a-zA-Z0-9_.\-/]
	cStack                        // [a-zA-Z0-9-]
	cBase64URL                    // [a-zA-Z0-9_-]
	cARN                          // printable ASCII except space and '#'
)

var charClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		var m uint8
		if alpha || digit {
			m |= cIdentFirst | cIdent | cName | cResource | cStack | cBase64URL
		}
		if alpha {
			m |= cNameFirst
		}
		switch c {
		case '_':
			m |= cIdent | cName | cResource | cBase64URL
		case '-':
			m |= cIdent | cName | cResource | cStack | cBase64URL
		case '.':
			m |= cIdent | cName | cResource
		case ':', '@':
			m |= cIdent
		case '/':
			m |= cResource
		}
		if c > ' ' && c < 0x7f && c != '#' {
			m |= cARN
		}
		t[c] = m
	}
	return t
}()

// scan reports whether s is non-empty, its first byte is in class first and
// every other byte in class rest. It never allocates.
func scan(s string, first, rest uint8) bool {
	if len(s) == 0 || charClass[s[0]]&first == 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if charClass[s[i]]&rest == 0 {
			return false
		}
	}
	return true
}

// hasHash reports whether s contains the key delimiter.
func hasHash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' {
			return true
		}
	}
	return false
}

const (
	reasonEmpty    = "cannot be empty"
	reasonHash     = "cannot contain '#' (reserved delimiter)"
	reasonIdent    = "must start with alphanumeric and contain only alphanumeric, underscore, hyphen, dot, colon, or @ characters"
	reasonName     = "must start with a letter and contain only alphanumeric, underscore, hyphen, or dot characters"
	reasonResource = "must start with a letter and contain only alphanumeric, underscore, hyphen, dot, or slash characters"
)

func reasonTooLong(max int) string {
	return "exceeds maximum length of " + strconv.Itoa(max)
}

// ValidateIdentifier checks value against the identifier rule of docs/design.md §2 —
// non-empty, at most MaxIdentifierLen bytes, `^[a-zA-Z0-9][a-zA-Z0-9_.\-:@]*$`
// (so no `#`) — and reports a failure as *InvalidIdentifierError naming
// field. It does not allocate when value is valid.
func ValidateIdentifier(field, value string) error {
	switch {
	case len(value) == 0:
		return NewInvalidIdentifierError(field, value, reasonEmpty)
	case len(value) > MaxIdentifierLen:
		return NewInvalidIdentifierError(field, value, reasonTooLong(MaxIdentifierLen))
	case scan(value, cIdentFirst, cIdent):
		return nil
	case hasHash(value):
		return NewInvalidIdentifierError(field, value, reasonHash)
	default:
		return NewInvalidIdentifierError(field, value, reasonIdent)
	}
}

// ValidateEntityID validates an entity id (field "entity_id").
func ValidateEntityID(id string) error { return ValidateIdentifier(FieldEntityID, id) }

// ValidateParentID validates a parent entity id (field "parent_id").
func ValidateParentID(id string) error { return ValidateIdentifier(FieldParentID, id) }

// ValidateOperationID validates a caller-supplied reset/top-up operation id
// (field "operation_id", docs/design.md §8). ULIDs pass.
func ValidateOperationID(id string) error { return ValidateIdentifier(FieldOperationID, id) }

// ValidatePrincipal validates an audit principal (field "principal"). A
// principal starting with "arn:" is an AWS ARN: it must have something after
// the prefix, be at most MaxPrincipalARNLen bytes, and consist of printable
// ASCII other than space and `#`. Any other principal follows the
// identifier rule. An absent principal is the caller's business (it is
// stored as NULL); the empty string is rejected.
func ValidatePrincipal(p string) error {
	if len(p) < 4 || p[:4] != "arn:" {
		return ValidateIdentifier(FieldPrincipal, p)
	}
	switch {
	case len(p) == 4:
		return NewInvalidIdentifierError(FieldPrincipal, p, "ARN has nothing after \"arn:\"")
	case len(p) > MaxPrincipalARNLen:
		return NewInvalidIdentifierError(FieldPrincipal, p, reasonTooLong(MaxPrincipalARNLen))
	case scan(p, cARN, cARN):
		return nil
	case hasHash(p):
		return NewInvalidIdentifierError(FieldPrincipal, p, reasonHash)
	default:
		return NewInvalidIdentifierError(FieldPrincipal, p, "an ARN must consist of printable ASCII without spaces")
	}
}

// IsReservedLimitName reports whether name is reserved by docs/design.md §2 and
// docs/design.md §2: `wcu`, the usage-snapshot attribute names `ttl`, `window`,
// `window_start`, `total_events`, `entity_id`, `resource`, or a name starting
// with `PK`, `SK`, `GSI` or `LSI`.
//
// Matching is case-sensitive, like DynamoDB attribute names: the
// reservations exist because a limit name becomes a snapshot attribute name
// (and `b_wcu_*` a bucket attribute), and only an exact-case match collides.
// So `TTL`, `Window` and `pk_rate` are allowed; `ttl`, `PKG` and `GSI1PK` are
// not.
func IsReservedLimitName(name string) bool {
	for _, r := range reservedLimitNames {
		if name == r {
			return true
		}
	}
	for _, p := range reservedLimitPrefixes {
		if len(name) >= len(p) && name[:len(p)] == p {
			return true
		}
	}
	return false
}

// ValidateLimitName checks a limit name (field "limit_name"): non-empty, at
// most MaxNameLen bytes, `^[a-zA-Z][a-zA-Z0-9_.\-]*$` (so no `#`), and not
// reserved (see IsReservedLimitName). Failures are *InvalidNameError. It does
// not allocate when name is valid.
func ValidateLimitName(name string) error {
	switch {
	case len(name) == 0:
		return NewInvalidNameError(FieldLimitName, name, reasonEmpty)
	case len(name) > MaxNameLen:
		return NewInvalidNameError(FieldLimitName, name, reasonTooLong(MaxNameLen))
	case !scan(name, cNameFirst, cName):
		if hasHash(name) {
			return NewInvalidNameError(FieldLimitName, name, reasonHash)
		}
		return NewInvalidNameError(FieldLimitName, name, reasonName)
	case name == WCULimit:
		return NewInvalidNameError(FieldLimitName, name, "is reserved for the internal write-capacity limit")
	case IsReservedLimitName(name):
		return NewInvalidNameError(FieldLimitName, name, "is reserved (usage-snapshot attribute or key-attribute prefix PK, SK, GSI, LSI)")
	}
	return nil
}

// ValidateResource checks a resource name (field "resource"): non-empty, at
// most MaxNameLen bytes, `^[a-zA-Z][a-zA-Z0-9_.\-/]*$` (so no `#`; `/`
// allowed for provider/model grouping). `_default_` is rejected here; use
// ValidateConfigScope where the entity-config scope is meant. Failures are
// *InvalidNameError. It does not allocate when r is valid.
func ValidateResource(r string) error {
	switch {
	case len(r) == 0:
		return NewInvalidNameError(FieldResource, r, reasonEmpty)
	case len(r) > MaxNameLen:
		return NewInvalidNameError(FieldResource, r, reasonTooLong(MaxNameLen))
	case scan(r, cNameFirst, cResource):
		return nil
	case r == DefaultResource:
		return NewInvalidNameError(FieldResource, r, "_default_ is only valid as an entity config scope")
	case hasHash(r):
		return NewInvalidNameError(FieldResource, r, reasonHash)
	default:
		return NewInvalidNameError(FieldResource, r, reasonResource)
	}
}

// ValidateConfigScope checks the resource of an entity config (R5): a valid
// resource or DefaultResource.
func ValidateConfigScope(r string) error {
	if r == DefaultResource {
		return nil
	}
	return ValidateResource(r)
}

// ValidateNamespaceName checks a namespace name (field "namespace").
//
// docs/design.md §2 says only "non-empty; `_` is reserved". This package also applies
// the identifier character set and a length bound, because the name is
// written into the R1 sort key `#NAMESPACE#{name}`: at most
// MaxNamespaceNameLen bytes, `^[a-zA-Z0-9][a-zA-Z0-9_.\-:@]*$` — so no `#`,
// no `/`, and no name starting with `_` (system names). Failures are
// *InvalidNameError.
func ValidateNamespaceName(name string) error {
	switch {
	case len(name) == 0:
		return NewInvalidNameError(FieldNamespace, name, reasonEmpty)
	case name == ReservedNamespace:
		return NewInvalidNameError(FieldNamespace, name, "is reserved for table-level records")
	case len(name) > MaxNamespaceNameLen:
		return NewInvalidNameError(FieldNamespace, name, reasonTooLong(MaxNamespaceNameLen))
	case scan(name, cIdentFirst, cIdent):
		return nil
	case hasHash(name):
		return NewInvalidNameError(FieldNamespace, name, reasonHash)
	default:
		return NewInvalidNameError(FieldNamespace, name, reasonIdent)
	}
}

// ValidateNamespaceID checks a namespace id (field "namespace_id"): exactly
// NamespaceIDLen characters of the URL-safe base64 alphabet
// `[A-Za-z0-9_-]`, not starting with `-` (docs/design.md §2). The reserved id `_`
// is not a valid id here. Failures are *InvalidIdentifierError.
func ValidateNamespaceID(id string) error {
	switch {
	case len(id) != NamespaceIDLen:
		return NewInvalidIdentifierError(FieldNamespaceID, id, "must be exactly 11 characters")
	case id[0] == '-':
		return NewInvalidIdentifierError(FieldNamespaceID, id, "cannot start with '-'")
	case !scan(id, cBase64URL, cBase64URL):
		return NewInvalidIdentifierError(FieldNamespaceID, id, "must contain only URL-safe base64 characters (A-Z, a-z, 0-9, '-', '_')")
	}
	return nil
}

// ValidateStackName checks a CloudFormation stack name, which is also the
// table name (field "stack_name"): `^[A-Za-z][A-Za-z0-9-]*$`, at most
// MaxStackNameLen bytes. Failures are *InvalidNameError.
func ValidateStackName(name string) error {
	switch {
	case len(name) == 0:
		return NewInvalidNameError(FieldStackName, name, reasonEmpty)
	case len(name) > MaxStackNameLen:
		return NewInvalidNameError(FieldStackName, name, reasonTooLong(MaxStackNameLen))
	case !scan(name, cNameFirst, cStack):
		return NewInvalidNameError(FieldStackName, name, "must start with a letter and contain only alphanumeric or hyphen characters")
	}
	return nil
}
