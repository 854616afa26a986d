package control_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// TestAccessChangesUnderLoad: 32 goroutines acquire on 8 entities of one
// resource while an operator disables, bypasses and re-enables it, twice.
// Every acquire that starts after a setter returned, and ends before the
// next one starts, sees the new state: only 403s while disabled, only
// bypassed admissions while bypassed, never either while enforced. And
// nothing is lost: the buckets' tc is exactly what was admitted.
func TestAccessChangesUnderLoad(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100_000)}, ""); err != nil {
		t.Fatal(err)
	}
	entities := []string{"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"}
	for _, ent := range entities {
		e.acquire(ent, "r") // the buckets exist before the load starts
	}
	const (
		settling = iota
		enforced
		disabled
		bypassed
	)
	var phase atomic.Int32
	phase.Store(enforced)
	var admitted atomic.Int64
	admitted.Store(int64(len(entities)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	stop := make(chan struct{})
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ent := entities[(g+i)%len(entities)]
				before := phase.Load()
				got := e.acquire(ent, "r")
				after := phase.Load()
				if got == "ok" || got == "bypass" {
					admitted.Add(1)
				}
				if before != after || before == settling {
					continue
				}
				want := map[int32]map[string]bool{
					enforced: {"ok": true}, disabled: {"403": true}, bypassed: {"bypass": true},
				}[before]
				if !want[got] {
					mu.Lock()
					wrong = append(wrong, got)
					mu.Unlock()
				}
			}
		}()
	}
	for range 2 {
		for _, step := range []struct {
			a     config.Access
			phase int32
		}{{dis, disabled}, {byp, bypassed}, {inh, enforced}} {
			phase.Store(settling)
			if _, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", step.a, "load-test"); err != nil {
				t.Fatal(err)
			}
			phase.Store(step.phase)
			// Let some acquires run in the new state.
			for n := admitted.Load(); admitted.Load() < n+40 && step.phase != disabled; {
				runtime.Gosched()
			}
			if step.phase == disabled {
				for range 40 {
					e.acquire("e0", "r")
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("%d acquires saw the old state after the setter returned, e.g. %q", len(wrong), wrong[0])
	}
	var tc int64
	for _, ent := range entities {
		tc += consumed(e.bucket(ent, "r", 0), "rpm")
	}
	if tc != admitted.Load()*1000 {
		t.Fatalf("tc %d over the buckets, %d admitted: consumption lost or invented", tc, admitted.Load())
	}
}
