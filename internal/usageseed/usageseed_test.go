package usageseed_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/usageseed"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestTraffic: acquires at instants on both sides of midnight become the
// hourly and daily snapshots of those instants' windows, whatever the
// emulator's own clock says; an acquire that is refused is an error.
func TestTraffic(t *testing.T) {
	ctx := context.Background()
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	quiet := slog.New(slog.DiscardHandler)
	start := time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC)
	ctl := control.New(tbl.DB, tbl.Name, control.Options{Clock: func() time.Time { return start }, Logger: quiet})
	ns, err := ctl.RegisterNamespace(ctx, "seed", "ops@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 2)}, "ops@example.com"); err != nil {
		t.Fatal(err)
	}
	tr, err := usageseed.New(tbl.DB, tbl.Streams, tbl.Name, tbl.StreamARN, ns, start, usageseed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rpm := func(entity string) usageseed.Acquire {
		return usageseed.Acquire{Entity: entity, Resource: "gpt-4", Consume: limiter.Consume{"rpm": 1}}
	}
	at := func(h, m int) time.Time { return start.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	for _, step := range []struct {
		at  time.Time
		acq []usageseed.Acquire
	}{
		{at(0, 30), []usageseed.Acquire{rpm("alice"), rpm("alice")}},
		{at(0, 50), []usageseed.Acquire{rpm("alice")}},
		{at(1, 10), []usageseed.Acquire{rpm("alice"), rpm("bob")}},
	} {
		if err := tr.At(ctx, step.at, step.acq...); err != nil {
			t.Fatal(err)
		}
		if !tr.Now().Equal(step.at) {
			t.Fatalf("clock %v, want %v", tr.Now(), step.at)
		}
	}
	r, err := usage.New(tbl.DB, tbl.Name, ns, usage.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range []usage.Window{usage.Hourly, usage.Daily} {
		for s, err := range r.Snapshots(ctx, usage.ForResource("gpt-4", w, at(-24, 0), at(24, 0))) {
			if err != nil {
				t.Fatal(err)
			}
			l, _ := s.Limit("rpm")
			got = append(got, fmt.Sprintf("%s %s %s rpm=%d", w, s.WindowStart.Format(time.RFC3339), s.Entity, l.Tokens))
		}
	}
	want := []string{
		"hourly 2026-01-31T23:00:00Z alice rpm=3",
		"hourly 2026-02-01T00:00:00Z alice rpm=1",
		"hourly 2026-02-01T00:00:00Z bob rpm=1",
		"daily 2026-01-31T00:00:00Z alice rpm=3",
		"daily 2026-02-01T00:00:00Z alice rpm=1",
		"daily 2026-02-01T00:00:00Z bob rpm=1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("snapshots\n%q\nwant\n%q", got, want)
	}
	// Two more in the same minute: rpm (2 a minute) has one left, so the
	// second is refused, and that is an error.
	if err := tr.At(ctx, at(1, 10), rpm("alice"), rpm("alice")); err == nil {
		t.Fatal("a refused acquire was not reported")
	}
}
