package limit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func TestPerMinuteParams(t *testing.T) {
	got := limit.PerMinute("rpm", 60).Params()
	want := bucket.Params{Capacity: 60_000, RefillAmount: 60_000, RefillPeriod: 60_000}
	if got != want {
		t.Fatalf("PerMinute(rpm, 60).Params() = %+v, want %+v", got, want)
	}
}

// TestConstructors are worked examples: what each constructor stores, in
// whole tokens and seconds, and the millitoken parameters it becomes.
func TestConstructors(t *testing.T) {
	tests := []struct {
		name       string
		l          limit.Limit
		cp, ra, rp int64 // wire: tokens, tokens, seconds
		params     bucket.Params
		soft       bool
		str        string
	}{
		{"per second", limit.PerSecond("rps", 10), 10, 10, 1,
			bucket.Params{Capacity: 10_000, RefillAmount: 10_000, RefillPeriod: 1000}, false, "rps: 10/1s"},
		{"per minute", limit.PerMinute("rpm", 60), 60, 60, 60,
			bucket.Params{Capacity: 60_000, RefillAmount: 60_000, RefillPeriod: 60_000}, false, "rpm: 60/60s"},
		{"per hour", limit.PerHour("rph", 1000), 1000, 1000, 3600,
			bucket.Params{Capacity: 1_000_000, RefillAmount: 1_000_000, RefillPeriod: 3_600_000}, false, "rph: 1000/3600s"},
		{"per day", limit.PerDay("rpd", 5), 5, 5, 86_400,
			bucket.Params{Capacity: 5000, RefillAmount: 5000, RefillPeriod: 86_400_000}, false, "rpd: 5/86400s"},
		{"burst above refill", limit.PerMinute("tpm", 10_000).WithBurst(15_000), 15_000, 10_000, 60,
			bucket.Params{Capacity: 15_000_000, RefillAmount: 10_000_000, RefillPeriod: 60_000}, false, "tpm: 10000/60s burst 15000"},
		{"burst below refill", limit.PerSecond("x", 100).WithBurst(1), 1, 100, 1,
			bucket.Params{Capacity: 1000, RefillAmount: 100_000, RefillPeriod: 1000}, false, "x: 100/1s burst 1"},
		{"custom", limit.Custom("r.3m", 100, 5, 3*time.Minute), 100, 5, 180,
			bucket.Params{Capacity: 100_000, RefillAmount: 5000, RefillPeriod: 180_000}, false, "r.3m: 5/180s burst 100"},
		{"soft", limit.PerSecond("rps", 10).AsSoft(), 10, 10, 1,
			bucket.Params{Capacity: 10_000, RefillAmount: 10_000, RefillPeriod: 1000}, true, "rps: 10/1s soft"},
		{"soft then hard", limit.PerSecond("rps", 10).AsSoft().AsHard(), 10, 10, 1,
			bucket.Params{Capacity: 10_000, RefillAmount: 10_000, RefillPeriod: 1000}, false, "rps: 10/1s"},
		{"largest", limit.Custom("big", limit.MaxTokens, limit.MaxTokens, time.Second), limit.MaxTokens, limit.MaxTokens, 1,
			bucket.Params{Capacity: limit.MaxTokens * 1000, RefillAmount: limit.MaxTokens * 1000, RefillPeriod: 1000}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.l
			if err := l.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if l.Capacity != tc.cp || l.RefillAmount != tc.ra || l.RefillPeriodSeconds() != tc.rp || l.Soft != tc.soft {
				t.Errorf("got cp=%d ra=%d rp=%ds soft=%v, want %d %d %ds %v",
					l.Capacity, l.RefillAmount, l.RefillPeriodSeconds(), l.Soft, tc.cp, tc.ra, tc.rp, tc.soft)
			}
			if got := l.Params(); got != tc.params {
				t.Errorf("Params() = %+v, want %+v", got, tc.params)
			}
			if tc.str != "" && l.String() != tc.str {
				t.Errorf("String() = %q, want %q", l.String(), tc.str)
			}
		})
	}
}

func TestWithBurstCopies(t *testing.T) {
	base := limit.PerMinute("rpm", 60)
	burst := base.WithBurst(100)
	soft := base.AsSoft()
	if base.Capacity != 60 || base.Soft {
		t.Fatalf("base changed: %+v", base)
	}
	if burst.Capacity != 100 || soft.Soft != true {
		t.Fatalf("copies wrong: %+v %+v", burst, soft)
	}
	if base == burst || base == soft {
		t.Fatal("copies compare equal to the base")
	}
	if base != limit.PerMinute("rpm", 60) {
		t.Fatal("equal limits do not compare equal")
	}
}

func TestValidate(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	tests := []struct {
		name   string
		l      limit.Limit
		field  string // "" = valid
		reason string // substring of the reason
	}{
		{"valid", limit.PerMinute("rpm", 1), "", ""},
		{"name with _ - .", limit.PerMinute("a_b-c.d", 1), "", ""},
		{"zero capacity", limit.PerMinute("rpm", 60).WithBurst(0), limit.FieldCapacity, "> 0"},
		{"negative capacity", limit.PerMinute("rpm", 60).WithBurst(-1), limit.FieldCapacity, "> 0"},
		{"capacity overflows millitokens", limit.PerMinute("rpm", 60).WithBurst(limit.MaxTokens + 1), limit.FieldCapacity, "int64"},
		{"quota refill 0", limit.Custom("q", 100, 0, time.Hour), limit.FieldRefillAmount, "reset schedule"},
		{"quota", limit.Quota("q", 100, daily, "America/New_York"), "", ""},
		{"quota with a parameter schedule", limit.Quota("q", 100, daily, "").WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500}}, ""), "", ""},
		{"quota made to drip by its schedule", limit.Quota("q", 100, daily, "").WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), RefillAmount: 5}}, ""), limit.FieldSchedule, "never drips"},
		{"drip and reset", limit.PerDay("q", 100).WithResetSchedule(daily, ""), limit.FieldResetSchedule, "never both"},
		{"quota without its reset", limit.Quota("q", 100, daily, "").WithResetSchedule(nil, ""), limit.FieldRefillAmount, "reset schedule"},
		{"never-matching reset", limit.Quota("q", 100, schedule.Resets{schedule.MustParseCron("0 0 30 2 *")}, ""), limit.FieldResetSchedule, "matches no minute"},
		{"quota in an unknown zone", limit.Quota("q", 100, daily, "Mars/Olympus_Mons"), limit.FieldZone, "zone"},
		{"wcu quota", limit.Quota("wcu", 100, daily, ""), schema.FieldLimitName, "reserved"},
		{"session", limit.Session("s", 10_000, 5*time.Hour), "", ""},
		{"session of one second", limit.Session("s", 1, time.Second), "", ""},
		{"session soft", limit.Session("s", 10, time.Hour).AsSoft(), "", ""},
		{"session with a scaling schedule", limit.Session("s", 10, time.Hour).WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), ScalePerMille: 500}}, "UTC"), "", ""},
		{"session made to drip by its schedule", limit.Session("s", 10, time.Hour).WithSchedule(schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), RefillAmount: 5}}, ""), limit.FieldSchedule, "never drips"},
		{"session of zero length is no reset", limit.Session("s", 10, 0), limit.FieldRefillAmount, "session window"},
		{"negative session", limit.Session("s", 10, -time.Hour), limit.FieldResetAfter, "> 0"},
		{"sub-second session", limit.Session("s", 10, 1500*time.Millisecond), limit.FieldResetAfter, "whole number of seconds"},
		{"session of one millisecond", limit.Session("s", 10, time.Millisecond), limit.FieldResetAfter, "whole number of seconds"},
		{"session and reset schedule", limit.Session("s", 10, time.Hour).WithResetSchedule(daily, ""), limit.FieldResetAfter, "never both"},
		{"drip and session", limit.PerHour("s", 10).WithResetAfter(time.Hour), limit.FieldResetAfter, "never both"},
		{"session in a zone without a schedule", limit.Limit{Name: "s", Capacity: 1, RefillPeriod: time.Second, ResetAfter: time.Hour, Zone: "UTC"}, limit.FieldZone, "without a schedule"},
		{"wcu session", limit.Session("wcu", 10, time.Hour), schema.FieldLimitName, "reserved"},
		{"negative refill", limit.Custom("q", 100, -5, time.Hour), limit.FieldRefillAmount, "> 0"},
		{"refill overflows millitokens", limit.Custom("q", 100, limit.MaxTokens+1, time.Hour), limit.FieldRefillAmount, "int64"},
		{"zero period", limit.Custom("r", 1, 1, 0), limit.FieldRefillPeriod, "> 0"},
		{"negative period", limit.Custom("r", 1, 1, -time.Second), limit.FieldRefillPeriod, "> 0"},
		{"sub-second period", limit.Custom("r", 1, 1, 1500*time.Millisecond), limit.FieldRefillPeriod, "whole number of seconds"},
		{"millisecond period", limit.Custom("r", 1, 1, time.Millisecond), limit.FieldRefillPeriod, "whole number of seconds"},
		{"soft wcu", limit.PerSecond("wcu", 1000).AsSoft(), limit.FieldSoft, "wcu"},
		{"hard wcu", limit.PerSecond("wcu", 1000), schema.FieldLimitName, "reserved"},
		{"reserved ttl", limit.PerSecond("ttl", 1), schema.FieldLimitName, "reserved"},
		{"reserved prefix GSI", limit.PerSecond("GSI1PK", 1), schema.FieldLimitName, "reserved"},
		{"empty name", limit.PerSecond("", 1), schema.FieldLimitName, "empty"},
		{"hash in name", limit.PerSecond("a#b", 1), schema.FieldLimitName, "#"},
		{"digit first", limit.PerSecond("1rpm", 1), schema.FieldLimitName, "letter"},
		{"too long", limit.PerSecond(strings.Repeat("a", 65), 1), schema.FieldLimitName, "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *schema.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v (%T), want *schema.ValidationError", err, err)
			}
			if ve.Field != tc.field || !strings.Contains(ve.Reason, tc.reason) {
				t.Fatalf("Validate() = field %q reason %q, want field %q reason containing %q", ve.Field, ve.Reason, tc.field, tc.reason)
			}
		})
	}
}

func TestValidateSet(t *testing.T) {
	ok := []limit.Limit{limit.PerMinute("rpm", 60), limit.PerMinute("tpm", 1000)}
	if err := limit.ValidateSet(ok); err != nil {
		t.Fatal(err)
	}
	if err := limit.ValidateSet(nil); err != nil {
		t.Fatal(err)
	}
	dup := []limit.Limit{limit.PerMinute("rpm", 60), limit.PerSecond("rpm", 1)}
	var ne *schema.InvalidNameError
	if err := limit.ValidateSet(dup); !errors.As(err, &ne) || ne.Field != schema.FieldLimitName {
		t.Fatalf("duplicate: %v", err)
	}
	bad := []limit.Limit{limit.PerMinute("rpm", 60), limit.PerMinute("tpm", 0)}
	if err := limit.ValidateSet(bad); !schema.IsValidationError(err) {
		t.Fatalf("bad member: %v", err)
	}
}

func TestSortAndFind(t *testing.T) {
	ls := []limit.Limit{limit.PerMinute("tpm", 1), limit.PerMinute("a.b", 2), limit.PerMinute("rpm", 3)}
	limit.SortByName(ls)
	if ls[0].Name != "a.b" || ls[1].Name != "rpm" || ls[2].Name != "tpm" {
		t.Fatalf("sorted: %v", ls)
	}
	if l, ok := limit.Find(ls, "rpm"); !ok || l.Capacity != 3 {
		t.Fatalf("Find rpm = %v %v", l, ok)
	}
	if _, ok := limit.Find(ls, "nope"); ok {
		t.Fatal("Find nope found something")
	}
}

func ExamplePerMinute() {
	l := limit.PerMinute("tpm", 10_000).WithBurst(15_000)
	if err := l.Validate(); err != nil {
		panic(err)
	}
	p := l.Params()
	fmt.Println(l, "=", p.Capacity, p.RefillAmount, p.RefillPeriod)
	// Output: tpm: 10000/60s burst 15000 = 15000000 10000000 60000
}

func TestQuota(t *testing.T) {
	q := limit.Quota("tpm-month", 100_000, schedule.Resets{schedule.MustParseCron("0 0 1 * *")}, "Europe/Paris")
	if !q.IsQuota() || q.RefillAmount != 0 || q.RefillPeriod != limit.QuotaRefillPeriod || q.ResetSchedule != "m0h0D1" {
		t.Fatalf("Quota = %+v", q)
	}
	if p := q.Params(); !p.IsQuota() || p.Capacity != 100_000_000 {
		t.Fatalf("Params = %+v", p)
	}
	if got, want := q.String(), "tpm-month: quota 100000 resets m0h0D1 in Europe/Paris"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	r, loc, err := q.Resets()
	if err != nil || len(r) != 1 || r[0].String() != "0 0 1 * *" || loc.String() != "Europe/Paris" {
		t.Fatalf("Resets = %v %v %v", r, loc, err)
	}
	if s, r, loc, err := q.Schedules(); err != nil || len(s) != 0 || len(r) != 1 || loc.String() != "Europe/Paris" {
		t.Fatalf("Schedules = %v %v %v %v", s, r, loc, err)
	}
	if limit.PerMinute("rpm", 1).IsQuota() {
		t.Error("a dripping limit is a quota")
	}
	if z := limit.Quota("q", 1, nil, "UTC"); z.Zone != "" || z.Validate() == nil {
		t.Errorf("a quota without resets keeps its zone or validates: %+v", z)
	}
}

// A quota's recovery is its current reset period on the wall clock: the
// day the clock falls back in New York lasts 25 hours, February 2028 29
// days; a dripping limit's is its slowest time to fill, schedules included.
func TestRecoverySeconds(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	daily := limit.Quota("tpd", 100, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "America/New_York")
	if got := daily.RecoverySeconds(time.Date(2026, 11, 1, 12, 0, 0, 0, ny)); got != 25*3600 {
		t.Errorf("fall-back day: %d s, want %d", got, 25*3600)
	}
	monthly := limit.Quota("tpm", 100, schedule.Resets{schedule.MustParseCron("0 0 1 * *")}, "")
	if got := monthly.RecoverySeconds(time.Date(2028, 2, 29, 23, 0, 0, 0, time.UTC)); got != 29*86400 {
		t.Errorf("leap February: %d s, want %d", got, 29*86400)
	}
	slow := schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), ScalePerMille: 250}}
	rpm := limit.Custom("rpm", 100, 100, time.Minute).WithSchedule(slow, "")
	if got := rpm.RecoverySeconds(time.Time{}); got != 60 {
		t.Errorf("scaled drip: %d s, want 60 (a scale keeps the time to fill)", got)
	}
	abs := schedule.Schedule{{Cron: schedule.MustParseCron("* 0-6 * * *"), RefillAmount: 10}}
	if got := limit.PerMinute("rpm", 100).WithSchedule(abs, "").RecoverySeconds(time.Time{}); got != 600 {
		t.Errorf("a slower absolute refill: %d s, want 600", got)
	}
}

// TestSession is the worked example of a session quota: 10,000 tokens for
// five hours from first use, stored as a zero refill, a one-second inert
// period and an 18,000-second window.
func TestSession(t *testing.T) {
	q := limit.Session("tokens-5h", 10_000, 5*time.Hour)
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if !q.IsQuota() || !q.IsSession() || q.RefillAmount != 0 || q.RefillPeriod != limit.QuotaRefillPeriod ||
		q.ResetSchedule != "" || q.ResetAfterSeconds() != 18_000 {
		t.Fatalf("Session = %+v", q)
	}
	if p := q.Params(); !p.IsQuota() || p.Capacity != 10_000_000 || p.RefillPeriod != 1000 {
		t.Fatalf("Params = %+v", p)
	}
	if got, want := q.String(), "tokens-5h: quota 10000 window 5h0m0s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := q.AsSoft().String(), "tokens-5h: quota 10000 window 5h0m0s soft"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	// A session quota has no calendar: no resets, UTC.
	if r, loc, err := q.Resets(); err != nil || r != nil || loc != time.UTC {
		t.Fatalf("Resets = %v %v %v", r, loc, err)
	}
	// Its bucket TTL horizon is the window length exactly, whenever it is
	// asked (docs/design.md §2, bucket TTL).
	for _, now := range []time.Time{{}, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)} {
		if got := q.RecoverySeconds(now); got != 18_000 {
			t.Errorf("RecoverySeconds(%v) = %d, want 18000", now, got)
		}
	}
	if limit.PerMinute("rpm", 1).IsSession() || limit.Quota("q", 1, schedule.Resets{schedule.MustParseCron("0 0 * * *")}, "").IsSession() {
		t.Error("a dripping limit or a calendar quota is a session quota")
	}
	if q.WithResetAfter(0).IsQuota() || q.WithResetAfter(0).Validate() == nil {
		t.Error("a session quota without its window is still a quota, or validates")
	}
}
