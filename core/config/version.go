package config

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/version"
)

// SchemaVersion is the table schema version this implementation writes into
// a fresh version record: the value current in upstream, never a higher
// major (docs/design.md §2).
const SchemaVersion = "0.10.0"

// BuildVersion is this build's version: the client version limiter.Open
// checks against client_min_version, and the lambda_version a deployment of
// this build stamps into the version record.
const BuildVersion = "0.17.0"

// VersionRecord is the table's version record (R3, docs/design.md §2):
// which table layout, which deployed readers and which minimum client the
// table is at.
type VersionRecord struct {
	// SchemaVersion is the version of the table's layout.
	SchemaVersion string
	// LambdaVersion is the version of the deployed Lambdas, the table's
	// readers; "" when absent or NULL (no Lambda code proven).
	LambdaVersion string
	// ClientMinVersion is the oldest client allowed on the table; it only
	// ever grows, as writers store features older clients would misread.
	ClientMinVersion string
	// UpdatedAt is when the record was last written (ISO 8601, seconds).
	UpdatedAt string
	// UpdatedBy is who last wrote it.
	UpdatedBy string
}

// VersionCheck is the outcome of a successful CheckVersion.
type VersionCheck struct {
	// Found is false for a table without a version record.
	Found bool
	// Record is the version record read (zero when not Found).
	Record VersionRecord
	// LambdaUpdateAvailable reports a lambda_version whose release is below
	// the client's (or that does not parse). The Go client deploys no code;
	// it only reports.
	LambdaUpdateAvailable bool
}

// CheckVersion is the client check on open (docs/design.md §2): may a
// client of version own run on this table? It reads the version record
// strongly consistently and returns, in this order:
//
//   - a *schema.ValidationError when own does not parse;
//   - a *VersionMismatchError when own is below client_min_version (an
//     absent or unparseable minimum counts as 0.0.0, as upstream);
//   - an *IncompatibleSchemaError when the major version of
//     schema_version differs from own's major version — upstream's rule
//     (check_compatibility compares the client's major with the schema's:
//     0.17.x clients on schema 0.10.0 pass), or when schema_version is
//     absent or does not parse.
//
// A table without a version record is a fresh table (nothing has stamped
// it yet, e.g. DynamoDB Local before `make run` writes one): allowed, with
// Found false. Writer gates (RequireReaders) fail closed on a missing
// record; this read-side check does not.
func (s *Store) CheckVersion(ctx context.Context, own string) (VersionCheck, error) {
	ov, err := version.Parse(own)
	if err != nil {
		return VersionCheck{}, err
	}
	it, err := getItem(ctx, s.db, s.table, schema.VersionKey(), true)
	if err != nil {
		return VersionCheck{}, fmt.Errorf("check version: %w", err)
	}
	if it == nil {
		return VersionCheck{}, nil
	}
	rec := decodeVersionRecord(it)
	vc := VersionCheck{Found: true, Record: rec}
	if minV, err := version.Parse(rec.ClientMinVersion); err == nil && ov.Compare(minV) < 0 {
		return vc, &VersionMismatchError{
			ClientVersion: own, ClientMinVersion: rec.ClientMinVersion,
			SchemaVersion: rec.SchemaVersion, LambdaVersion: rec.LambdaVersion,
		}
	}
	sv, err := version.Parse(rec.SchemaVersion)
	if err != nil || sv.Major != ov.Major {
		return vc, &IncompatibleSchemaError{ClientVersion: own, SchemaVersion: rec.SchemaVersion, MigrationGuideURL: MigrationGuideURL}
	}
	if rec.LambdaVersion != "" {
		lv, err := version.Parse(rec.LambdaVersion)
		vc.LambdaUpdateAvailable = err != nil || lv.Release().Compare(ov.Release()) < 0
	}
	return vc, nil
}

func decodeVersionRecord(it map[string]types.AttributeValue) VersionRecord {
	var r VersionRecord
	r.SchemaVersion, _ = getS(it, schema.AttrSchemaVersion)
	r.LambdaVersion, _ = getS(it, schema.AttrLambdaVersion)
	r.ClientMinVersion, _ = getS(it, schema.AttrClientMinVersion)
	r.UpdatedAt, _ = getS(it, schema.AttrUpdatedAt)
	r.UpdatedBy, _ = getS(it, schema.AttrUpdatedBy)
	return r
}

// ReadVersion returns the version record, read strongly consistently;
// found is false when the table has none.
func (s *Store) ReadVersion(ctx context.Context) (rec VersionRecord, found bool, err error) {
	it, err := getItem(ctx, s.db, s.table, schema.VersionKey(), true)
	if err != nil || it == nil {
		return VersionRecord{}, false, err
	}
	return decodeVersionRecord(it), true, nil
}

// StampVersion writes the version record as a deployment of this build
// stamps it — the stack's version stamp in AWS; `make run` and the test
// harness for the tables they create (docs/design.md §2): schema_version
// SchemaVersion, lambda_version BuildVersion, client_min_version at least
// 0.0.0 (never lowered), updated_by.
func (s *Store) StampVersion(ctx context.Context, updatedBy string) error {
	return s.WriteVersion(ctx, VersionRecord{LambdaVersion: BuildVersion, UpdatedBy: updatedBy})
}

// WriteVersion writes the version record, as the provisioner's version
// stamp does (StampVersion is the common case): it sets schema_version
// (SchemaVersion when rec's is ""), lambda_version (NULL when ""),
// updated_by (NULL when ""), updated_at (the clock, ISO seconds) and the
// record's index keys, keeping other attributes. client_min_version
// only grows (docs/design.md §2): it becomes the larger of the stored value
// and rec's ("" means 0.0.0), written under a condition that the stored
// value is still the one read (retried on conflict). rec.UpdatedAt is
// ignored. Versions that do not parse are *schema.ValidationError.
func (s *Store) WriteVersion(ctx context.Context, rec VersionRecord) error {
	if rec.SchemaVersion == "" {
		rec.SchemaVersion = SchemaVersion
	}
	if rec.ClientMinVersion == "" {
		rec.ClientMinVersion = "0.0.0"
	}
	for _, v := range []string{rec.SchemaVersion, rec.ClientMinVersion, rec.LambdaVersion} {
		if v == "" {
			continue
		}
		if _, err := version.Parse(v); err != nil {
			return err
		}
	}
	want, _ := version.Parse(rec.ClientMinVersion)
	k := schema.VersionItemKeys()
	nullOr := func(v string) types.AttributeValue {
		if v == "" {
			return &types.AttributeValueMemberNULL{Value: true}
		}
		return schema.Str(v)
	}
	for range maxWriteAttempts {
		cur, err := getItem(ctx, s.db, s.table, k.Key, true)
		if err != nil {
			return fmt.Errorf("write version: %w", err)
		}
		stored, hasStored := getS(cur, schema.AttrClientMinVersion)
		cmv := rec.ClientMinVersion
		if sv, err := version.Parse(stored); hasStored && err == nil && sv.Compare(want) > 0 {
			cmv = stored
		}
		var e expr.Builder
		e.SetRemove(map[string]types.AttributeValue{
			schema.AttrSchemaVersion:    schema.Str(rec.SchemaVersion),
			schema.AttrLambdaVersion:    nullOr(rec.LambdaVersion),
			schema.AttrClientMinVersion: schema.Str(cmv),
			schema.AttrUpdatedAt:        schema.Str(isoSeconds(s.opts.now())),
			schema.AttrUpdatedBy:        nullOr(rec.UpdatedBy),
			schema.AttrGSI4PK:           schema.Str(k.GSI4.PK),
			schema.AttrGSI4SK:           schema.Str(k.GSI4.SK),
		}, nil)
		var cond string
		switch {
		case cur == nil:
			cond = "attribute_not_exists(" + e.Name(schema.AttrPK) + ")"
		case !hasStored:
			cond = "attribute_not_exists(" + e.Name(schema.AttrClientMinVersion) + ")"
		default:
			cond = e.Name(schema.AttrClientMinVersion) + " = " + e.Value(schema.Str(stored))
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: k.Key.AttributeValues(),
			UpdateExpression: aws.String(e.Update()), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		if isConditionFailed(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write version: %w", err)
		}
		return nil
	}
	return fmt.Errorf("write version: %w", ErrConflict)
}
