package limiter

import (
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// TestBucketTTL pins the bucket TTL: now + the longest recovery time
// cp / ra × rp (whole seconds, rounded up only when not whole) × the
// multiplier, for limits from resource or system config or an override;
// none for entity-level limits.
func TestBucketTTL(t *testing.T) {
	const now = int64(1_795_953_600_500) // ms; now // 1000 = 1 795 953 600
	l := &Limiter{ttlMultiplier: 7}
	monthly := limit.Quota("tpm", 100, schedule.Resets{schedule.MustParseCron("0 0 1 * *")}, "")
	daily := limit.Quota("tpd", 100, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "Europe/Paris")
	for _, c := range []struct {
		name     string
		limits   []limit.Limit
		source   config.Level
		override bool
		want     int64 // seconds after now // 1000; -1: no ttl
	}{
		{"100 a minute: 60 s exactly", []limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelResource, false, 420},
		{"system level", []limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelSystem, false, 420},
		{"override", []limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelEntity, true, 420},
		{"capacity twice the refill: 120 s", []limit.Limit{limit.Custom("rpm", 200, 100, time.Minute)}, config.LevelResource, false, 840},
		{"100 per 7 a minute: 857.14 s rounds up to 858 (upstream: 6,000)", []limit.Limit{limit.Custom("rpm", 100, 7, time.Minute)}, config.LevelResource, false, 858 * 7},
		{"5 per 3 s: 1.67 s rounds up to 2 (upstream: trunc(11.67) = 11)", []limit.Limit{limit.Custom("rps", 5, 3, time.Second)}, config.LevelResource, false, 14},
		{"1 per 3 s: 3 s", []limit.Limit{limit.Custom("rps", 1, 1, 3*time.Second)}, config.LevelResource, false, 21},
		{"10 a second: 1 s", []limit.Limit{limit.Custom("rps", 10, 10, time.Second)}, config.LevelResource, false, 7},
		{"the longest wins", []limit.Limit{limit.PerMinute("rpm", 100), limit.PerHour("tph", 10)}, config.LevelResource, false, 3600 * 7},
		{"a monthly quota: its period, November's 30 days", []limit.Limit{monthly}, config.LevelResource, false, 30 * 86400 * 7},
		{"a daily quota beside 10 an hour: the day", []limit.Limit{daily, limit.PerHour("tph", 10)}, config.LevelResource, false, 86400 * 7},
		{"entity limits: none", []limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelEntity, false, -1},
		{"entity default limits: none", []limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelEntityDefault, false, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := l.bucketTTL(c.limits, c.source, c.override, now)
			want := int64(0)
			if c.want >= 0 {
				want = now/1000 + c.want
			}
			if got != want {
				t.Fatalf("ttl = %d, want %d (now_s + %d)", got, want, c.want)
			}
		})
	}
	off := &Limiter{ttlMultiplier: 0}
	if got := off.bucketTTL([]limit.Limit{limit.PerMinute("rpm", 100)}, config.LevelResource, false, now); got != 0 {
		t.Fatalf("multiplier 0: ttl %d, want none", got)
	}
}
