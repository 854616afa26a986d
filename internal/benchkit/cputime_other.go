//go:build !unix

package benchkit

import "time"

// CPUTime returns the CPU time the process has used so far; on this
// platform it cannot tell, and ok is false.
func CPUTime() (d time.Duration, ok bool) { return 0, false }
