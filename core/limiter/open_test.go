package limiter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestOpenChecksTheVersionRecord: Open refuses a table whose
// client_min_version is above this library (SPEC §13) and accepts one at or
// below it, or a fresh table with no record.
func TestOpenChecksTheVersionRecord(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, ns, limiter.Options{}); err != nil {
		t.Fatalf("fresh table: %v", err)
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
