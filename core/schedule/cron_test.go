package schedule

import (
	"errors"
	"testing"
)

// The stored text keeps each field as written but for names and Sunday
// (upstream's encoding), and equal sets compare Equal however written.
func TestParseCronStoredText(t *testing.T) {
	for _, tc := range []struct{ in, want, same string }{
		{"0 0 1 * *", "0 0 1 * *", "0 0 1 1-12 *"},
		{"*/15 9-17 * * MON-FRI", "*/15 9-17 * * 1-5", "0,15,30,45 9-17 * * 1-5"},
		{"0 0 * * 0", "0 0 * * 7", "0 0 * * SUN"},
		{"0 0 * * sun", "0 0 * * 7", "0 0 * * 7"},
		{"0 0 * * SAT,SUN", "0 0 * * 6,7", "0 0 * * 6,0"},
		{"0 0 * * SUN-THU", "0 0 * * 0-4", "0 0 * * 0,1,2,3,4"},
		{"0 0 * * MON-FRI,SUN", "0 0 * * 1-5,7", "0 0 * * 0-5"},
		{"0 0 * * SUN/2", "0 0 * * 0/2", "0 0 * * 0,2,4,6"},
		{"0 0 1 jan,JUL *", "0 0 1 1,7 *", "0 0 1 1,7 *"},
		{"0 0 1 jan-mar *", "0 0 1 1-3 *", "0 0 1 1,2,3 *"},
		{"5/20 * * * *", "5/20 * * * *", "5,25,45 * * * *"},
		{"  0\t0  1 * *  ", "0 0 1 * *", "0 0 1 * *"},
		{"0 0 29 2 *", "0 0 29 2 *", "0 0 29 FEB *"},
	} {
		c, err := ParseCron(tc.in)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", tc.in, err)
			continue
		}
		if got := c.String(); got != tc.want {
			t.Errorf("ParseCron(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		again, err := ParseCron(c.String())
		if err != nil || again != c {
			t.Errorf("stored %q does not read back: %+v, %v", c.String(), again, err)
		}
		if !c.Equal(MustParseCron(tc.same)) {
			t.Errorf("%q is not Equal to %q", tc.in, tc.same)
		}
	}
	// Day fields: a leading * decides how days combine, so it is part of
	// what a cron means.
	if MustParseCron("0 0 * * 1").Equal(MustParseCron("0 0 1-31 * 1")) {
		t.Error("every Monday is Equal to every day")
	}
	if MustParseCron("0 0 * * *").Equal(MustParseCron("0 1 * * *")) {
		t.Error("different hours are Equal")
	}
}

func TestParseCronRefused(t *testing.T) {
	for _, tc := range []struct{ in, field string }{
		{"0 0 L * *", "day of month"},
		{"0 0 * * 1#2", "day of week"},
		{"0 0 15W * *", "day of month"},
		{"0 0 ? * 1", "day of month"},
		{"@monthly", ""},
		{"0 0 1 * * *", ""},
		{"0 0 1 *", ""},
		{"", ""},
		{"60 * * * *", "minute"},
		{"* 24 * * *", "hour"},
		{"* * 0 * *", "day of month"},
		{"* * 32 * *", "day of month"},
		{"* * * 13 *", "month"},
		{"* * * 0 *", "month"},
		{"* * * * 8", "day of week"},
		{"5-1 * * * *", "minute"},
		{"FRI-MON * * * *", "minute"},
		{"* * * * FRI-MON", "day of week"},
		{"*/0 * * * *", "minute"},
		{"*/x * * * *", "minute"},
		{"a * * * *", "minute"},
		{"1,,2 * * * *", "minute"},
		{"1- * * * *", "minute"},
		{"* * * MON *", "month"},
		{"* * * * JAN", "day of week"},
		{"-1 * * * *", "minute"},
	} {
		_, err := ParseCron(tc.in)
		var ce *CronError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCron(%q) = %v, want a *CronError", tc.in, err)
			continue
		}
		if ce.Field != tc.field || ce.Expr != tc.in {
			t.Errorf("ParseCron(%q): field %q expr %q, want field %q (%v)", tc.in, ce.Field, ce.Expr, tc.field, err)
		}
	}
}

func TestCronNever(t *testing.T) {
	for _, tc := range []struct {
		in    string
		never bool
	}{
		{"0 0 30 2 *", true},
		{"0 0 31 2,4,6,9,11 *", true},
		{"0 0 31 2,3 *", false},
		{"0 0 29 2 *", false},
		{"0 0 30 2 1", false}, // either day field: every Monday in February
		{"0 0 * 2 1", false},
		{"* * * * *", false},
	} {
		if got := MustParseCron(tc.in).Never(); got != tc.never {
			t.Errorf("%q.Never() = %v, want %v", tc.in, got, tc.never)
		}
	}
}

func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 0 1 * *", "*/15 9-17 * * MON-FRI", "0 0 * * 7", "5/20 1-3,7 L * *", "0 0 29 2 *", "@daily", "1-2/3,4 * * JAN-DEC/2 0-7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCron(s)
		if err != nil {
			var ce *CronError
			if !errors.As(err, &ce) {
				t.Fatalf("ParseCron(%q): untyped error %v", s, err)
			}
			return
		}
		stored := c.String()
		again, err := ParseCron(stored)
		if err != nil || again != c || again.String() != stored || !again.Equal(c) {
			t.Fatalf("ParseCron(%q) stored %q reads back as %+v, %v", s, stored, again, err)
		}
	})
}
