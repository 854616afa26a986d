package httplimit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// perMinute is the status of a limit of capacity tokens refilled per
// minute, with available left.
func perMinute(name string, capacity, available int64) limiter.LimitStatus {
	return limiter.LimitStatus{
		EntityID: "key-1", Resource: "gpt-4", LimitName: name,
		Capacity: capacity, RefillAmount: capacity, RefillPeriod: time.Minute,
		Available: available, Requested: 1,
	}
}

// exhausted marks s exceeded with wait (never when wait < 0).
func exhausted(s limiter.LimitStatus, wait time.Duration) limiter.LimitStatus {
	s.Exceeded = true
	if wait < 0 {
		s.Never = true
	} else {
		s.RetryAfter = wait
	}
	return s
}

// fakeQuota answers every quota with a day-long period whose next reset is
// untilReset away.
func fakeQuota(untilReset time.Duration) quotaClock {
	return func(limiter.LimitStatus) (time.Duration, time.Duration, bool) {
		return 24 * time.Hour, untilReset, true
	}
}

// TestFieldValues pins the RateLimit-Policy and RateLimit values, Retry-After
// and the problem's violated list of worked examples: the order (exhausted
// first, the longest wait first, then the smallest remaining fraction, then
// the name), the parameters and RFC 8941's serialisation.
func TestFieldValues(t *testing.T) {
	for _, c := range []struct {
		name              string
		statuses          []limiter.LimitStatus
		quota             quotaClock
		policy, rateLimit string
		retryAfter        string
		violated          []string
	}{
		{
			// 60 tokens short of 100 at 100 a minute: full in 36 s.
			name:     "one limit, admitted",
			statuses: []limiter.LimitStatus{perMinute("rpm", 100, 40)},
			policy:   `"rpm";q=100;w=60`, rateLimit: `"rpm";r=40;t=36`, retryAfter: "", violated: []string{},
		},
		{
			// The brief's example: rpm exhausted, 12.001 s to wait (13 rounded
			// up); tpm 1,000 short of 100,000 a minute: full in 0.6 s, 1 rounded up.
			name: "429: the exhausted limit first",
			statuses: []limiter.LimitStatus{
				perMinute("tpm", 100_000, 99_000),
				exhausted(perMinute("rpm", 100, 0), 12001*time.Millisecond),
			},
			policy:     `"rpm";q=100;w=60, "tpm";q=100000;w=60`,
			rateLimit:  `"rpm";r=0;t=13, "tpm";r=99000;t=1`,
			retryAfter: "13", violated: []string{"rpm"},
		},
		{
			name: "two exhausted: the longer wait first, Retry-After is it",
			statuses: []limiter.LimitStatus{
				exhausted(perMinute("rpm", 100, 0), 2*time.Second),
				exhausted(perMinute("tpm", 1000, 10), 30500*time.Millisecond),
			},
			policy:     `"tpm";q=1000;w=60, "rpm";q=100;w=60`,
			rateLimit:  `"tpm";r=10;t=31, "rpm";r=0;t=2`,
			retryAfter: "31", violated: []string{"tpm", "rpm"},
		},
		{
			// A request larger than the limit can hold: no t, no Retry-After.
			name:       "a wait no refill ends",
			statuses:   []limiter.LimitStatus{perMinute("rpm", 100, 100), exhausted(perMinute("tpm", 1000, 1000), -1)},
			policy:     `"tpm";q=1000;w=60, "rpm";q=100;w=60`,
			rateLimit:  `"tpm";r=1000, "rpm";r=100;t=0`,
			retryAfter: "", violated: []string{"tpm"},
		},
		{
			// Not exhausted: the smallest remaining fraction first (tpm at
			// 10 %, rpm at 50 %); equal fractions by name.
			name:       "admitted: tightest first",
			statuses:   []limiter.LimitStatus{perMinute("rpm", 100, 50), perMinute("tpm", 100_000, 10_000), perMinute("rpd", 10, 5)},
			policy:     `"tpm";q=100000;w=60, "rpd";q=10;w=60, "rpm";q=100;w=60`,
			rateLimit:  `"tpm";r=10000;t=54, "rpd";r=5;t=30, "rpm";r=50;t=30`,
			retryAfter: "", violated: []string{},
		},
		{
			// A soft limit in debt shows no tokens left and refills from
			// the debt: 105 tokens at 100 a minute, 63 s.
			name:     "soft limit in debt",
			statuses: []limiter.LimitStatus{func() limiter.LimitStatus { s := perMinute("tpm", 100, -5); s.Soft = true; return s }()},
			policy:   `"tpm";q=100;w=60`, rateLimit: `"tpm";r=0;t=63`, retryAfter: "", violated: []string{},
		},
		{
			// A cascading pair reports rpm for the entity and its parent:
			// the tighter stands for the name.
			name: "cascade: one member per limit name",
			statuses: []limiter.LimitStatus{
				perMinute("rpm", 100, 90),
				func() limiter.LimitStatus { s := perMinute("rpm", 1000, 100); s.EntityID = "org-1"; return s }(),
			},
			policy: `"rpm";q=1000;w=60`, rateLimit: `"rpm";r=100;t=54`, retryAfter: "", violated: []string{},
		},
		{
			// A calendar quota: w is its reset period, t the time to its
			// next reset (an hour and a half: 5400 s); exhausted, t is
			// the retry-after, which names the same edge.
			name: "calendar quota",
			statuses: []limiter.LimitStatus{
				{LimitName: "tpd", Capacity: 1000, RefillPeriod: time.Second, Available: 400, Requested: 1},
				exhausted(limiter.LimitStatus{LimitName: "rpd", Capacity: 10, RefillPeriod: time.Second, Requested: 1}, 90*time.Minute),
			},
			quota:      fakeQuota(90 * time.Minute),
			policy:     `"rpd";q=10;w=86400, "tpd";q=1000;w=86400`,
			rateLimit:  `"rpd";r=0;t=5400, "tpd";r=400;t=5400`,
			retryAfter: "5400", violated: []string{"rpd"},
		},
		{
			name:       "calendar quota, edges unknown: no w, no t",
			statuses:   []limiter.LimitStatus{{LimitName: "tpd", Capacity: 1000, RefillPeriod: time.Second, Available: 400}},
			policy:     `"tpd";q=1000`,
			rateLimit:  `"tpd";r=400`,
			retryAfter: "", violated: []string{},
		},
		{
			// RFC 8941 Strings escape `"` and `\`; a name a String cannot
			// hold (non-ASCII) is left out of both fields. Limit names the
			// table accepts never need either; the serialiser still holds.
			name: "string escaping",
			statuses: []limiter.LimitStatus{
				perMinute(`a"b\c`, 10, 5),
				perMinute("é", 10, 1),
			},
			policy:     `"a\"b\\c";q=10;w=60`,
			rateLimit:  `"a\"b\\c";r=5;t=30`,
			retryAfter: "", violated: []string{},
		},
		{
			// Integers of more than 15 digits are written as the largest
			// RFC 8941 Integer.
			name:       "clamped integers",
			statuses:   []limiter.LimitStatus{perMinute("tpm", 9_000_000_000_000_000, 8_000_000_000_000_000)},
			policy:     `"tpm";q=999999999999999;w=60`,
			rateLimit:  `"tpm";r=999999999999999;t=7`,
			retryAfter: "", violated: []string{},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := members(c.statuses, c.quota)
			policy, rateLimit := fieldValues(ms)
			if policy != c.policy {
				t.Errorf("RateLimit-Policy:\n got %s\nwant %s", policy, c.policy)
			}
			if rateLimit != c.rateLimit {
				t.Errorf("RateLimit:\n got %s\nwant %s", rateLimit, c.rateLimit)
			}
			if got := retryAfterValue(ms); got != c.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, c.retryAfter)
			}
			if got, _ := json.Marshal(violated(ms)); string(got) != mustJSON(t, c.violated) {
				t.Errorf("violated %s, want %v", got, c.violated)
			}
			// The admitted path's tightest member is the list's first.
			if tight, ok := tightest(c.statuses, c.quota); !ok || tight != ms[0] {
				t.Errorf("tightest = %+v, %v; want the first member %+v", tight, ok, ms[0])
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUntilFull pins the refill arithmetic of t: rounded up, in 128 bits.
func TestUntilFull(t *testing.T) {
	for _, c := range []struct {
		capacity, refill, available int64
		period                      time.Duration
		want                        int64
	}{
		{100, 100, 100, time.Minute, 0},
		{100, 100, 99, time.Minute, 1},  // 0.6 s
		{100, 100, 0, time.Minute, 60},  // exactly the period
		{100, 10, 0, time.Minute, 600},  // ten periods
		{1000, 1, 999, time.Hour, 3600}, // one token an hour
		{10, 3, 0, time.Second, 4},      // 3.333… s
		{1 << 62, 1, 0, 24 * time.Hour, maxSFInteger},
	} {
		s := limiter.LimitStatus{Capacity: c.capacity, RefillAmount: c.refill, RefillPeriod: c.period, Available: c.available}
		if got := untilFull(s); got != c.want {
			t.Errorf("untilFull(%+v) = %d, want %d", c, got, c.want)
		}
	}
}
