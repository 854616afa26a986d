//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user and system) the process has used so
// far, ok false where the platform cannot tell. Unlike wall time it does
// not grow while the process waits for a CPU, so a CPU-bound benchmark
// measured with it stays comparable on a loaded machine; it includes the
// garbage collector's background work, which a client's allocations cause.
func CPUTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
