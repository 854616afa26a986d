package condwrite

import "sync/atomic"

// counter is a count safe for concurrent use.
type counter struct{ n atomic.Int64 }

func (c *counter) add()        { c.n.Add(1) }
func (c *counter) load() int64 { return c.n.Load() }
