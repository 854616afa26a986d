package showcase_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/showcase"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestRunShowsEachStep keeps `make run` honest: the walk-through runs on the
// emulator and prints every step with the results the queries must return.
func TestRunShowsEachStep(t *testing.T) {
	var out bytes.Buffer
	err := showcase.Run(context.Background(), &out, showcase.Options{
		Endpoint: ddbtest.Endpoint(t),
		Table:    ddbtest.TableName(t.Name()),
		Now:      func() time.Time { return time.Date(2026, 11, 29, 19, 30, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stream NEW_AND_OLD_IMAGES",
		"GSI2  GSI2PK/GSI2SK  KEYS_ONLY",
		"GSI1 children of org-acme: 2",
		"GSI2 buckets of openai/gpt-4: 4",
		"GSI2 usage of openai/gpt-4: 1",
		"GSI3 entities with their own openai/gpt-4 limits: 1",
		"GSI3 buckets of key-1 on openai/gpt-4: 2",
		"GSI4 everything in the namespace (purge): 11",
		"USAGE#2026-11-29T19:00:00Z#key-1",
		"*schema.InvalidNameError",
		"b_tpm_tc 0 -> 1500000 millitokens  -> reported as a batch item failure",
		"delivered 18 records in 2 batches, 1 re-delivery after the reported failure",
		"resource openai/gpt-4        accepted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q\n%s", want, text)
		}
	}
}
