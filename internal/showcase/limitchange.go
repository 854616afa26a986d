package showcase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// limitChange shows a resource's limit lowered and then raised while a
// bucket is in use (docs/design.md §8): each change reaches the bucket
// before the operator's call returns — a lowered capacity clamps its
// balance, a raised one grants nothing at once and the new rate refills
// from the change on — and a service in another process, whose config
// cache still holds the old limit, is held to the new one at once.
func (d *demo) limitChange(ctx context.Context) error {
	const resource = "limits/live"
	at := func(hms string) time.Time {
		t, err := time.Parse(time.RFC3339, "2026-11-30T"+hms+"Z")
		if err != nil {
			panic(err)
		}
		return t
	}
	clk := clock.NewManual(at("12:00:00"))
	// The service: a limiter in another process, its config cache at the
	// default minute; the operator's controls clear none of its caches.
	svc, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	ctl := control.New(d.db, d.table, control.Options{Clock: clk.Now})
	set := func(n int64) (control.Progress, error) {
		return ctl.SetResourceLimits(ctx, d.ns, resource, []limit.Limit{limit.PerMinute("rpm", n)}, "ops@example.com")
	}
	if _, err := set(100); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "a limit changed while a bucket is in use (core/control; the service is another process, its config cached):")
	state := func() (string, error) {
		_, l, err := d.shardLimit(ctx, "live-user", resource, "rpm")
		if err != nil || l == nil {
			return "no bucket", err
		}
		return fmt.Sprintf("tk %s of cp %s", tokens(l.Tokens), tokens(l.Capacity)), nil
	}
	take := func(hms string, n int) error {
		clk.Set(at(hms))
		admitted := 0
		for range n {
			_, err := svc.Acquire(ctx, "live-user", resource, limiter.Consume{"rpm": 1})
			var rle *limiter.RateLimitExceeded
			switch {
			case err == nil:
				admitted++
			case !errors.As(err, &rle):
				return err
			}
		}
		s, err := state()
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s  %3d asked one at a time: %3d admitted (%s)\n", hms, n, admitted, s)
		return nil
	}
	change := func(hms string, n int64, what string) error {
		clk.Set(at(hms))
		p, err := set(n)
		if err != nil {
			return err
		}
		s, err := state()
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s  rpm set to %d a minute: %d bucket found, %d brought in line; %s (%s)\n", hms, n, p.Buckets, p.Stamped, what, s)
		return nil
	}
	if err := take("12:00:00", 10); err != nil {
		return err
	}
	if err := change("12:00:06", 20, "the balance clamped to the new ceiling"); err != nil {
		return err
	}
	if err := take("12:00:06", 25); err != nil {
		return err
	}
	if err := take("12:00:36", 15); err != nil {
		return err
	}
	if err := change("12:00:40", 200, "a raise grants nothing at once"); err != nil {
		return err
	}
	if err := take("12:00:46", 30); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "            (the new rate from the change's instant: 1.333 + 6 s at 200 a minute = 21.333, not 10 s of it from the last refill)")
	return nil
}
