package benchkit

import (
	"runtime"
	"time"
)

// Cost is one side's cost per call in PairedCost: CPU time in nanoseconds
// (wall time where CPUTime cannot tell), heap allocations and bytes.
type Cost struct {
	CPU, Allocs, Bytes float64
}

// PairBlock is the number of calls of each side in one block of
// PairedCost.
const PairBlock = 64

// PairedCost runs op and ref n times each, alternating blocks of PairBlock
// calls, and returns the cost per call of each: time (CPUTime where it can
// tell, else wall time), heap allocations and bytes. Interleaving makes a change of load on the
// machine weigh on both alike, so their ratio is steadier than that of two
// runs one after the other. It stops at the first error either returns.
func PairedCost(n int, op, ref func() error) (opCost, refCost Cost, err error) {
	now := func() time.Duration {
		if d, ok := CPUTime(); ok {
			return d
		}
		return time.Duration(time.Now().UnixNano())
	}
	// Allocations are read with runtime.ReadMemStats, which stops the
	// world and flushes every processor's allocation cache, so each block
	// is charged exactly what it allocated. runtime/metrics reads without
	// that flush and counts a size class's objects only when a cached span
	// of them is swapped out: two sides that allocate the same class then
	// charge each other in whole spans, and with blocks of equal length the
	// swaps can fall in step on one side (a test once saw 1.84 and 1.48
	// allocations a call where the truth was 2 and 1). The reads are
	// outside the timed part of each block.
	var mem runtime.MemStats
	heap := func() (objects, bytes uint64) {
		runtime.ReadMemStats(&mem)
		return mem.Mallocs, mem.TotalAlloc
	}
	var spent [2]time.Duration
	var objects, bytes [2]uint64
	for done := 0; done < n; done += PairBlock {
		k := min(PairBlock, n-done)
		for side, f := range [2]func() error{op, ref} {
			o0, b0 := heap()
			t0 := now()
			for range k {
				if err := f(); err != nil {
					return Cost{}, Cost{}, err
				}
			}
			spent[side] += now() - t0
			o1, b1 := heap()
			objects[side] += o1 - o0
			bytes[side] += b1 - b0
		}
	}
	var out [2]Cost
	for side := range out {
		if n > 0 {
			out[side] = Cost{
				CPU:    float64(spent[side].Nanoseconds()) / float64(n),
				Allocs: float64(objects[side]) / float64(n),
				Bytes:  float64(bytes[side]) / float64(n),
			}
		}
	}
	return out[0], out[1], nil
}
