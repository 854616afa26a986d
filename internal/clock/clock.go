// Package clock is a manual clock: the injected clock of the tests and of
// the `make run` walk-through, which moves only when told to. Safe for
// concurrent use.
package clock

import (
	"sync/atomic"
	"time"
)

// Manual is a clock that reads the instant it was last set to.
type Manual struct{ ns atomic.Int64 }

// NewManual returns a clock reading t.
func NewManual(t time.Time) *Manual {
	c := &Manual{}
	c.Set(t)
	return c
}

// Now is the clock's instant, in UTC. Pass the method value (c.Now) where
// a func() time.Time clock is taken.
func (c *Manual) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock on by d (back, for a negative d).
func (c *Manual) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set moves the clock to t.
func (c *Manual) Set(t time.Time) { c.ns.Store(t.UnixNano()) }
