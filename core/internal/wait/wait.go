// Package wait holds the one context-aware sleep the packages of this
// module use between retries.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first; it returns
// ctx.Err() in the second case. A d of zero or less returns at once (with
// ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
