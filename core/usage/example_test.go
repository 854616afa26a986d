package usage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// exampleWorld is a fresh DynamoDB Local table where alice and bob called
// gpt-4 around midnight of 1 February 2026, and the aggregator turned the
// table's stream into snapshots.
func exampleWorld(name string) (*world, func()) {
	tbl, drop := ddbtest.ExampleTable(name, ddbtest.WithStream())
	w := newWorld(tbl, func(format string, args ...any) { panic(fmt.Sprintf(format, args...)) },
		time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), "gpt-4",
		[]limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 10_000)}...)
	call := func(entity string, tokens int64) acquire {
		return acquire{entity, "gpt-4", limiter.Consume{"rpm": 1, "tpm": tokens}}
	}
	w.at(time.Date(2026, 1, 31, 23, 40, 0, 0, time.UTC), call("alice", 1200), call("bob", 300))
	w.at(time.Date(2026, 2, 1, 0, 5, 0, 0, time.UTC), call("alice", 800))
	w.at(time.Date(2026, 2, 1, 0, 50, 0, 0, time.UTC), call("alice", 500), call("bob", 700))
	return w, drop
}

// An operator lists one entity's hourly usage over a night, and every
// entity's daily usage of the resource, a page of two items at a time.
func ExampleReader_Snapshots() {
	w, drop := exampleWorld("ExampleReader_Snapshots")
	defer drop()
	ctx := context.Background()
	r, err := usage.New(w.tbl.DB, w.tbl.Name, w.ns, usage.Options{PageSize: 2})
	if err != nil {
		panic(err)
	}
	from, to := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	for s, err := range r.Snapshots(ctx, usage.ForEntity("alice", "gpt-4", usage.Hourly, from, to)) {
		if err != nil {
			panic(err)
		}
		tpm, _ := s.Limit("tpm")
		fmt.Println(s.Entity, s.Window, s.WindowStart.Format(time.RFC3339), "tpm", tpm.Tokens)
	}
	for s, err := range r.Snapshots(ctx, usage.ForResource("gpt-4", usage.Daily, from, to).WithLimits("rpm")) {
		if err != nil {
			panic(err)
		}
		fmt.Println(s.Entity, s.Window, s.WindowStart.Format("2006-01-02"), "rpm", s.Limits[0].Tokens)
	}
	// Output:
	// alice hourly 2026-01-31T23:00:00Z tpm 1200
	// alice hourly 2026-02-01T00:00:00Z tpm 1300
	// alice daily 2026-01-31 rpm 1
	// bob daily 2026-01-31 rpm 1
	// alice daily 2026-02-01 rpm 2
	// bob daily 2026-02-01 rpm 1
}

// A dashboard sums a resource's hourly usage over a day.
func ExampleReader_Summary() {
	w, drop := exampleWorld("ExampleReader_Summary")
	defer drop()
	r, err := usage.New(w.tbl.DB, w.tbl.Name, w.ns, usage.Options{})
	if err != nil {
		panic(err)
	}
	from, to := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	s, err := r.Summary(context.Background(), usage.ForResource("gpt-4", usage.Hourly, from, to))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d snapshots of %d entities in %d hours, %s to %s\n", s.Snapshots, s.Entities, s.Windows,
		s.First.Format("15:04"), s.Last.Format("15:04"))
	for _, l := range s.Limits {
		fmt.Printf("%s: %d tokens, %.1f an hour\n", l.Name, l.Total, l.PerWindow)
	}
	// Output:
	// 4 snapshots of 2 entities in 2 hours, 23:00 to 00:00
	// rpm: 5 tokens, 2.5 an hour
	// tpm: 3500 tokens, 1750.0 an hour
}

// A service shows an entity what it has left, projected to now by the
// bucket's refill, and who used the resource most.
func ExampleReader_Bucket() {
	w, drop := exampleWorld("ExampleReader_Bucket")
	defer drop()
	ctx := context.Background()
	// The reader's clock: 300 ms after alice's last call, which left rpm
	// at 99 and tpm at 9 500 of 10 000. In 300 ms tpm refills
	// 10 000 × 300 / 60 000 = 50 tokens, rpm half a token.
	now := func() time.Time { return time.Date(2026, 2, 1, 0, 50, 0, 300e6, time.UTC) }
	r, err := usage.New(w.tbl.DB, w.tbl.Name, w.ns, usage.Options{Clock: now})
	if err != nil {
		panic(err)
	}
	st, err := r.Bucket(ctx, "alice", "gpt-4")
	if err != nil {
		panic(err)
	}
	for _, l := range st.Limits {
		fmt.Printf("%s: %d of %d tokens left at %s (projected %v)\n", l.Name, l.RemainingTokens(), l.Capacity/1000,
			st.ProjectedAt.Format("15:04:05.000"), l.Projected)
	}
	top, err := r.Top(ctx, "gpt-4", "tpm", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("top tpm:", top[0].Entity, top[0].ConsumedTokens())
	// Output:
	// rpm: 99 of 100 tokens left at 00:50:00.300 (projected true)
	// tpm: 9550 of 10000 tokens left at 00:50:00.300 (projected true)
	// top tpm: alice 2500
}
