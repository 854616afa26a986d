//go:build unix

package benchkit_test

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
)

// TestCPUTimeCountsWorkNotWaiting: spinning moves the process CPU time by
// about the time spun; sleeping barely moves it.
func TestCPUTimeCountsWorkNotWaiting(t *testing.T) {
	start, ok := benchkit.CPUTime()
	if !ok {
		t.Fatal("CPUTime not available on a unix platform")
	}
	time.Sleep(200 * time.Millisecond)
	slept, _ := benchkit.CPUTime()
	if d := slept - start; d > 100*time.Millisecond {
		t.Errorf("sleeping 200 ms used %s of CPU", d)
	}
	spinUntil := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(spinUntil) {
		x++
	}
	spun, _ := benchkit.CPUTime()
	if d := spun - slept; d < 50*time.Millisecond {
		t.Errorf("spinning 200 ms used only %s of CPU (%d rounds)", d, x)
	}
}
