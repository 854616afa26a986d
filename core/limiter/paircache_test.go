package limiter

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPairCacheBoundedInSize: a million distinct entities (API keys) leave
// the cache at its bound, and the most recent pairs are the ones kept.
func TestPairCacheBoundedInSize(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newPairCache(10_000, time.Hour, func() time.Time { return now })
	for i := range 1_000_000 {
		c.learnShardCount("key-"+strconv.Itoa(i), "gpt-4", 2)
		if i%100_000 == 0 && c.len() > 10_000+pairCacheShards {
			t.Fatalf("after %d pairs the cache holds %d", i+1, c.len())
		}
	}
	if n := c.len(); n > 10_000+pairCacheShards || n < 9_000 {
		t.Fatalf("the cache holds %d pairs, want about 10 000", n)
	}
	if got := c.get("key-999999", "gpt-4").shardCount; got != 2 {
		t.Fatalf("the last pair taught is forgotten: shard count %d", got)
	}
	if got := c.get("key-0", "gpt-4").shardCount; got != 1 {
		t.Fatalf("the first pair taught is still held: shard count %d", got)
	}
}

// TestPairCacheBoundedInAge: a pair not taught for the TTL is forgotten;
// teaching it again restarts its age; a negative size keeps nothing.
func TestPairCacheBoundedInAge(t *testing.T) {
	var ms atomic.Int64
	ms.Store(1_800_000_000_000)
	now := func() time.Time { return time.UnixMilli(ms.Load()) }
	c := newPairCache(100, time.Minute, now)
	c.learnShardCount("a", "r", 4)
	ms.Add(59_999)
	if got := c.get("a", "r").shardCount; got != 4 {
		t.Fatalf("within the TTL: %d", got)
	}
	c.learnShardCount("a", "r", 4) // taught again: the age restarts
	ms.Add(59_999)
	if got := c.get("a", "r").shardCount; got != 4 {
		t.Fatalf("within the TTL of the second lesson: %d", got)
	}
	ms.Add(1)
	if got := c.get("a", "r").shardCount; got != 1 {
		t.Fatalf("past the TTL: shard count %d, want the unknown pair's 1", got)
	}
	if c.len() != 0 {
		t.Fatalf("an expired pair is still held after get: %d", c.len())
	}
	// An expired entry is not merged into a new lesson.
	c.update("b", "r", func(st *pairState) { st.cascadeKnown, st.cascade, st.parentID = true, true, "p" })
	ms.Add(time.Minute.Milliseconds())
	c.update("b", "r", func(st *pairState) { st.shardCount = 2 })
	if st := c.get("b", "r"); st.cascadeKnown || st.shardCount != 2 {
		t.Fatalf("after expiry: %+v", st)
	}

	off := newPairCache(0, time.Minute, now)
	off.learnShardCount("a", "r", 4)
	if off.len() != 0 || off.get("a", "r").shardCount != 1 {
		t.Fatal("a cache of size 0 kept a pair")
	}
}

// TestPairCacheConcurrent: 64 goroutines teach and read distinct and
// shared pairs under -race.
func TestPairCacheConcurrent(t *testing.T) {
	c := newPairCache(1000, time.Minute, time.Now)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				e := "e" + strconv.Itoa(g*10_000+i%50)
				c.learnShardCount(e, "r", int64(1+i%4))
				c.learnShardCount("shared", "r", int64(1+i%8))
				_ = c.get(e, "r")
				_ = c.get("shared", "r")
			}
		}()
	}
	wg.Wait()
	if n := c.len(); n > 1000+pairCacheShards {
		t.Fatalf("%d pairs held", n)
	}
	if got := c.get("shared", "r").shardCount; got != 8 {
		t.Fatalf("shared pair shard count %d, want the largest taught, 8", got)
	}
}

// BenchmarkPairCacheParallel: 64 goroutines, each on pairs of its own, a
// get and an update per op — the cache's part of every acquire.
func BenchmarkPairCacheParallel(b *testing.B) {
	c := newPairCache(DefaultPairCacheSize, DefaultPairCacheTTL, time.Now)
	var next atomic.Int64
	b.SetParallelism(32) // × GOMAXPROCS 2 = 64 goroutines
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(next.Add(1), 10)
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = "key-" + id + "-" + strconv.Itoa(i)
		}
		i := 0
		for pb.Next() {
			k := keys[i%len(keys)]
			_ = c.get(k, "gpt-4")
			c.learnShardCount(k, "gpt-4", 2)
			i++
		}
	})
}
