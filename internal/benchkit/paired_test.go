package benchkit

import (
	"errors"
	"testing"
)

// sink keeps the test's allocations on the heap.
var sink [][]byte

// TestPairedCost: each side's allocations per call are told apart (one
// side allocates one object a call more), both sides run n times, and an
// error stops the run. Both sides allocate the same 64-byte object, so a
// reading that charged one side's objects of a shared size class to the
// other (as runtime/metrics does, span by span) fails here.
func TestPairedCost(t *testing.T) {
	var opCalls, refCalls int
	op := func() error { opCalls++; sink = append(sink[:0], make([]byte, 64), make([]byte, 512)); return nil }
	ref := func() error { refCalls++; sink = append(sink[:0], make([]byte, 64)); return nil }
	sink = make([][]byte, 0, 4)
	const n = 200*PairBlock + 5
	o, r, err := PairedCost(n, op, ref)
	if err != nil {
		t.Fatal(err)
	}
	if opCalls != n || refCalls != n {
		t.Fatalf("op ran %d times, ref %d, want %d each", opCalls, refCalls, n)
	}
	// The race detector and the runtime may allocate a little beside the
	// calls: op must show one allocation and 512 bytes a call more, within
	// a tenth of an allocation and 32 bytes.
	t.Logf("op %+v, ref %+v", o, r)
	if d := o.Allocs - r.Allocs; d < 0.9 || d > 1.1 || o.Bytes-r.Bytes < 480 || o.Bytes-r.Bytes > 544 || o.CPU <= 0 || r.CPU <= 0 {
		t.Errorf("op %+v, ref %+v: want one more allocation per call on op, and time on both", o, r)
	}
	boom := errors.New("boom")
	if _, _, err := PairedCost(n, func() error { return boom }, ref); !errors.Is(err, boom) {
		t.Errorf("an op's error: %v, want it returned", err)
	}
}
