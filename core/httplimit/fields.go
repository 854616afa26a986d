package httplimit

import (
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// member is one limit as the RateLimit fields and the problem body show it
// (docs/design.md §17).
type member struct {
	name      string
	quota     int64 // q: the capacity, whole tokens
	window    int64 // w: seconds; -1 when not known
	remaining int64 // r: whole tokens, never below 0
	reset     int64 // t: seconds until full again, or the retry-after; -1 when not known
	requested int64
	exceeded  bool
	never     bool          // exceeded, and no wait helps
	wait      time.Duration // exceeded: the retry-after
	fraction  float64       // what is left of the capacity, for "tightest"
}

// quotaClock tells, for a calendar quota's status, its current reset
// period and the time until its next reset edge; ok is false when it cannot.
type quotaClock func(s limiter.LimitStatus) (period, untilReset time.Duration, ok bool)

// memberOf reads one status. quota is asked only for a calendar quota
// (refill amount 0): its window is its reset period, and it is full again at
// its next reset.
func memberOf(s limiter.LimitStatus, quota quotaClock) member {
	m := member{
		name: s.LimitName, quota: s.Capacity, window: -1, reset: -1,
		remaining: max(s.Available, 0), requested: s.Requested,
		exceeded: s.Exceeded, never: s.Exceeded && s.Never, wait: s.RetryAfter,
	}
	if s.Capacity > 0 {
		m.fraction = float64(s.Available) / float64(s.Capacity)
	}
	var period, untilReset time.Duration
	isQuota := s.RefillAmount <= 0
	known := !isQuota
	if isQuota && quota != nil {
		period, untilReset, known = quota(s)
	}
	switch {
	case !isQuota:
		m.window = ceilSeconds(s.RefillPeriod)
	case known:
		m.window = ceilSeconds(period)
	}
	switch {
	case m.exceeded && !m.never:
		m.reset = ceilSeconds(s.RetryAfter)
	case m.exceeded:
	case !isQuota:
		m.reset = untilFull(s)
	case known:
		m.reset = ceilSeconds(untilReset)
		if s.Available >= s.Capacity {
			m.reset = 0
		}
	}
	return m
}

// untilFull is the whole seconds (rounded up) a dripping limit takes to
// refill from its balance to its capacity: (capacity − available) × period /
// refill amount. A sharded bucket's status holds its shard's balance and the
// undivided capacity, which makes this a bound from above.
func untilFull(s limiter.LimitStatus) int64 {
	deficit := s.Capacity - s.Available
	if deficit <= 0 || s.RefillPeriod <= 0 {
		return 0
	}
	// ceil(deficit × period / refill) in milliseconds, in 128 bits.
	hi, lo := bits.Mul64(uint64(deficit), uint64(s.RefillPeriod.Milliseconds()))
	if hi >= uint64(s.RefillAmount) {
		return maxSFInteger
	}
	ms, rem := bits.Div64(hi, lo, uint64(s.RefillAmount))
	if rem > 0 {
		ms++
	}
	return min(int64((ms+999)/1000), maxSFInteger)
}

// ceilSeconds is d in whole seconds, rounded up (0 for d ≤ 0).
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return min(int64((d+time.Second-1)/time.Second), maxSFInteger)
}

// tighter reports whether a comes before b: an exhausted limit before one
// that is not, the longer wait first (a wait no refill ends is longest);
// otherwise the smaller remaining fraction of the capacity; then the name.
func tighter(a, b member) bool {
	if a.exceeded != b.exceeded {
		return a.exceeded
	}
	if a.exceeded {
		if a.never != b.never {
			return a.never
		}
		if a.wait != b.wait {
			return a.wait > b.wait
		}
	} else if a.fraction != b.fraction {
		return a.fraction < b.fraction
	}
	return a.name < b.name
}

// members reads statuses into one member per limit name, tightest first.
// A cascading pair reports a limit for the entity and for its parent; the
// tighter of the two stands for the name.
func members(statuses []limiter.LimitStatus, quota quotaClock) []member {
	out := make([]member, 0, len(statuses))
next:
	for _, s := range statuses {
		m := memberOf(s, quota)
		for i := range out {
			if out[i].name == m.name {
				if tighter(m, out[i]) {
					out[i] = m
				}
				continue next
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b member) int {
		switch {
		case tighter(a, b):
			return -1
		case tighter(b, a):
			return 1
		}
		return 0
	})
	return out
}

// tightest is the first member of statuses in the order of members, read
// without building the list (the admitted path); ok is false when there is
// no status.
func tightest(statuses []limiter.LimitStatus, quota quotaClock) (m member, ok bool) {
	for _, s := range statuses {
		if c := memberOf(s, quota); !ok || tighter(c, m) {
			m, ok = c, true
		}
	}
	return m, ok
}

// maxSFInteger is the largest Integer of RFC 8941 (15 digits); larger
// values are written as it.
const maxSFInteger = 999_999_999_999_999

// appendSFString appends s as an RFC 8941 String: quoted, with `"` and `\`
// escaped. ok is false when s holds a character a String cannot (outside
// printable ASCII); b is then returned unchanged.
func appendSFString(b []byte, s string) ([]byte, bool) {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return b, false
		}
	}
	b = append(b, '"')
	for i := range len(s) {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"'), true
}

// appendSFParam appends ";key=n" (n an RFC 8941 Integer, clamped).
func appendSFParam(b []byte, key string, n int64) []byte {
	b = append(b, ';')
	b = append(b, key...)
	b = append(b, '=')
	return strconv.AppendInt(b, min(max(n, -maxSFInteger), maxSFInteger), 10)
}

// appendPolicy appends m's RateLimit-Policy member: "name";q=…[;w=…].
func appendPolicy(b []byte, m member) ([]byte, bool) {
	b, ok := appendSFString(b, m.name)
	if !ok {
		return b, false
	}
	b = appendSFParam(b, "q", m.quota)
	if m.window >= 0 {
		b = appendSFParam(b, "w", m.window)
	}
	return b, true
}

// appendRateLimit appends m's RateLimit member: "name";r=…[;t=…].
func appendRateLimit(b []byte, m member) ([]byte, bool) {
	b, ok := appendSFString(b, m.name)
	if !ok {
		return b, false
	}
	b = appendSFParam(b, "r", m.remaining)
	if m.reset >= 0 {
		b = appendSFParam(b, "t", m.reset)
	}
	return b, true
}

// fieldValues are the values of RateLimit-Policy and RateLimit for ms, in
// their order; a member whose name a String cannot hold is left out of
// both. Both are "" when none is left.
func fieldValues(ms []member) (policy, rateLimit string) {
	var p, r []byte
	for _, m := range ms {
		sep := len(p)
		if sep > 0 {
			p = append(p, ", "...)
		}
		var ok bool
		if p, ok = appendPolicy(p, m); !ok {
			p = p[:sep]
			continue
		}
		if len(r) > 0 {
			r = append(r, ", "...)
		}
		r, _ = appendRateLimit(r, m)
	}
	return string(p), string(r)
}

// oneMember is fieldValues of one member, both values in one allocation.
func oneMember(m member) (policy, rateLimit string, ok bool) {
	var buf [160]byte
	b, ok := appendPolicy(buf[:0], m)
	if !ok {
		return "", "", false
	}
	n := len(b)
	b, _ = appendRateLimit(b, m)
	s := string(b)
	return s[:n], s[n:], true
}

// retryAfterValue is Retry-After for the members of a 429: the longest wait
// of the exhausted ones in whole seconds, rounded up; "" when one of them no
// wait can end (retrying cannot succeed: no header), or none is exhausted.
func retryAfterValue(ms []member) string {
	var longest time.Duration
	exhausted := false
	for _, m := range ms {
		if !m.exceeded {
			continue
		}
		if m.never {
			return ""
		}
		longest, exhausted = max(longest, m.wait), true
	}
	if !exhausted {
		return ""
	}
	return strconv.FormatInt(ceilSeconds(longest), 10)
}

// violated lists the names of the exhausted members, in their order.
func violated(ms []member) []string {
	out := []string{}
	for _, m := range ms {
		if m.exceeded {
			out = append(out, m.name)
		}
	}
	return out
}

// describeViolations is the detail of a 429: "rpm exhausted; retry after 13 s".
func describeViolations(ms []member, retryAfter string) string {
	names := strings.Join(violated(ms), ", ")
	switch {
	case names == "":
		return "rate limit exceeded"
	case retryAfter == "":
		return names + " exhausted; the request is larger than the limit can ever hold"
	}
	return names + " exhausted; retry after " + retryAfter + " s"
}

// problemLimits lists ms for the problem body.
func problemLimits(ms []member) []ProblemLimit {
	out := make([]ProblemLimit, 0, len(ms))
	for _, m := range ms {
		p := ProblemLimit{Name: m.name, Limit: m.quota, Remaining: m.remaining, Requested: m.requested, Exceeded: m.exceeded}
		if m.window >= 0 {
			w := m.window
			p.WindowSeconds = &w
		}
		switch {
		case m.never:
			p.RetryAfterSeconds = json.RawMessage("null")
		case m.exceeded:
			p.RetryAfterSeconds = strconv.AppendInt(nil, ceilSeconds(m.wait), 10)
		}
		out = append(out, p)
	}
	return out
}
