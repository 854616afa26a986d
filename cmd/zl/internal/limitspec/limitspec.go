// Package limitspec reads limits as an operator types them on zl's command
// line: `rpm:100/min`, `tpm:100000/min:150000` (a burst above the rate),
// `rps:10/s:soft`, calendar quotas `tokens:100000@daily` or
// `tokens:5000000@0 0 1 * *` (a cron), and session quotas
// `tokens:10000@after 5h` (a window opened on first use). The text is
// turned into the limits manifest's own document and read by
// core/manifest, so a limit typed here is checked by the same rules, with
// the same messages, as one in a manifest file (docs/design.md §12, §15).
package limitspec

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// Syntax is the accepted syntax, as messages and help show it.
const Syntax = "NAME:RATE/PERIOD[:BURST][:soft] (PERIOD sec|min|hour|day or s|m|h|d, optionally with a count: 10/30s) " +
	"or NAME:AMOUNT@RESET[:soft] (RESET hourly|daily|weekly|monthly|yearly or a cron, several joined by |, " +
	"or after WINDOW for a session window opened on first use: after 5h)"

// Examples are worked examples of Syntax, for help texts.
const Examples = "rpm:100/min, tpm:100000/min:150000, rps:10/s:soft, tokens:100000@daily, tokens:5000000@0 0 1 * *, tokens:10000@after 5h"

// SyntaxError is a limit that does not read: malformed text, or a limit the
// manifest's rules refuse.
type SyntaxError struct {
	// Spec is the limit as given.
	Spec string
	// Reason says what is wrong.
	Reason string
}

// Error implements error: what is wrong, then the accepted syntax.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("limit %q: %s; a limit is %s, e.g. %s", e.Spec, e.Reason, Syntax, Examples)
}

// resets are the reset words and the crons they stand for.
var resets = map[string]string{
	"hourly":  "0 * * * *",
	"daily":   "0 0 * * *",
	"weekly":  "0 0 * * 1", // Monday, the ISO week's first day
	"monthly": "0 0 1 * *",
	"yearly":  "0 0 1 1 *",
}

// units are the period words and their seconds.
var units = map[string]int64{
	"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
	"m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
	"h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
	"d": 86400, "day": 86400, "days": 86400,
}

// Parse reads one limit per spec. zone is the IANA time zone every quota's
// resets read ("" is UTC); it must be "" when no spec is a quota. The
// limits come back sorted by name, each valid (limit.Validate) and the set
// too (no name twice). Any failure is a *SyntaxError naming the spec.
func Parse(specs []string, zone string) ([]limit.Limit, error) {
	doc := map[string]any{}
	from := map[string]string{}
	quota := false
	for _, spec := range specs {
		name, entry, isQuota, err := parseOne(spec, zone)
		if err != nil {
			return nil, err
		}
		if prev, dup := from[name]; dup {
			return nil, &SyntaxError{Spec: spec, Reason: fmt.Sprintf("names limit %s again (first in %q): one limit per name", name, prev)}
		}
		from[name] = spec
		doc[name] = entry
		quota = quota || isQuota
	}
	if zone != "" && !quota {
		return nil, &SyntaxError{Spec: strings.Join(specs, " "), Reason: fmt.Sprintf("a time zone (%s) is for quotas' resets, and no limit here resets", zone)}
	}
	m, err := manifest.FromDocument(map[string]any{"namespace": manifest.DefaultNamespace, "system": map[string]any{"limits": doc}})
	var im *manifest.InvalidManifestError
	if errors.As(err, &im) {
		p := im.Problems[0]
		path := strings.TrimPrefix(strings.TrimPrefix(p.Path, "system.limits"), ".")
		name, field, _ := strings.Cut(path, ".")
		spec, ok := from[name]
		if !ok {
			spec = strings.Join(specs, " ")
		}
		reason := p.Message
		if field != "" {
			reason = readable(field) + " " + p.Message
		}
		return nil, &SyntaxError{Spec: spec, Reason: reason}
	}
	if err != nil {
		return nil, err
	}
	out := m.System.Limits
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readable names a manifest field as this syntax calls it.
func readable(field string) string {
	switch {
	case strings.HasPrefix(field, "capacity"), strings.HasPrefix(field, "burst"):
		return "the burst (capacity)"
	case strings.HasPrefix(field, "refill_amount"):
		return "the rate"
	case strings.HasPrefix(field, "refill_period"):
		return "the period"
	case strings.HasPrefix(field, "reset_schedule"):
		return "the reset" + strings.TrimPrefix(field, "reset_schedule")
	case strings.HasPrefix(field, "reset_after_seconds"):
		return "the window"
	}
	return field
}

// parseOne reads one spec into the manifest's entry for its limit.
func parseOne(spec, zone string) (name string, entry map[string]any, quota bool, err error) {
	bad := func(format string, args ...any) (string, map[string]any, bool, error) {
		return "", nil, false, &SyntaxError{Spec: spec, Reason: fmt.Sprintf(format, args...)}
	}
	text := strings.TrimSpace(spec)
	name, rest, ok := strings.Cut(text, ":")
	name = strings.TrimSpace(name)
	switch {
	case text == "":
		return bad("is empty")
	case !ok:
		return bad("has no ':' after the limit's name")
	case name == "":
		return bad("has no name before ':'")
	}
	entry = map[string]any{}
	if body, found := cutSuffixFold(rest, ":soft"); found {
		rest = body
		entry["soft"] = true
	}
	if amount, reset, isQuota := strings.Cut(rest, "@"); isQuota {
		n, err := count(amount)
		if err != nil {
			return bad("the amount %s", err)
		}
		entry["capacity"] = n
		entry["refill_amount"] = int64(0)
		if window, isSession := cutPrefixFold(strings.TrimSpace(reset), "after"); isSession {
			// A session window: its length in whole seconds (ADR-139).
			secs, err := seconds(window)
			if err != nil {
				return bad("the window %s", err)
			}
			entry["reset_after_seconds"] = secs
			return name, entry, false, nil
		}
		var crons []any
		for _, r := range strings.Split(reset, "|") {
			r = strings.TrimSpace(r)
			if c, word := resets[strings.ToLower(r)]; word {
				r = c
			}
			if r == "" {
				return bad("has no reset after '@'")
			}
			e := map[string]any{"cron": r}
			if zone != "" {
				e["tz"] = zone
			}
			crons = append(crons, e)
		}
		entry["reset_schedule"] = crons
		return name, entry, true, nil
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 2 {
		return bad("has %d parts after the name; at most RATE/PERIOD and BURST (and soft last)", len(parts))
	}
	rate, period, ok := strings.Cut(parts[0], "/")
	if !ok {
		return bad("has no '/' between the rate and the period")
	}
	n, err := count(rate)
	if err != nil {
		return bad("the rate %s", err)
	}
	secs, err := seconds(period)
	if err != nil {
		return bad("the period %s", err)
	}
	entry["refill_amount"] = n
	entry["refill_period"] = secs
	entry["capacity"] = n
	if len(parts) == 2 {
		b, err := count(parts[1])
		if err != nil {
			return bad("the burst %s", err)
		}
		entry["capacity"] = b
	}
	return name, entry, false, nil
}

// cutPrefixFold is strings.CutPrefix, ignoring case; the prefix must be
// the whole of s or followed by a space (`after 5h`, not `afternoon`).
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) &&
		(len(s) == len(prefix) || s[len(prefix)] == ' ' || s[len(prefix)] == '\t') {
		return s[len(prefix):], true
	}
	return s, false
}

// cutSuffixFold is strings.CutSuffix, ignoring case.
func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// count reads a whole number of tokens: digits, optionally grouped by _.
func count(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("is missing")
	}
	if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '_' {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("%q must be at least 1", s)
	}
	return n, nil
}

// seconds reads a period: an optional count and a unit (30s, 5min, hour).
func seconds(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mult := int64(1)
	if i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q needs a count of at least 1", s)
		}
		mult = n
	}
	unit, ok := units[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		if s == "" {
			return 0, errors.New("is missing")
		}
		return 0, fmt.Errorf("%q is not sec, min, hour or day (or s, m, h, d)", s)
	}
	if mult > (1<<62)/unit {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return mult * unit, nil
}
