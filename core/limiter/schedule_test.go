package limiter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// A limit halved from 12:00 to 13:59 UTC (docs/design.md §14): before the
// boundary the fast path runs at the full rate and stops at vu = 12:00;
// the first acquire after it materialises at the halved rate toward the
// halved ceiling; the stored parameters stay the configured ones.
func TestScheduledLimitHalvesAtTheBoundary(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	halved := schedule.Schedule{{Cron: schedule.MustParseCron("* 12-13 * * *"), ScalePerMille: 500}}
	e.setResourceLimits("gpt-4", limit.PerMinute("rpm", 100).WithSchedule(halved, ""))
	ctx := context.Background()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ms := func(s string) string { return strconv.FormatInt(at(s).UnixMilli(), 10) }

	// 11:59:30: the create, 80 of 100 taken. Full again in 48 s, after the
	// boundary: vu is the boundary.
	e.clk.Set(at("2026-11-30T11:59:30Z"))
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 80}); err != nil {
		t.Fatal(err)
	}
	item := e.bucket("k", "gpt-4", 0)
	if got := e.n(item, "vu"); got != ms("2026-11-30T12:00:00Z") {
		t.Errorf("vu = %s, want the boundary %s", got, ms("2026-11-30T12:00:00Z"))
	}
	if s, ok := item["b_rpm_sched"]; !ok || ddbtest.Render(s) != "S:h12-13s500" {
		t.Errorf("b_rpm_sched = %v", item["b_rpm_sched"])
	}

	// 11:59:50: one conditional UpdateItem, as for any limit.
	e.clk.Set(at("2026-11-30T11:59:50Z"))
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 10}); err != nil {
		t.Fatal(err)
	}
	if n := e.calls("UpdateItem"); n != 1 {
		t.Errorf("%d UpdateItem before the boundary, want 1", n)
	}

	// 12:00:10: 10 000 left, materialised over the 40 s since rf at the
	// halved rate (50 a minute): + 33 333, then 1 000 taken. At the full
	// rate it would have been 76 666 − 1 000.
	e.clk.Set(at("2026-11-30T12:00:10Z"))
	lease, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 1})
	if err != nil {
		t.Fatal(err)
	}
	item = e.bucket("k", "gpt-4", 0)
	if got := e.n(item, "b_rpm_tk"); got != "42333" {
		t.Errorf("b_rpm_tk = %s, want 42333", got)
	}
	if got := e.n(item, "b_rpm_cp"); got != "100000" {
		t.Errorf("b_rpm_cp = %s, want the configured 100000", got)
	}
	if r, _ := lease.Remaining("rpm"); r != 42 {
		t.Errorf("remaining = %d, want 42", r)
	}
	// Full (50 000) after 7 667 more at 50 a minute: 9.2004 s, so 9 201 ms
	// (the first whole millisecond at or after), long before 14:00.
	if got := e.n(item, "vu"); got != strconv.FormatInt(at("2026-11-30T12:00:10Z").UnixMilli()+9_201, 10) {
		t.Errorf("vu = %s", got)
	}

	// In force, 50 is the ceiling: 51 tokens is more than refill can ever
	// give, however long the wait.
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 51}); err == nil {
		t.Error("51 tokens admitted under a ceiling of 50")
	}
}

// The rejection cache does not reject a scheduled pair locally (decisions
// P47): every 429 of an exhausted scheduled limit is DynamoDB's.
func TestScheduledLimitIsNotRejectedLocally(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	halved := schedule.Schedule{{Cron: schedule.MustParseCron("* 12-13 * * *"), ScalePerMille: 500}}
	e.setResourceLimits("gpt-4", limit.PerMinute("rpm", 10).WithSchedule(halved, ""))
	ctx := context.Background()
	// The clock reads 12:00: the halved ceiling of 5 is in force.
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 5}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"rpm": 1}); err == nil {
			t.Fatal("admitted past an exhausted limit")
		}
	}
	if st := e.lim.Stats(); st.LocalRejections != 0 || st.ServerRejections != 3 {
		t.Errorf("stats %+v, want 3 rejections decided by DynamoDB", st)
	}
}
