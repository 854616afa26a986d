package limiter

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// rcNow is the judge tests' instant (epoch ms).
const rcNow = 1_800_000_000_000

type rcItem = map[string]types.AttributeValue

func rcN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// rcBucket is a shard of entity's bucket of rpm 2/min per shard (2·shards
// a minute undivided) at tk millitokens, refilled at rcNow, vu a minute on,
// wcu full.
func rcBucket(entity string, tk int64, shards int64) rcItem {
	it := schema.BucketItemKeys("nsrejectcc1", entity, "api", 0).Item()
	it[schema.AttrEntityID] = &types.AttributeValueMemberS{Value: entity}
	it[schema.AttrResource] = &types.AttributeValueMemberS{Value: "api"}
	it[schema.AttrRF] = rcN(rcNow)
	it[schema.AttrShardCount] = rcN(shards)
	it[schema.AttrVU] = rcN(rcNow + 60_000)
	for _, l := range []struct {
		name           string
		tk, cp, ra, rp int64
	}{
		{"rpm", tk, 2000 * shards, 2000 * shards, 60_000},
		{schema.WCULimit, bucket.WCUCapacity, bucket.WCUCapacity, bucket.WCURefillAmount, bucket.WCURefillPeriod},
	} {
		it[schema.BucketAttr(l.name, schema.LimitTokens)] = rcN(l.tk)
		it[schema.BucketAttr(l.name, schema.LimitCapacity)] = rcN(l.cp)
		it[schema.BucketAttr(l.name, schema.LimitRefillAmount)] = rcN(l.ra)
		it[schema.BucketAttr(l.name, schema.LimitRefillPeriod)] = rcN(l.rp)
		it[schema.BucketAttr(l.name, schema.LimitConsumed)] = rcN(0)
	}
	return it
}

func rcImage(t *testing.T, it rcItem) *bucketitem.Image {
	t.Helper()
	img, err := bucketitem.Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	return &img
}

// rcLimiter is a limiter whose clock stands at *now, with the rejection
// cache on (TTL 1 s); it never reaches DynamoDB in these tests.
func rcLimiter(t *testing.T, now *int64) *Limiter {
	t.Helper()
	l, err := New(nil, "t", "nsrejectcc1", Options{Clock: func() time.Time { return time.UnixMilli(*now) }, Rand: func(n int) int { return n - 1 }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func rcRequest(t *testing.T, consume Consume, opts ...AcquireOption) *request {
	t.Helper()
	l := &Limiter{}
	r, err := l.newRequest("u", "api", consume, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestJudgeShard: when one cached state is known short, and every
// exception of docs/design.md §10 under which it never is (or under which
// nothing is rejected locally at all).
func TestJudgeShard(t *testing.T) {
	type verdict string
	const (
		short verdict = "short"
		room  verdict = "room"
		never verdict = "never"
	)
	rpm1 := Consume{"rpm": 1}
	rows := []struct {
		name    string
		mutate  func(rcItem)
		consume Consume
		opts    []AcquireOption
		want    verdict
	}{
		{"empty bucket: short", nil, rpm1, nil, short},
		{"refill since rf covers it", func(it rcItem) { it[schema.AttrRF] = rcN(rcNow - 30_000) }, rpm1, nil, room},
		{"refill since rf almost covers it", func(it rcItem) { it[schema.AttrRF] = rcN(rcNow - 29_999) }, rpm1, nil, short},
		{"a zero amount is covered by an empty bucket", nil, Consume{"rpm": 0}, nil, room},
		{"disabled stamp: the server's 403", func(it rcItem) { it[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: true} }, rpm1, nil, never},
		{"disabled = false still fails the fast path's guard", func(it rcItem) { it[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: false} }, rpm1, nil, never},
		{"live bypass stamp", func(it rcItem) { it[schema.AttrBypass] = rcN(rcNow + 10_000) }, rpm1, nil, room},
		{"expired bypass stamp", func(it rcItem) { it[schema.AttrBypass] = rcN(1) }, rpm1, nil, room},
		{"live soft stamp", func(it rcItem) { it[schema.BucketAttr("rpm", schema.LimitSoft)] = rcN(rcNow + 10_000) }, rpm1, nil, room},
		{"expired soft stamp", func(it rcItem) { it[schema.BucketAttr("rpm", schema.LimitSoft)] = rcN(1) }, rpm1, nil, room},
		{"soft stamp as an older writer's BOOL", func(it rcItem) {
			it[schema.BucketAttr("rpm", schema.LimitSoft)] = &types.AttributeValueMemberBOOL{Value: true}
		}, rpm1, nil, room},
		{"wcu-only shortfall: a sharding signal", func(it rcItem) {
			it[schema.BucketAttr("rpm", schema.LimitTokens)] = rcN(2000)
			it[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = rcN(0)
		}, rpm1, nil, room},
		{"a declared limit the bucket lacks", nil, Consume{"rpm": 1, "tpm": 1}, nil, room},
		{"override with the bucket's parameters", nil, rpm1, []AcquireOption{WithLimits(limit.PerMinute("rpm", 2))}, short},
		{"override with other parameters", nil, rpm1, []AcquireOption{WithLimits(limit.PerMinute("rpm", 5))}, never},
		{"a quota (phase 2 item)", func(it rcItem) { it[schema.BucketAttr("rpm", schema.LimitRefillAmount)] = rcN(0) }, rpm1, nil, room},
		{"larger than the ceiling: short for ever", func(it rcItem) { it[schema.BucketAttr("rpm", schema.LimitTokens)] = rcN(2000) }, Consume{"rpm": 3}, nil, short},
	}
	var now int64 = rcNow
	l := rcLimiter(t, &now)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			it := rcBucket("u", 0, 1)
			if r.mutate != nil {
				r.mutate(it)
			}
			isShort, isNever, _, _ := l.judgeShard(rcRequest(t, r.consume, r.opts...), rcImage(t, it), rcNow)
			got := room
			switch {
			case isNever:
				got = never
			case isShort:
				got = short
			}
			if got != r.want {
				t.Fatalf("verdict %s, want %s", got, r.want)
			}
		})
	}
}

// store puts an image of (entity, "api", shard) in l's rejection cache as
// a response would.
func rcStore(l *Limiter, entity string, shard int, img *bucketitem.Image) {
	l.rejects.store(shardKey{entity, "api", shard}, img, l.rejects.mark(entity, "api"))
}

// TestRejectLocally: every shard short → a local 429 with the projected
// state and the retry-after of the shard that clears soonest; a shard
// unknown or with room → no rejection, the draw steered around the short
// ones; trust ends with the TTL, vu and the item's ttl; a degraded limiter
// never rejects locally.
func TestRejectLocally(t *testing.T) {
	var now int64 = rcNow
	l := rcLimiter(t, &now)
	req := rcRequest(t, Consume{"rpm": 1})
	st := pairState{shardCount: 4}
	// Shard s holds 100·s millitokens of its 2-token share.
	for s := range 4 {
		it := rcBucket("u", int64(100*s), 4)
		rcStore(l, "u", s, rcImage(t, it))
	}
	e, steer := rejectNow(l, req, st)
	if e == nil {
		t.Fatal("every shard is short: want a local rejection")
	}
	if !e.Local || len(e.Statuses) != 1 || !e.Statuses[0].Exceeded || e.Statuses[0].EntityID != "u" {
		t.Fatalf("rejection %+v", e)
	}
	// Shard 3 (300 held) needs 700 more millitokens, the soonest.
	p3 := bucket.Params{Capacity: 8000, RefillAmount: 8000, RefillPeriod: 60_000}
	want := bucket.Check(300, rcNow, rcNow, bucket.Effective(p3, 4), 1)
	if got := e.Statuses[0].RetryAfter; !want.Exceeded || got != msDuration(want.Retry.WaitMs) || got < 21*time.Second {
		t.Fatalf("retry-after %v, want shard 3's %d ms (about 21 s, the shard closest to a token)", got, want.Retry.WaitMs)
	}
	if steer != 0 {
		t.Fatalf("a rejection steers nothing: %b", steer)
	}
	if s := l.Stats(); s.LocalRejections != 1 || s.RejectionCacheEntries != 4 {
		t.Fatalf("stats %+v", s)
	}

	// Shard 2 learns it has room: no rejection; the draw skips 0, 1, 3.
	rcStore(l, "u", 2, rcImage(t, rcBucket("u", 1000, 4)))
	e, steer = rejectNow(l, req, st)
	if e != nil {
		t.Fatalf("shard 2 has room: %v", e)
	}
	for range 20 {
		tried := steer
		if got, _ := l.drawShard(4, &tried); got != 2 {
			t.Fatalf("the steered draw chose shard %d, want 2", got)
		}
	}
	// Shard 2 forgotten (a credit): unknown, so it may have room.
	l.rejects.forget(shardKey{"u", "api", 2})
	if e, steer = rejectNow(l, req, st); e != nil || steer.has(2) || !steer.has(0) {
		t.Fatalf("after forgetting shard 2: %v, steer %b", e, steer)
	}
	rcStore(l, "u", 2, rcImage(t, rcBucket("u", 0, 4)))
	if e, _ = rejectNow(l, req, st); e == nil {
		t.Fatal("all short again: want a rejection")
	}
	// A shard the pair cache counts but the cache never saw: unknown.
	if e, _ = rejectNow(l, req, pairState{shardCount: 8}); e != nil {
		t.Fatal("shards 4-7 are unknown: no rejection")
	}
	// Degraded: never.
	l.degraded.Store(true)
	if e, _ = rejectNow(l, req, st); e != nil {
		t.Fatal("a degraded limiter rejected locally")
	}
	l.degraded.Store(false)
	// The TTL: trusted for less than 1 s.
	now += 999
	if e, _ = rejectNow(l, req, st); e == nil {
		t.Fatal("999 ms old: still trusted")
	}
	now++
	if e, _ = rejectNow(l, req, st); e != nil {
		t.Fatal("1 s old: no longer trusted")
	}
	// Whatever the age: the item's ttl passed, or vu passed on an item
	// with phase-2 attributes (a schedule may add tokens the refill does
	// not see), is untrusted; vu passed on a phase-1 item is judged by the
	// lazy refill from rf (docs/design.md §10): rpm refills 1 token per
	// 30 s per shard, so with rf 29,999 ms ago every shard is still short
	// and with rf 30 s ago every shard covers 1.
	for _, r := range []struct {
		name   string
		mutate func(rcItem)
		reject bool
	}{
		{"ttl passed", func(it rcItem) { it[schema.AttrTTL] = rcN(rcNow / 1000) }, false},
		{"vu passed, scheduled", func(it rcItem) {
			it[schema.AttrVU] = rcN(rcNow)
			it[schema.AttrSched] = &types.AttributeValueMemberS{Value: "0 9 * * 1-5"}
		}, false},
		{"vu passed, refilled 0.99 token", func(it rcItem) {
			it[schema.AttrVU] = rcN(rcNow - 29_000)
			it[schema.AttrRF] = rcN(rcNow - 29_999)
		}, true},
		{"vu passed, refilled 1 token", func(it rcItem) {
			it[schema.AttrVU] = rcN(rcNow - 29_000)
			it[schema.AttrRF] = rcN(rcNow - 30_000)
		}, false},
	} {
		now = rcNow
		l.InvalidateConfigCache()
		for s := range 4 {
			it := rcBucket("u", 0, 4)
			r.mutate(it)
			rcStore(l, "u", s, rcImage(t, it))
		}
		if e, _ = rejectNow(l, req, st); (e != nil) != r.reject {
			t.Fatalf("%s: local rejection %v, want %v", r.name, e, r.reject)
		}
	}
	// A clear (an operator write) empties it.
	l.InvalidateConfigCache()
	if n := l.Stats().RejectionCacheEntries; n != 0 {
		t.Fatalf("%d entries after a clear", n)
	}
}

// TestRejectLocallyCascade: the cascade rules of docs/design.md §10.
func TestRejectLocallyCascade(t *testing.T) {
	child := func(tk int64, mutate ...func(rcItem)) *bucketitem.Image {
		t.Helper()
		it := rcBucket("key", tk, 1)
		it[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: true}
		it[schema.AttrParentID] = &types.AttributeValueMemberS{Value: "org"}
		for _, m := range mutate {
			m(it)
		}
		return rcImage(t, it)
	}
	parent := func(tk int64, mutate ...func(rcItem)) *bucketitem.Image {
		it := rcBucket("org", tk, 1)
		for _, m := range mutate {
			m(it)
		}
		return rcImage(t, it)
	}
	disabled := func(it rcItem) { it[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: true} }
	rows := []struct {
		name          string
		child, parent *bucketitem.Image // nil: no state held
		want          string            // "" (no local rejection), or whose state the 429 reports
	}{
		{"child short, no parent state: the parent may be disabled", child(0), nil, ""},
		{"child short, parent known with room", child(0), parent(2000), "key"},
		{"child short, parent known disabled", child(0), parent(2000, disabled), ""},
		{"parent short, child with room: rejected before the child's write", child(2000), parent(0), "org"},
		{"parent short, child unknown: the child's own state is needed", nil, parent(0), ""},
		{"child stamped disabled", child(2000, disabled), parent(0), ""},
		{"both with room", child(2000), parent(2000), ""},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var now int64 = rcNow
			l := rcLimiter(t, &now)
			if r.child != nil {
				rcStore(l, "key", 0, r.child)
			}
			if r.parent != nil {
				rcStore(l, "org", 0, r.parent)
			}
			req, _ := l.newRequest("key", "api", Consume{"rpm": 1}, nil)
			e, _ := rejectNow(l, req, pairState{shardCount: 1})
			switch {
			case r.want == "" && e != nil:
				t.Fatalf("rejected locally: %v", e)
			case r.want != "" && e == nil:
				t.Fatal("want a local rejection")
			case r.want != "" && e.Statuses[0].EntityID != r.want:
				t.Fatalf("the 429 reports %s, want %s", e.Statuses[0].EntityID, r.want)
			}
		})
	}
	// Parent steering: of the parent's 2 shards, shard 0 is known short.
	var now int64 = rcNow
	l := rcLimiter(t, &now)
	rcStore(l, "org", 0, rcImage(t, rcBucket("org", 0, 2)))
	req, _ := l.newRequest("key", "api", Consume{"rpm": 1}, nil)
	if steer := l.parentSteer(req, "org", 2); !steer.has(0) || steer.has(1) {
		t.Fatalf("parent steer %b, want shard 0 skipped", steer)
	}
}

// TestRejectionCacheBounded: a million distinct shards leave the cache at
// its bound, the most recently stored kept, and every pair dropped is
// counted as an eviction (Stats.RejectionCacheEvictions).
func TestRejectionCacheBounded(t *testing.T) {
	now := time.UnixMilli(rcNow)
	c := newRejectionCache(10_000, time.Second, func() time.Time { return now })
	img := &bucketitem.Image{}
	for i := range 1_000_000 {
		k := shardKey{"key-" + strconv.Itoa(i), "api", 0}
		c.store(k, img, c.mark(k.entity, k.resource))
	}
	st := c.stats()
	if n := st.entries; n > 10_000+rejectionParts || n < 9_000 {
		t.Fatalf("the cache holds %d shards, want about 10 000", n)
	}
	if st.evictions != int64(1_000_000-st.entries) {
		t.Fatalf("%d evictions with %d of 1 000 000 pairs held, want %d", st.evictions, st.entries, 1_000_000-st.entries)
	}
	if c.lookup(shardKey{"key-999999", "api", 0}) == nil {
		t.Fatal("the last shard stored is gone")
	}
	if c.lookup(shardKey{"key-0", "api", 0}) != nil {
		t.Fatal("the first shard stored is still held")
	}
	if newRejectionCache(0, time.Second, time.Now) != nil || newRejectionCache(10, 0, time.Now) != nil {
		t.Fatal("a zero size or TTL must turn the cache off")
	}
}

// TestRejectionCacheMark: a response whose call began before a credit
// (forget) or a clear is not stored: it may predate the tokens returned.
func TestRejectionCacheMark(t *testing.T) {
	now := time.UnixMilli(rcNow)
	c := newRejectionCache(100, time.Second, func() time.Time { return now })
	k := shardKey{"u", "api", 0}
	img := &bucketitem.Image{}
	m := c.mark("u", "api")
	c.forget(shardKey{"u", "api", 1})
	c.store(k, img, m)
	if c.lookup(k) != nil {
		t.Fatal("stored across a forget")
	}
	m = c.mark("u", "api")
	c.clear()
	c.store(k, img, m)
	if c.lookup(k) != nil {
		t.Fatal("stored across a clear")
	}
	c.store(k, img, c.mark("u", "api"))
	if c.lookup(k) != img {
		t.Fatal("a clean store was dropped")
	}
}

// BenchmarkLocalRejection times the rejection cache's verdict alone: one
// hot pair of 4 short shards, from every goroutine. allocs/op is what a
// local rejection allocates (the error); rejections/s/core the rate per
// core.
func BenchmarkLocalRejection(b *testing.B) {
	var now int64 = rcNow
	l, err := New(nil, "t", "nsrejectcc1", Options{Clock: func() time.Time { return time.UnixMilli(now) }})
	if err != nil {
		b.Fatal(err)
	}
	for s := range 4 {
		img, err := bucketitem.Decode(rcBucket("u", 0, 4))
		if err != nil {
			b.Fatal(err)
		}
		rcStore(l, "u", s, &img)
	}
	req, _ := l.newRequest("u", "api", Consume{"rpm": 1}, nil)
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st := l.pairs.get(req.entity, req.resource)
			st.shardCount = 4
			if e, _ := rejectNow(l, req, st); e == nil {
				b.Error("not rejected")
				return
			}
		}
	})
	el := time.Since(t0)
	b.ReportMetric(float64(b.N)/el.Seconds()/float64(runtime.GOMAXPROCS(0)), "rejections/s/core")
}

// lookup (tests) returns one shard's state when it was stored less than ttl ago.
func (c *rejectionCache) lookup(k shardKey) *bucketitem.Image {
	var states [schema.MaxShardCount]*bucketitem.Image
	if k.shard < 0 || k.shard >= schema.MaxShardCount {
		return nil
	}
	c.trusted(k.entity, k.resource, k.shard+1, &states)
	return states[k.shard]
}

// rejectNow is rejectLocally at the limiter's clock reading, without the
// mark.
func rejectNow(l *Limiter, req *request, st pairState) (*RateLimitExceeded, shardSet) {
	e, steer, _ := l.rejectLocally(req, st, l.nowMs())
	return e, steer
}
