package usage_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// t0 is the instant of the live-state tests' acquires.
var t0 = utc(2026, 3, 14, 9, 0)

// rpm100 is 100 tokens, refilled 100 a minute, as stored: millitokens and
// milliseconds.
var rpm100 = bucket.Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}

// putShard writes a bucket shard as the limiter creates one (the item of
// bucketitem.New): the shards a doubling would have made, which real
// traffic reaches only under write pressure.
func (w *world) putShard(t *testing.T, entity, resource string, shard int, count int64, rf time.Time, limits ...bucketitem.NewLimit) {
	t.Helper()
	n := bucketitem.New{ID: schema.BucketID{Namespace: w.ns, Entity: entity, Resource: resource, Shard: shard},
		RF: rf.UnixMilli(), ShardCount: count, Limits: limits}
	if _, err := w.tbl.DB.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(w.tbl.Name), Item: n.Item()}); err != nil {
		t.Fatal(err)
	}
}

func renderLimit(l usage.LimitState) string {
	return fmt.Sprintf("%s cap %d refill %d/%s stored %d remaining %d consumed %d projected %v",
		l.Name, l.Capacity, l.RefillAmount, l.RefillPeriod, l.Stored, l.Remaining, l.Consumed, l.Projected)
}

// TestBucketProjected works the projection of docs/design.md §3 on a
// bucket real acquires made, at an injected clock: rpm is 100 tokens
// refilled 100 a minute; 60 taken at t0 leave 40 000 millitokens stored.
// After 15 s the refill adds 15 000 × 100 000 / 60 000 = 25 000: 65 tokens.
// After a minute it is back at its capacity, never above.
func TestBucketProjected(t *testing.T) {
	w := testWorld(t, t0, "api", []limit.Limit{limit.PerMinute("rpm", 100)})
	w.at(t0, acquire{"alice", "api", limiter.Consume{"rpm": 60}})
	for _, c := range []struct {
		elapsed time.Duration
		want    string
		tokens  int64
	}{
		{0, "rpm cap 100000 refill 100000/1m0s stored 40000 remaining 40000 consumed 60000 projected true", 40},
		{15 * time.Second, "rpm cap 100000 refill 100000/1m0s stored 40000 remaining 65000 consumed 60000 projected true", 65},
		{15*time.Second + 599*time.Millisecond, "rpm cap 100000 refill 100000/1m0s stored 40000 remaining 65998 consumed 60000 projected true", 65},
		{36 * time.Second, "rpm cap 100000 refill 100000/1m0s stored 40000 remaining 100000 consumed 60000 projected true", 100},
		{time.Hour, "rpm cap 100000 refill 100000/1m0s stored 40000 remaining 100000 consumed 60000 projected true", 100},
	} {
		w.clk.Set(t0.Add(c.elapsed))
		st, err := w.reader(usage.Options{}).Bucket(t.Context(), "alice", "api")
		if err != nil {
			t.Fatal(err)
		}
		if !st.Projected || !st.ProjectedAt.Equal(t0.Add(c.elapsed)) || st.ShardCount != 1 || st.Shards != 1 || len(st.Limits) != 1 {
			t.Fatalf("after %s: %+v", c.elapsed, st)
		}
		l, ok := st.Limit("rpm")
		if got := renderLimit(l); !ok || got != c.want || l.RemainingTokens() != c.tokens {
			t.Errorf("after %s:\ngot  %s (%d tokens)\nwant %s (%d tokens)", c.elapsed, got, l.RemainingTokens(), c.want, c.tokens)
		}
	}
	_, err := w.reader(usage.Options{}).Bucket(t.Context(), "nobody", "api")
	if !errors.Is(err, usage.ErrNoBucket) {
		t.Fatalf("an entity without a bucket: %v", err)
	}
	var ve *schema.ValidationError
	if _, err := w.reader(usage.Options{}).Bucket(t.Context(), "a#b", "api"); !errors.As(err, &ve) {
		t.Fatalf("a bad entity id: %v", err)
	}
}

// TestBucketQuota projects a calendar quota: 1 000 tokens a day, back at
// midnight UTC. 600 taken at 09:00 leave 400, which no time refills until
// the reset edge; past midnight the projection applies the reset (§15) and
// shows the whole allowance, though nothing was written since.
func TestBucketQuota(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	w := testWorld(t, t0, "batch", []limit.Limit{limit.Quota("tpd", 1000, daily, "UTC")})
	w.at(t0, acquire{"alice", "batch", limiter.Consume{"tpd": 600}})
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(time.Hour), "tpd cap 1000000 refill 0/1s stored 400000 remaining 400000 consumed 600000 projected true"},
		{utc(2026, 3, 14, 23, 59), "tpd cap 1000000 refill 0/1s stored 400000 remaining 400000 consumed 600000 projected true"},
		{utc(2026, 3, 15, 0, 0), "tpd cap 1000000 refill 0/1s stored 400000 remaining 1000000 consumed 600000 projected true"},
	} {
		w.clk.Set(c.at)
		st, err := w.reader(usage.Options{}).Bucket(t.Context(), "alice", "batch")
		if err != nil {
			t.Fatal(err)
		}
		if got := renderLimit(st.Limits[0]); got != c.want {
			t.Errorf("at %s:\ngot  %s\nwant %s", c.at.Format(time.RFC3339), got, c.want)
		}
	}
}

// TestBucketShards sums a bucket over its shards, each projected at its
// own share and from its own rf. The bucket has 4 shards, of which 0 and 1
// exist: a share is C // 4 = 25 000 millitokens refilled 25 000 a minute.
// At t0 + 12 s, shard 0 (10 000 at t0) gains 12 000 × 25 000 / 60 000 =
// 5 000: 15 000; shard 1 (20 000 at t0 − 30 s) would gain 17 500 but stops
// at its share, 25 000. Remaining 40 000, stored 30 000. A shard whose
// schedule does not read is summed as stored and marked unprojected.
func TestBucketShards(t *testing.T) {
	w := testWorld(t, t0, "api", nil)
	w.putShard(t, "carol", "api", 0, 4, t0, bucketitem.NewLimit{Name: "rpm", Tokens: 10_000, Consumed: 5_000, Params: rpm100})
	w.putShard(t, "carol", "api", 1, 4, t0.Add(-30*time.Second), bucketitem.NewLimit{Name: "rpm", Tokens: 20_000, Consumed: 7_000, Params: rpm100})
	w.clk.Set(t0.Add(12 * time.Second))
	r := w.reader(usage.Options{ConsistentRead: true})
	st, err := r.Bucket(t.Context(), "carol", "api")
	if err != nil {
		t.Fatal(err)
	}
	want := "rpm cap 100000 refill 100000/1m0s stored 30000 remaining 40000 consumed 12000 projected true"
	if got := renderLimit(st.Limits[0]); got != want || st.ShardCount != 4 || st.Shards != 2 || !st.Projected {
		t.Fatalf("got %s (%d of %d shards, projected %v)\nwant %s", got, st.Shards, st.ShardCount, st.Projected, want)
	}

	// Shard 1's schedule does not decode: rpm is summed as stored.
	_, err = w.tbl.DB.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(w.tbl.Name), Key: schema.BucketKey(w.ns, "carol", "api", 1).AttributeValues(),
		UpdateExpression:          aws.String("SET b_rpm_sched = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Str("not a schedule")},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err = r.Bucket(t.Context(), "carol", "api")
	if err != nil {
		t.Fatal(err)
	}
	want = "rpm cap 100000 refill 100000/1m0s stored 30000 remaining 30000 consumed 12000 projected false"
	if got := renderLimit(st.Limits[0]); got != want || st.Projected {
		t.Fatalf("got %s (projected %v)\nwant %s", got, st.Projected, want)
	}
}

// TestBucketSession projects a session quota as a Python client of 0.15
// or later stores one (docs/design.md §15): 1,000 tokens per 5-hour window
// opened on first use, 2 shards, each a share of 500,000 millitokens.
// Shard 0 opened a window at t0 and spent 400 tokens of its share; shard
// 1 got the window's start from the opener's fan-out (its wa is the last
// window's, its wtc the snapshot of its tc, 100,000) and has spent 50
// tokens since, on a debt of 20 left from the last window. Projected:
// shard 0 as stored, 100,000; shard 1 rolled in, 500,000 − 50,000 =
// 450,000. Once the window has ended, the next use opens a new one on
// each shard: the whole allowance.
func TestBucketSession(t *testing.T) {
	w := testWorld(t, t0, "chat", nil)
	const fiveHours = 5 * 3600
	session := bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000}
	w.putShard(t, "dave", "chat", 0, 2, t0, bucketitem.NewLimit{Name: "s5h", Tokens: 100_000, Consumed: 400_000, Params: session,
		GrantShards: 2, ResetAfter: fiveHours, WindowStart: t0.UnixMilli(), WindowAnchor: t0.UnixMilli()})
	w.putShard(t, "dave", "chat", 1, 2, t0.Add(-6*time.Hour), bucketitem.NewLimit{Name: "s5h", Tokens: -20_000, Consumed: 150_000,
		Params: session, GrantShards: 2, ResetAfter: fiveHours, WindowStart: t0.UnixMilli(),
		WindowAnchor: t0.Add(-7 * time.Hour).UnixMilli(), WindowConsumed: 100_000})
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(time.Hour), "s5h cap 1000000 refill 0/1s stored 80000 remaining 550000 consumed 550000 projected true"},
		{t0.Add(5*time.Hour - time.Millisecond), "s5h cap 1000000 refill 0/1s stored 80000 remaining 550000 consumed 550000 projected true"},
		{t0.Add(5 * time.Hour), "s5h cap 1000000 refill 0/1s stored 80000 remaining 1000000 consumed 550000 projected true"},
	} {
		w.clk.Set(c.at)
		st, err := w.reader(usage.Options{ConsistentRead: true}).Bucket(t.Context(), "dave", "chat")
		if err != nil {
			t.Fatal(err)
		}
		if got := renderLimit(st.Limits[0]); got != c.want {
			t.Errorf("at t0 + %s:\ngot  %s\nwant %s", c.at.Sub(t0), got, c.want)
		}
	}
}

// TestTop ranks a resource's entities by a limit's consumption counter,
// summed over shards, on a KEYS_ONLY usage index (a BatchGetItem per page)
// and on one that projects ALL; ties go by entity id.
func TestTop(t *testing.T) {
	for _, proj := range []types.ProjectionType{types.ProjectionTypeKeysOnly, types.ProjectionTypeAll} {
		t.Run(string(proj), func(t *testing.T) {
			w := testWorld(t, t0, "api", []limit.Limit{limit.PerMinute("tpm", 1000), limit.PerMinute("rpm", 1000)}, schema.WithGSI2Projection(proj))
			if _, err := w.ctl.SetResourceLimits(t.Context(), w.ns, "other", []limit.Limit{limit.PerMinute("rpm", 10)}, ""); err != nil {
				t.Fatal(err)
			}
			take := func(e string, n int64) acquire { return acquire{e, "api", limiter.Consume{"rpm": 1, "tpm": n}} }
			w.at(t0, take("a", 100), take("b", 300), take("c", 200), take("d", 299))
			w.at(t0.Add(time.Minute), take("d", 1), acquire{"e", "other", limiter.Consume{"rpm": 1}})
			// a's second shard has consumed 250 tpm: 350 in all.
			w.putShard(t, "a", "api", 1, 2, t0, bucketitem.NewLimit{Name: "tpm", Tokens: 0, Consumed: 250_000, Params: rpm100})
			for _, c := range []struct {
				limit string
				n     int
				want  string
			}{
				{"tpm", 3, "a 350000 (350 tokens, 2 shards), b 300000 (300 tokens, 1 shards), d 300000 (300 tokens, 1 shards)"},
				{"tpm", 10, "a 350000 (350 tokens, 2 shards), b 300000 (300 tokens, 1 shards), d 300000 (300 tokens, 1 shards), c 200000 (200 tokens, 1 shards)"},
				{"rpm", 2, "d 2000 (2 tokens, 1 shards), a 1000 (1 tokens, 1 shards)"},
				{"nosuch", 5, ""},
			} {
				for _, size := range []int{1, 100} {
					top, err := w.reader(usage.Options{PageSize: size}).Top(t.Context(), "api", c.limit, c.n)
					if err != nil {
						t.Fatal(err)
					}
					var parts []string
					for _, e := range top {
						parts = append(parts, fmt.Sprintf("%s %d (%d tokens, %d shards)", e.Entity, e.Consumed, e.ConsumedTokens(), e.Shards))
					}
					if got := strings.Join(parts, ", "); got != c.want {
						t.Errorf("top %d by %s, pages of %d:\ngot  %s\nwant %s", c.n, c.limit, size, got, c.want)
					}
				}
			}
			r := w.reader(usage.Options{})
			var ve *schema.ValidationError
			for _, bad := range []func() error{
				func() error { _, err := r.Top(t.Context(), "api", "tpm", 0); return err },
				func() error { _, err := r.Top(t.Context(), "api", "wcu", 1); return err },
				func() error { _, err := r.Top(t.Context(), "a#pi", "tpm", 1); return err },
			} {
				if err := bad(); !errors.As(err, &ve) {
					t.Errorf("%v, want a validation error", err)
				}
			}
		})
	}
}
