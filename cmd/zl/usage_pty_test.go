package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/usageseed"
)

// TestPlotOnATerminal: on a terminal, the chart takes the terminal's width
// (200 columns here, not the 80 of a pipe) and draws each limit in a color
// of its own; NO_COLOR turns the colors off.
func TestPlotOnATerminal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	start := time.Date(2028, 2, 28, 0, 0, 0, 0, time.UTC)
	quiet := slog.New(slog.DiscardHandler)
	ctl := control.New(tbl.DB, tbl.Name, control.Options{Clock: func() time.Time { return start }, Logger: quiet})
	ns, err := ctl.RegisterNamespace(ctx, "tenant", "ops@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 1000)}, "ops@example.com"); err != nil {
		t.Fatal(err)
	}
	tr, err := usageseed.New(tbl.DB, tbl.Streams, tbl.Name, tbl.StreamARN, ns, start, usageseed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for h, n := range []int64{10, 40, 25} {
		acq := usageseed.Acquire{Entity: "alice", Resource: "gpt-4", Consume: limiter.Consume{"rpm": 1, "tpm": n}}
		if err := tr.At(ctx, start.Add(time.Duration(6*h)*time.Hour+10*time.Minute), acq); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-N", "tenant", "usage", "list", "--entity", "alice", "--resource", "gpt-4",
		"--from", "2028-02-28T00:00:00Z", "--to", "2028-02-29T00:00:00Z", "--plot"}
	axis := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "└") {
				return strings.TrimRight(l, "\r")
			}
		}
		t.Fatalf("no x axis in\n%s", out)
		return ""
	}

	tm := startTerminal(t, scriptEnv(tbl), args...)
	code, out := tm.exit()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if w := utf8.RuneCountInString(axis(out)); w <= 160 || w > 200 {
		t.Errorf("x axis %d columns wide on a terminal of 200:\n%s", w, out)
	}
	if !strings.Contains(out, "\x1b[") || strings.Contains(out, "•") {
		t.Errorf("no colored lines on a terminal:\n%q", out)
	}

	tm = startTerminal(t, append(scriptEnv(tbl), "NO_COLOR=1"), args...)
	if code, out = tm.exit(); code != 0 || strings.Contains(out, "\x1b[") || !strings.Contains(out, "• tpm") {
		t.Errorf("NO_COLOR: exit %d\n%q", code, out)
	}
}
