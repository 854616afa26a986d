package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEventsAreUpToDate: the committed samples in events/ are exactly what
// the generator writes, so they never drift from the bucket layout.
// Regenerate with `go run ./scripts/gen-events`.
func TestEventsAreUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("generated %v, %v", files, err)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "..", "events", filepath.Base(f)))
		if err != nil {
			t.Fatalf("events/%s: %v (run go run ./scripts/gen-events)", filepath.Base(f), err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("events/%s is stale: run go run ./scripts/gen-events", filepath.Base(f))
		}
	}
}
