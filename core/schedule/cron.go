package schedule

import (
	"strconv"
	"strings"
)

// Cron is a standard five-field cron expression (minute, hour, day of
// month, month, day of week) read as a set pattern: the set of wall-clock
// minutes it matches in a time zone (docs/design.md §14). The zero value
// matches nothing; build one with [ParseCron].
//
// A day matches as in Vixie and Debian cron: when both the day of month
// and the day of week are restricted (neither starts with `*`), a day
// matching either matches; otherwise both must.
type Cron struct {
	minute uint64 // bit i: minute i, 0–59
	hour   uint32 // bit i: hour i, 0–23
	dom    uint32 // bit i: day of month i, 1–31
	month  uint16 // bit i: month i, 1–12
	dow    uint8  // bit i: weekday i, 0 (Sunday) – 6
	// domStar and dowStar record a day field that starts with `*` (`*`,
	// `*/2`), which decides how days combine.
	domStar, dowStar bool
	// text is each field as stored: as written, but month and weekday
	// names as numbers and a lone Sunday as 7 (docs/design.md §14).
	text [5]string
}

// field is one of the five positions of a cron expression.
type field struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i's name; nil: no names
}

var (
	fieldMinute = field{name: "minute", min: 0, max: 59}
	fieldHour   = field{name: "hour", min: 0, max: 23}
	fieldDom    = field{name: "day of month", min: 1, max: 31}
	fieldMonth  = field{name: "month", min: 1, max: 12,
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	// Day of week takes 0–7, 7 being Sunday again (folded to 0).
	fieldDow = field{name: "day of week", min: 0, max: 7,
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
)

// CronError reports a cron expression that is not a five-field set
// pattern this package reads: the expression, the field at fault (empty
// for the expression as a whole) and why.
type CronError struct {
	Expr   string
	Field  string
	Reason string
}

// Error implements error.
func (e *CronError) Error() string {
	if e.Field == "" {
		return "schedule: cron " + strconv.Quote(e.Expr) + ": " + e.Reason
	}
	return "schedule: cron " + strconv.Quote(e.Expr) + ": " + e.Field + ": " + e.Reason
}

// ParseCron reads a five-field cron expression: each field `*`, a value,
// a range `a-b`, or a list of them joined by `,`, each optionally stepped
// (`*/15`, `1-31/2`, `5/10` = `5-max/10`); month and weekday names
// (JAN–DEC, SUN–SAT, any case); weekday 0 or 7 for Sunday. `L`, `W`, `#`,
// `?`, `@` macros and a sixth field are refused with a *CronError.
func ParseCron(expr string) (Cron, error) {
	fs := strings.Fields(expr)
	if len(fs) != 5 {
		return Cron{}, &CronError{Expr: expr, Reason: "want 5 fields (minute hour day-of-month month day-of-week), have " + strconv.Itoa(len(fs))}
	}
	var c Cron
	var (
		star [5]bool
		sets [5]uint64
	)
	for i, f := range []field{fieldMinute, fieldHour, fieldDom, fieldMonth, fieldDow} {
		set, err := parseField(fs[i], f)
		if err != nil {
			return Cron{}, &CronError{Expr: expr, Field: f.name, Reason: err.Error()}
		}
		sets[i], star[i] = set, strings.HasPrefix(fs[i], "*")
		c.text[i] = storedText(fs[i], f)
	}
	c.minute = sets[0]
	c.hour = uint32(sets[1])
	c.dom = uint32(sets[2])
	c.month = uint16(sets[3])
	dow := sets[4]
	if dow&(1<<7) != 0 {
		dow = dow&^(1<<7) | 1 // 7 is Sunday
	}
	c.dow = uint8(dow)
	c.domStar, c.dowStar = star[2], star[4]
	return c, nil
}

// MustParseCron is ParseCron for expressions known good (tests, constants);
// it panics on error.
func MustParseCron(expr string) Cron {
	c, err := ParseCron(expr)
	if err != nil {
		panic(err)
	}
	return c
}

type fieldError string

func (e fieldError) Error() string { return string(e) }

// parseField returns the set of values s names in f (bit v for value v).
func parseField(s string, f field) (set uint64, err error) {
	if s == "" {
		return 0, fieldError("empty")
	}
	if i := strings.IndexAny(s, "#?@"); i >= 0 {
		return 0, fieldError(strconv.Quote(s[i:i+1]) + " is not supported: a set pattern has no nth weekday, no placeholder and no macro")
	}
	for _, part := range strings.Split(s, ",") {
		p, err := parsePart(part, f)
		if err != nil {
			return 0, err
		}
		set |= p
	}
	return set, nil
}

// parsePart reads one list element: `*`, `v`, `a-b`, each with an
// optional `/step`.
func parsePart(s string, f field) (set uint64, err error) {
	rng, stepText, stepped := strings.Cut(s, "/")
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max {
			return 0, fieldError("step " + strconv.Quote(stepText) + " is not a whole number from 1 to " + strconv.Itoa(f.max))
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
		if f.max == 7 {
			hi = 6 // `*` on weekdays is 0–6; 7 would only repeat Sunday
		}
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		if lo, err = value(a, f); err != nil {
			return 0, err
		}
		if hi, err = value(b, f); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fieldError("range " + strconv.Quote(rng) + " runs backwards")
		}
	default:
		if lo, err = value(rng, f); err != nil {
			return 0, err
		}
		if stepped {
			hi = f.max // `5/10` is `5-max/10`
		} else {
			hi = lo
		}
	}
	for v := lo; v <= hi; v += step {
		set |= 1 << uint(v)
	}
	return set, nil
}

// value reads one value of f: a number in range or a name.
func value(s string, f field) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < f.min || n > f.max {
			return 0, fieldError(strconv.Quote(s) + " is out of range " + strconv.Itoa(f.min) + "–" + strconv.Itoa(f.max))
		}
		return n, nil
	}
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.min + i, nil
		}
	}
	if strings.ContainsAny(s, "LW") {
		return 0, fieldError(strconv.Quote(s) + " is not supported: a set pattern has no last day and no nearest weekday")
	}
	return 0, fieldError(strconv.Quote(s) + " is not a " + f.name)
}

// storedText is field s of f as stored: as written, with month and
// weekday names as numbers; on weekdays a list item that is a lone
// Sunday (a name, 0 or 7) is 7, and Sunday inside a range or step is 0.
// s has parsed.
func storedText(s string, f field) string {
	switch f.name {
	case fieldMonth.name:
		return namesToNumbers(s, f)
	case fieldDow.name:
		items := strings.Split(s, ",")
		for i, it := range items {
			if n, err := value(it, f); err == nil && (n == 0 || n == 7) {
				items[i] = "7"
				continue
			}
			items[i] = namesToNumbers(it, f)
		}
		return strings.Join(items, ",")
	}
	return s
}

// namesToNumbers replaces every run of letters in s by the number of the
// name of f it spells.
func namesToNumbers(s string, f field) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		n, _ := value(s[i:j], f)
		b.WriteString(strconv.Itoa(n))
		i = j
	}
	return b.String()
}

// String is the expression as stored and shown on every surface: each
// field as written, month and weekday names as numbers, a lone Sunday as 7
// (`*/15 9-17 * * MON-FRI` is `*/15 9-17 * * 1-5`). It parses back to
// the same Cron.
func (c Cron) String() string { return strings.Join(c.text[:], " ") }

// Equal reports whether c and o match the same minutes (`1-5` and
// `MON-FRI`, `*/15` and `0,15,30,45` alike): what a plan compares.
func (c Cron) Equal(o Cron) bool {
	c.text, o.text = [5]string{}, [5]string{}
	return c == o
}

// Never reports whether c can match no minute at all: a day of month no
// month it names has (`0 0 31 2 *`, `0 0 30 2 *`) with the weekday
// unrestricted. Such an expression is valid and resets nothing.
func (c Cron) Never() bool {
	if !(c.domStar || c.dowStar) {
		return false // either field may match, and a weekday always comes
	}
	if c.domStar {
		return false
	}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<uint(m)) != 0 && c.dom&daysUpTo(maxDays[m]) != 0 {
			return false
		}
	}
	return true
}

// maxDays is the longest a month can be (February in a leap year).
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// daysUpTo is the set of days 1–n.
func daysUpTo(n int) uint32 { return uint32(1)<<uint(n+1) - 2 }

// dayMatches reports whether a date (day of month 1–31, weekday 0–6)
// matches c's day fields.
func (c Cron) dayMatches(dom, wd int) bool {
	d := c.dom&(1<<uint(dom)) != 0
	w := c.dow&(1<<uint(wd)) != 0
	if !c.domStar && !c.dowStar {
		return d || w
	}
	return d && w
}
