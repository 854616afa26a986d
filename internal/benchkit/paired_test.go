package benchkit

import (
	"errors"
	"testing"
)

// sink keeps the test's allocations on the heap.
var sink [][]byte

// TestPairedCost: each side's allocations per call are told apart (one
// side allocates one object a call more), both sides run n times, and an
// error stops the run. runtime/metrics counts a size class's objects when
// a span of them is swapped out of the processor's cache, so two sides
// that allocate the same class share each other's counts block by block
// (a run once gave the 64-byte side 27 bytes a call, not 64, under the
// race detector); both sides allocate the same 64-byte object, which
// splits evenly, and op's extra object is of a class only op uses.
func TestPairedCost(t *testing.T) {
	var opCalls, refCalls int
	op := func() error { opCalls++; sink = append(sink[:0], make([]byte, 64), make([]byte, 512)); return nil }
	ref := func() error { refCalls++; sink = append(sink[:0], make([]byte, 64)); return nil }
	sink = make([][]byte, 0, 4)
	// runtime/metrics counts allocations as spans fill, not one by one:
	// enough calls make the per-call figures close.
	const n = 200*PairBlock + 5
	o, r, err := PairedCost(n, op, ref)
	if err != nil {
		t.Fatal(err)
	}
	if opCalls != n || refCalls != n {
		t.Fatalf("op ran %d times, ref %d, want %d each", opCalls, refCalls, n)
	}
	// Exact counts are not to be had (and the race detector allocates
	// too): op must show about one allocation and 512 bytes a call more.
	if o.Allocs-r.Allocs < 0.5 || o.Bytes-r.Bytes < 256 || o.CPU <= 0 || r.CPU <= 0 {
		t.Errorf("op %+v, ref %+v: want one more allocation per call on op, and time on both", o, r)
	}
	boom := errors.New("boom")
	if _, _, err := PairedCost(n, func() error { return boom }, ref); !errors.Is(err, boom) {
		t.Errorf("an op's error: %v, want it returned", err)
	}
}
