package clock

import (
	"sync"
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	start := time.Date(2028, 2, 29, 23, 59, 59, 999_000_000, time.UTC)
	c := NewManual(start)
	if !c.Now().Equal(start) || c.Now().Location() != time.UTC {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Advance(time.Millisecond)
	if want := time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC); !c.Now().Equal(want) {
		t.Fatalf("after 1 ms: %v, want %v", c.Now(), want)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Advance(time.Microsecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got := c.Now().Sub(start); got != time.Millisecond+8*time.Millisecond {
		t.Fatalf("after concurrent advances: %v", got)
	}
}
