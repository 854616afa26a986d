package config

import (
	"errors"
	"strconv"

	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// EntityNotFoundError reports an entity that is not recorded (never
// created, or deleted; docs/design.md §5, category Entity). Match it with
// errors.As.
type EntityNotFoundError struct {
	// EntityID is the entity looked for.
	EntityID string
}

// Error implements error.
func (e *EntityNotFoundError) Error() string {
	return "entity " + strconv.Quote(e.EntityID) + " not found"
}

// EntityExistsError reports a create of an entity that already exists
// (docs/design.md §5, category Entity).
type EntityExistsError struct {
	// EntityID is the entity's id.
	EntityID string
}

// Error implements error.
func (e *EntityExistsError) Error() string {
	return "entity " + strconv.Quote(e.EntityID) + " already exists"
}

// VersionMismatchError reports a client older than the table's
// client_min_version (docs/design.md §2, §5, category Version). Never retry.
type VersionMismatchError struct {
	// ClientVersion is this build's version.
	ClientVersion string
	// ClientMinVersion is the minimum the version record demands.
	ClientMinVersion string
	// SchemaVersion and LambdaVersion are the record's values ("" when
	// absent or NULL).
	SchemaVersion string
	LambdaVersion string
	// CanAutoUpdate is always false for the Go client: it deploys no code.
	CanAutoUpdate bool
	// Gate marks a writer gate's refusal (Store.RequireReaders): the
	// table's readers, lambda_version, are below ClientMinVersion, which
	// the feature being stored needs.
	Gate bool
}

// RatchetError is a raise of the table's client_min_version that failed:
// the change that needed it was not written.
type RatchetError struct {
	// Need is the version the change needs; Stored the record's ("" when
	// it has none or was not read).
	Need, Stored string
	// Err is the cause: DynamoDB's error, or ErrConflict after too many
	// concurrent changes.
	Err error
}

// Error implements error.
func (e *RatchetError) Error() string {
	msg := "raising the table's client_min_version to " + e.Need + " failed: " + e.Err.Error()
	if e.Denied() {
		msg += "; client_min_version is shared by every namespace, so a namespace-scoped role cannot raise it: " +
			"make the change once with the platform's full access, or through the stack's provisioner"
	}
	return msg
}

// Unwrap returns the cause.
func (e *RatchetError) Unwrap() error { return e.Err }

// Denied reports whether IAM refused the write.
func (e *RatchetError) Denied() bool {
	var api smithy.APIError
	return errors.As(e.Err, &api) && (api.ErrorCode() == "AccessDeniedException" || api.ErrorCode() == "AccessDenied")
}

// Error implements error.
func (e *VersionMismatchError) Error() string {
	if e.Gate {
		lv := e.LambdaVersion
		if lv == "" {
			lv = "unknown"
		}
		return "the table's readers (lambda_version " + lv + ") are below " + e.ClientMinVersion +
			", which this feature needs; deploy the stack at " + e.ClientMinVersion + " or later first"
	}
	return "client version " + e.ClientVersion + " is below the table's minimum client version " +
		e.ClientMinVersion + "; upgrade the client"
}

// MissingVersionError reports a table without its version record
// (docs/design.md §2): nothing has stamped it, so the client cannot check
// it may run there, and writers of gated features refuse it. A deployed
// stack stamps it (its version stamp custom resource); a table made by
// hand is stamped with Store.StampVersion.
type MissingVersionError struct {
	// Table is the table's name.
	Table string
}

// Error implements error.
func (e *MissingVersionError) Error() string {
	return "table " + e.Table + " has no version record (PK " + schema.TableSystemPK + ", SK " + schema.SKVersion +
		"): deploy the stack, whose version stamp writes it, or stamp the table with config.Store.StampVersion"
}

// MigrationGuideURL is where IncompatibleSchemaError sends the reader.
const MigrationGuideURL = "https://github.com/zeroae/zae-limiter/blob/main/docs/adr/009-version-migration-system.md"

// IncompatibleSchemaError reports a table whose schema major version differs
// from the client's major version (docs/design.md §2, §5, category Version), or
// whose schema_version cannot be parsed. Never retry.
type IncompatibleSchemaError struct {
	// ClientVersion is this build's version.
	ClientVersion string
	// SchemaVersion is the table's schema version, as stored.
	SchemaVersion string
	// MigrationGuideURL is where to read how to migrate (MigrationGuideURL).
	MigrationGuideURL string
}

// Error implements error.
func (e *IncompatibleSchemaError) Error() string {
	return "table schema version " + strconv.Quote(e.SchemaVersion) + " is incompatible with client version " +
		e.ClientVersion + " (major versions differ); see " + e.MigrationGuideURL
}

// UnsupportedConfigError reports a config this version must not use: one
// carrying a feature it does not implement — a schedule or reset schedule
// it cannot read, a limit breaking ADR-137, or the ADR-143
// merge fields `inherit_limits`, `exclude_limits`, `patch_limits` /
// `p_{n}_sched` (docs/design.md §7) —, or a corrupt one (its Err is a
// *CorruptConfigError: a limit under both the `l_` and the `w_` prefix, a
// `w_` limit without its window length).
//
// Callers fail closed: the item's limits must not be enforced partially,
// and the error is a configuration error, never an infrastructure error,
// so on_unavailable=allow must not turn it into an admission. Setters refuse
// to rewrite an item carrying the merge fields.
type UnsupportedConfigError struct {
	// Item is the stored key of the config.
	Item schema.Key
	// Attribute is the first offending attribute, in name order.
	Attribute string
	// Reason names the unsupported feature.
	Reason string
	// Err is the cause when there is a typed one: a *schedule.EncodingError
	// or *schedule.ZoneError for a stored schedule this version cannot read
	// (docs/design.md §14), which a client answers per on_unavailable; a
	// *CorruptConfigError for a corrupt item.
	Err error
}

// Unwrap returns the cause, if any.
func (e *UnsupportedConfigError) Unwrap() error { return e.Err }

// Error implements error.
func (e *UnsupportedConfigError) Error() string {
	why := " (not supported by this version; refusing to use the item)"
	var ce *CorruptConfigError
	if errors.As(e.Err, &ce) {
		why = " (refusing to use the item)"
	}
	return "config item " + e.Item.PK + " " + e.Item.SK + ": attribute " + strconv.Quote(e.Attribute) +
		": " + e.Reason + why
}

// CorruptConfigError is the cause of the *UnsupportedConfigError of a
// config item whose limit set cannot be trusted (ADR-142, docs/design.md
// §7): one limit name stored under both the `l_` and the hidden `w_`
// prefix, or a hidden `w_` limit whose fields or window length (`w_{n}_rsa`)
// are missing or unreadable. No limit of such an item is used. Match it
// with errors.As.
type CorruptConfigError struct {
	// Limit is the limit's name.
	Limit string
	// Reason says what is corrupt, naming the limit.
	Reason string
}

// Error implements error.
func (e *CorruptConfigError) Error() string { return e.Reason }

// ErrConflict reports a read-modify-write that lost to concurrent writers on
// the same item every time it tried. Retrying the call is safe.
var ErrConflict = errors.New("config: item changed concurrently; retries exhausted")

// IsUnsupported reports whether err is, or wraps, an *UnsupportedConfigError.
func IsUnsupported(err error) bool {
	var ue *UnsupportedConfigError
	return errors.As(err, &ue)
}
