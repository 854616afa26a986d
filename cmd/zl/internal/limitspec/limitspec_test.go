package limitspec

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

func resetsOf(crons ...string) schedule.Resets {
	var r schedule.Resets
	for _, c := range crons {
		r = append(r, schedule.MustParseCron(c))
	}
	return r
}

// TestParseWorkedExamples: what each form means, as the manifest stores
// it.
func TestParseWorkedExamples(t *testing.T) {
	for _, c := range []struct {
		specs []string
		zone  string
		want  []limit.Limit
	}{
		{[]string{"rpm:100/min"}, "", []limit.Limit{limit.PerMinute("rpm", 100)}},
		// A burst above the rate: capacity 150000, refilled 100000 a minute.
		{[]string{"tpm:100000/min:150000"}, "", []limit.Limit{limit.PerMinute("tpm", 100000).WithBurst(150000)}},
		{[]string{"rps:10/s"}, "", []limit.Limit{limit.PerSecond("rps", 10)}},
		{[]string{"rph:5/hour", "rpd:1_000/d"}, "", []limit.Limit{limit.PerDay("rpd", 1000), limit.PerHour("rph", 5)}},
		// A count before the unit: 10 tokens every 30 seconds.
		{[]string{"burst:10/30s"}, "", []limit.Limit{limit.Custom("burst", 10, 10, 30*time.Second)}},
		{[]string{"x:3/2 minutes"}, "", []limit.Limit{limit.Custom("x", 3, 3, 2*time.Minute)}},
		{[]string{"rpm:100/min:soft"}, "", []limit.Limit{limit.PerMinute("rpm", 100).AsSoft()}},
		{[]string{"tpm:100/min:200:SOFT"}, "", []limit.Limit{limit.PerMinute("tpm", 100).WithBurst(200).AsSoft()}},
		{[]string{" rpm : 7 / MIN "}, "", []limit.Limit{limit.PerMinute("rpm", 7)}},
		// Calendar quotas: an allowance back at every reset.
		{[]string{"tokens:100000@daily"}, "", []limit.Limit{limit.Quota("tokens", 100000, resetsOf("0 0 * * *"), "")}},
		{[]string{"tokens:100000@monthly"}, "America/New_York", []limit.Limit{limit.Quota("tokens", 100000, resetsOf("0 0 1 * *"), "America/New_York")}},
		{[]string{"t:5@0 0 1 * *|0 0 15 * *:soft"}, "", []limit.Limit{limit.Quota("t", 5, resetsOf("0 0 1 * *", "0 0 15 * *"), "").AsSoft()}},
		// Session quotas: an allowance for a window opened on first use.
		{[]string{"tokens:10_000@after 5h"}, "", []limit.Limit{limit.Session("tokens", 10_000, 5*time.Hour)}},
		{[]string{"s:5@AFTER 90 s:soft", "rpm:1/s"}, "", []limit.Limit{limit.PerSecond("rpm", 1), limit.Session("s", 5, 90*time.Second).AsSoft()}},
		{[]string{"s:5@ after 2 days"}, "", []limit.Limit{limit.Session("s", 5, 48*time.Hour)}},
		{[]string{"w:1@weekly", "h:2@HOURLY", "y:3@yearly", "rpm:9/m"}, "", []limit.Limit{
			limit.Quota("h", 2, resetsOf("0 * * * *"), ""), limit.PerMinute("rpm", 9),
			limit.Quota("w", 1, resetsOf("0 0 * * 1"), ""), limit.Quota("y", 3, resetsOf("0 0 1 1 *"), ""),
		}},
	} {
		got, err := Parse(c.specs, c.zone)
		if err != nil {
			t.Errorf("%q: %v", c.specs, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.specs, got, c.want)
		}
	}
}

// TestParseRefusals: every malformed limit is a *SyntaxError that names
// the spec, says what is wrong and shows the accepted syntax.
func TestParseRefusals(t *testing.T) {
	for _, c := range []struct {
		specs []string
		zone  string
		want  string
	}{
		{[]string{""}, "", "is empty"},
		{[]string{"rpm"}, "", "has no ':' after the limit's name"},
		{[]string{":100/min"}, "", "has no name before ':'"},
		{[]string{"rpm:100"}, "", "has no '/' between the rate and the period"},
		{[]string{"rpm:/min"}, "", "the rate is missing"},
		{[]string{"rpm:ten/min"}, "", `the rate "ten" is not a whole number`},
		{[]string{"rpm:-5/min"}, "", `the rate "-5" is not a whole number`},
		{[]string{"rpm:0/min"}, "", `the rate "0" must be at least 1`},
		{[]string{"rpm:1.5/min"}, "", `"1.5" is not a whole number`},
		{[]string{"rpm:99999999999999999999/min"}, "", "is too large"},
		{[]string{"rpm:100/fortnight"}, "", `the period "fortnight" is not sec, min, hour or day`},
		{[]string{"rpm:100/"}, "", "the period is missing"},
		{[]string{"rpm:100/0s"}, "", "needs a count of at least 1"},
		{[]string{"rpm:100/min:lots"}, "", `the burst "lots" is not a whole number`},
		{[]string{"rpm:100/min:5:6"}, "", "has 3 parts after the name"},
		{[]string{"rpm:100/min", "rpm:5/s"}, "", `names limit rpm again (first in "rpm:100/min")`},
		{[]string{"t:100@"}, "", "has no reset after '@'"},
		{[]string{"t:@daily"}, "", "the amount is missing"},
		{[]string{"t:100@fortnightly"}, "", `the reset[0].cron "fortnightly"`},
		{[]string{"t:100@0 0 31 2 *"}, "", "matches no minute of any year"},
		{[]string{"t:100@daily"}, "Mars/Olympus", `"Mars/Olympus" is not a time zone`},
		{[]string{"rpm:100/min"}, "UTC", "a time zone (UTC) is for quotas' resets, and no limit here resets"},
		{[]string{"bad#name:1/s"}, "", "rpm"}, // the manifest's name rule, whatever its words
		{[]string{"wcu:1/s"}, "", "reserved"},
		{[]string{"s:5@after"}, "", "the window is missing"},
		{[]string{"s:5@after fortnight"}, "", `the window "fortnight" is not sec, min, hour or day`},
		{[]string{"s:5@after 0s"}, "", `the window "0s" needs a count of at least 1`},
		{[]string{"s:0@after 5h"}, "", `the amount "0" must be at least 1`},
		{[]string{"s:5@afternoon"}, "", `the reset[0].cron "afternoon"`},
		// Past the most tokens a bucket counts (in millitokens).
		{[]string{"tpm:100/min:9223372036854775807"}, "", "the burst (capacity)"},
	} {
		_, err := Parse(c.specs, c.zone)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a *SyntaxError", c.specs, err)
			continue
		}
		msg := err.Error()
		if c.want != "rpm" && !strings.Contains(msg, c.want) {
			t.Errorf("%q: %q, want it to say %q", c.specs, msg, c.want)
		}
		if !strings.Contains(msg, "a limit is NAME:RATE/PERIOD[:BURST][:soft]") || !strings.Contains(msg, "e.g. rpm:100/min") {
			t.Errorf("%q: %q does not show the syntax", c.specs, msg)
		}
	}
}

// format writes l in the syntax, when the syntax can say it (no parameter
// schedule, a period of whole units): the inverse of Parse.
func format(l limit.Limit) (string, bool) {
	soft := ""
	if l.Soft {
		soft = ":soft"
	}
	if l.Schedule != "" {
		return "", false
	}
	if l.IsSession() {
		return fmt.Sprintf("%s:%d@after %ds%s", l.Name, l.Capacity, l.ResetAfterSeconds(), soft), true
	}
	if l.IsQuota() {
		r, err := schedule.DecodeResets(l.ResetSchedule)
		if err != nil {
			return "", false
		}
		var crons []string
		for _, c := range r {
			crons = append(crons, c.String())
		}
		return fmt.Sprintf("%s:%d@%s%s", l.Name, l.Capacity, strings.Join(crons, "|"), soft), true
	}
	s := fmt.Sprintf("%s:%d/%ds", l.Name, l.RefillAmount, int64(l.RefillPeriod/time.Second))
	if l.Capacity != l.RefillAmount {
		s += ":" + strconv.FormatInt(l.Capacity, 10)
	}
	return s + soft, true
}

// FuzzParse: Parse never panics; what it accepts is valid, sorted, and
// reads back the same from its own spelling.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"rpm:100/min", "tpm:100000/min:150000", "rps:10/s:soft", "tokens:100000@daily",
		"t:5@0 0 1 * *|0 0 15 * *", "x:3/2 minutes", "rpm:1_000/d", "a:1/1s:1:soft", "q:1@monthly:soft", "::", "@", "a:1@",
		"s:10@after 5h", "s:1@after 1s:soft", "s:1@after"} {
		f.Add(s, "")
	}
	f.Add("tokens:100@daily", "America/New_York")
	f.Fuzz(func(t *testing.T, spec, zone string) {
		ls, err := Parse(strings.Split(spec, ","), zone)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: %T %v, want a *SyntaxError", spec, err, err)
			}
			return
		}
		if err := limit.ValidateSet(ls); err != nil {
			t.Fatalf("%q: accepted an invalid set: %v", spec, err)
		}
		var again []string
		for i, l := range ls {
			if i > 0 && ls[i-1].Name >= l.Name {
				t.Fatalf("%q: not sorted: %+v", spec, ls)
			}
			s, ok := format(l)
			if !ok {
				t.Fatalf("%q: %+v has no spelling", spec, l)
			}
			again = append(again, s)
		}
		back, err := Parse(again, zone)
		if err != nil || !reflect.DeepEqual(back, ls) {
			t.Fatalf("%q read as %+v, written %q, read back %+v (%v)", spec, ls, again, back, err)
		}
	})
}
