package benchkit

import (
	"runtime/metrics"
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
// tell, else wall time), heap allocations and bytes (runtime/metrics, read
// without stopping the world). Interleaving makes a change of load on the
// machine weigh on both alike, so their ratio is steadier than that of two
// runs one after the other. It stops at the first error either returns.
func PairedCost(n int, op, ref func() error) (opCost, refCost Cost, err error) {
	now := func() time.Duration {
		if d, ok := CPUTime(); ok {
			return d
		}
		return time.Duration(time.Now().UnixNano())
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"},
	}
	heap := func() (objects, bytes uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64(), samples[2].Value.Uint64()
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
