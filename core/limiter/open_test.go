package limiter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestOpenChecksTheVersionRecord: Open refuses a table whose
// client_min_version is above this library (docs/design.md §2) and accepts one at or
// below it; a table this project's tooling created carries its record.
func TestOpenChecksTheVersionRecord(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	ns := registerOpenNamespace(t, tbl)
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("a table the tooling created: %v", err)
	}
	store := config.NewStore(tbl.DB, tbl.Name)
	write := func(min string) {
		t.Helper()
		if err := store.WriteVersion(ctx, config.VersionRecord{SchemaVersion: config.SchemaVersion, ClientMinVersion: min}); err != nil {
			t.Fatal(err)
		}
	}
	write("0.16.0")
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("client_min_version 0.16.0: %v", err)
	}
	write("0.18.0")
	_, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{})
	var vm *config.VersionMismatchError
	if !errors.As(err, &vm) {
		t.Fatalf("client_min_version 0.18.0: err = %v, want VersionMismatchError", err)
	}
}

// TestOpenWithoutVersionRecord: a table nothing has stamped is refused with
// an error that names the missing record and how to stamp it; stamping it
// as the tooling does lets Open through.
func TestOpenWithoutVersionRecord(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	ctx := context.Background()
	ns := registerOpenNamespace(t, tbl)
	_, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{})
	var mv *config.MissingVersionError
	if !errors.As(err, &mv) || mv.Table != tbl.Name {
		t.Fatalf("err = %v, want MissingVersionError for %s", err, tbl.Name)
	}
	for _, want := range []string{"_/SYSTEM#", "#VERSION", "StampVersion", "deploy the stack"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if err := config.NewStore(tbl.DB, tbl.Name).StampVersion(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("after StampVersion: %v", err)
	}
	rec, found, err := config.NewStore(tbl.DB, tbl.Name).ReadVersion(ctx)
	if err != nil || !found || rec.SchemaVersion != config.SchemaVersion || rec.LambdaVersion != limiter.Version ||
		rec.ClientMinVersion != "0.0.0" || rec.UpdatedBy != "test" {
		t.Fatalf("stamped record %+v, %v, %v", rec, found, err)
	}
}

// TestOpenPythonWrittenVersionRecord: Open reads an R3 in the Python
// client's form — lambda_version and updated_by NULL (no Lambda deployed by
// that client), updated_at with microseconds and an offset — as it reads
// the Go-written one.
func TestOpenPythonWrittenVersionRecord(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	ctx := context.Background()
	ns := registerOpenNamespace(t, tbl)
	k := schema.VersionItemKeys()
	item := k.Item()
	for name, v := range map[string]types.AttributeValue{
		schema.AttrSchemaVersion:    &types.AttributeValueMemberS{Value: "0.10.0"},
		schema.AttrLambdaVersion:    &types.AttributeValueMemberNULL{Value: true},
		schema.AttrClientMinVersion: &types.AttributeValueMemberS{Value: "0.0.0"},
		schema.AttrUpdatedAt:        &types.AttributeValueMemberS{Value: "2026-11-29T10:20:30.123456+00:00"},
		schema.AttrUpdatedBy:        &types.AttributeValueMemberNULL{Value: true},
	} {
		item[name] = v
	}
	if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("Python-written R3: %v", err)
	}
	// A Go deployment stamping over it keeps what it does not own.
	if err := config.NewStore(tbl.DB, tbl.Name).StampVersion(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("after the Go stamp: %v", err)
	}
}

// registerOpenNamespace registers the namespace "open-test" in tbl and
// returns its name.
func registerOpenNamespace(t *testing.T, tbl *ddbtest.Table) string {
	t.Helper()
	if _, err := control.New(tbl.DB, tbl.Name, control.Options{}).RegisterNamespace(context.Background(), "open-test", "test"); err != nil {
		t.Fatal(err)
	}
	return "open-test"
}

// TestOpenByNameOrID: Open takes the namespace's name and resolves its id
// once; the id is accepted too; anything else is a NamespaceNotFoundError
// naming what was given, and nothing is opened.
func TestOpenByNameOrID(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	ops := control.New(tbl.DB, tbl.Name, control.Options{})
	id, err := ops.RegisterNamespace(ctx, "tenant-alpha", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, given := range []string{"tenant-alpha", id} {
		lim, err := limiter.Open(ctx, tbl.DB, tbl.Name, given, limiter.Options{})
		if err != nil || lim.Namespace() != id {
			t.Fatalf("Open(%q): %v, namespace %v", given, err, lim)
		}
	}
	for _, given := range []string{"tenant-beta", "AAAAAAAAAAA", "bad name!", ""} {
		lim, err := limiter.Open(ctx, tbl.DB, tbl.Name, given, limiter.Options{})
		var nf *config.NamespaceNotFoundError
		var bad *schema.InvalidNameError
		if lim != nil || (!errors.As(err, &nf) && !errors.As(err, &bad)) {
			t.Errorf("Open(%q) = %v, %v; want a not-found or invalid-name error", given, lim, err)
		}
		if errors.As(err, &nf) && nf.Name != given {
			t.Errorf("Open(%q): the error names %q", given, nf.Name)
		}
	}
}
