package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// style is the spelling of a manifest's field names.
type style uint8

const (
	// snakeCase is the file and CLI form: `refill_amount`.
	snakeCase style = iota
	// pascalCase is the CloudFormation form: `RefillAmount`.
	pascalCase
)

// field is one field name in both spellings.
type field struct{ snake, pascal string }

func (f field) in(s style) string {
	if s == pascalCase {
		return f.pascal
	}
	return f.snake
}

var (
	fNamespace     = field{"namespace", "Namespace"}
	fNamespaceID   = field{"namespace_id", "NamespaceId"}
	fTableName     = field{"table_name", "TableName"}
	fServiceToken  = field{"service_token", "ServiceToken"}
	fTakeOverFrom  = field{"take_over_from", "TakeOverFrom"}
	fAllowTakeOver = field{"allow_take_over_by", "AllowTakeOverBy"}
	fSystem        = field{"system", "System"}
	fResources     = field{"resources", "Resources"}
	fEntities      = field{"entities", "Entities"}
	fLimits        = field{"limits", "Limits"}
	fOnUnavailable = field{"on_unavailable", "OnUnavailable"}
	fDisabled      = field{"disabled", "Disabled"}
	fCascade       = field{"cascade", "Cascade"}
	fCapacity      = field{"capacity", "Capacity"}
	fBurst         = field{"burst", "Burst"}
	fRefillAmount  = field{"refill_amount", "RefillAmount"}
	fRefillPeriod  = field{"refill_period", "RefillPeriod"}
	fSoft          = field{"soft", "Soft"}
	fSchedule      = field{"schedule", "Schedule"}
	fResetSchedule = field{"reset_schedule", "ResetSchedule"}
	fResetAfter    = field{"reset_after", "ResetAfter"}
	fResetAfterS   = field{"reset_after_seconds", "ResetAfterSeconds"}
	fCron          = field{"cron", "Cron"}
	fTz            = field{"tz", "Tz"}
	fScale         = field{"scale", "Scale"}
	fRefillSeconds = field{"refill_period_seconds", "RefillPeriodSeconds"}
	fInherit       = field{"inherit_limits", "InheritLimits"}
	fExclude       = field{"exclude_limits", "ExcludeLimits"}
	fPatch         = field{"patch_limits", "PatchLimits"}
)

// Reasons for fields this version refuses (docs/decisions.md P32).
const (
	reasonMerge  = "config merge attributes (inherit_limits, exclude_limits, patch_limits) are refused: limits resolve first-level-wins"
	reasonSystem = "is not allowed at system level: access and cascade are set on resources and entities"
)

// FromProperties decodes the ResourceProperties of a limits custom resource:
// PascalCase names, every scalar a string (native values are accepted
// unchanged). `ServiceToken` is ignored; `Namespace` defaults to "default".
// A bad manifest is an *InvalidManifestError listing every problem.
func FromProperties(props map[string]any) (*Manifest, error) {
	return decode(props, pascalCase, true)
}

// FromDocument decodes the snake_case form (a parsed YAML or JSON file, or
// the manifest of a CLI invocation). `namespace` is required.
func FromDocument(doc map[string]any) (*Manifest, error) {
	return decode(doc, snakeCase, false)
}

// FromPropertiesTolerating is FromProperties that lets problems tolerate
// accepts pass: they are returned, and the manifest is built without them.
// Only unknown fields (Problem.Unknown) can be tolerated, since the manifest
// never reads them; any other problem is an error as in FromProperties. The
// provisioner tolerates an unknown field an Update's previous properties
// carried too, so that neither the Update nor CloudFormation's rollback of
// it fails on a field the stack was already deployed with
// (docs/decisions.md P40).
func FromPropertiesTolerating(props map[string]any, tolerate func(Problem) bool) (*Manifest, []Problem, error) {
	d := &decoder{style: pascalCase}
	m := d.manifest(props, true)
	var kept, tolerated []Problem
	for _, p := range d.problems {
		if p.Unknown && tolerate(p) {
			tolerated = append(tolerated, p)
		} else {
			kept = append(kept, p)
		}
	}
	if len(kept) > 0 {
		return nil, nil, &InvalidManifestError{Problems: kept}
	}
	return m, tolerated, nil
}

func decode(in map[string]any, s style, cfn bool) (*Manifest, error) {
	d := &decoder{style: s}
	m := d.manifest(in, cfn)
	if len(d.problems) > 0 {
		return nil, &InvalidManifestError{Problems: d.problems}
	}
	return m, nil
}

// decoder collects problems while it walks a manifest.
type decoder struct {
	style    style
	problems []Problem
}

// add records a problem. Its path and message repeat the input, so each
// is cut to an excerpt: a megabyte key or value makes a problem of a few
// hundred bytes, marked as cut.
func (d *decoder) add(path, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: schema.Excerpt(path, maxProblemText), Message: schema.Excerpt(fmt.Sprintf(format, args...), maxProblemText)})
}

// maxProblemText bounds a problem's path and message, in bytes.
const maxProblemText = 2 * schema.MaxEcho

func (d *decoder) name(f field) string { return f.in(d.style) }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// object checks that v is a map (nil is an empty one) and that it holds
// only allowed keys; refused keys get their own reason. It returns the
// map's keys in sorted order.
func (d *decoder) object(path string, v any, allowed []field, refused map[field]string) (map[string]any, bool) {
	m, ok := d.mapping(path, v)
	if !ok {
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if slicesContainsField(allowed, k, d.style) {
			continue
		}
		if reason, bad := refusedReason(refused, k, d.style); bad {
			d.add(join(path, k), "%s", reason)
			continue
		}
		d.add(join(path, k), "unknown field%s", d.suggest(k, allowed))
		d.problems[len(d.problems)-1].Unknown = true
	}
	return m, true
}

// mapping checks that v is a map whose keys are names (resources, entities,
// limits); nil is an empty one.
func (d *decoder) mapping(path string, v any) (map[string]any, bool) {
	if v == nil {
		return map[string]any{}, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be a mapping, not %s", describe(v))
		return nil, false
	}
	return m, true
}

func slicesContainsField(fs []field, k string, s style) bool {
	for _, f := range fs {
		if f.in(s) == k {
			return true
		}
	}
	return false
}

func refusedReason(refused map[field]string, k string, s style) (string, bool) {
	for f, reason := range refused {
		if f.in(s) == k {
			return reason, true
		}
	}
	return "", false
}

// suggest names the right spelling of a field written in the other style.
func (d *decoder) suggest(k string, allowed []field) string {
	for _, f := range allowed {
		other := f.snake
		if d.style == snakeCase {
			other = f.pascal
		}
		if other == k {
			return " (did you mean " + strconv.Quote(f.in(d.style)) + "?)"
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (d *decoder) manifest(in map[string]any, cfn bool) *Manifest {
	top := []field{fNamespace, fNamespaceID, fTableName, fSystem, fResources, fEntities}
	if cfn {
		top = append(top, fServiceToken, fTakeOverFrom, fAllowTakeOver)
	}
	obj, ok := d.object("", in, top, nil)
	if !ok {
		return nil
	}
	m := &Manifest{}
	m.Namespace, _ = d.str(d.name(fNamespace), obj[d.name(fNamespace)])
	m.NamespaceID, _ = d.str(d.name(fNamespaceID), obj[d.name(fNamespaceID)])
	m.TableName, _ = d.str(d.name(fTableName), obj[d.name(fTableName)])
	switch {
	case m.Namespace == "" && cfn:
		m.Namespace = DefaultNamespace
	case m.Namespace == "":
		d.add(d.name(fNamespace), "is required")
	}
	if m.Namespace != "" {
		if err := schema.ValidateNamespaceName(m.Namespace); err != nil {
			d.add(d.name(fNamespace), "%s", reason(err))
		}
	}
	if m.NamespaceID != "" {
		if err := schema.ValidateNamespaceID(m.NamespaceID); err != nil {
			d.add(d.name(fNamespaceID), "%s", reason(err))
		}
	}
	if m.TableName != "" {
		if err := schema.ValidateStackName(m.TableName); err != nil {
			d.add(d.name(fTableName), "%s", reason(err))
		}
	}
	if v, ok := obj[d.name(fSystem)]; ok {
		m.System = d.system(d.name(fSystem), v)
	}
	m.Resources = map[string]Level{}
	if res, ok := d.mapping(d.name(fResources), obj[d.name(fResources)]); ok {
		for _, r := range sortedKeys(res) {
			path := join(d.name(fResources), r)
			if err := schema.ValidateResource(r); err != nil {
				d.add(path, "%s", reason(err))
				continue
			}
			m.Resources[r] = d.level(path, res[r])
		}
	}
	m.Entities = map[string]Entity{}
	if ents, ok := d.mapping(d.name(fEntities), obj[d.name(fEntities)]); ok {
		for _, id := range sortedKeys(ents) {
			path := join(d.name(fEntities), id)
			if err := schema.ValidateEntityID(id); err != nil {
				d.add(path, "%s", reason(err))
				continue
			}
			m.Entities[id] = d.entity(path, ents[id])
		}
	}
	return m
}

func (d *decoder) system(path string, v any) *System {
	obj, ok := d.object(path, v, []field{fLimits, fOnUnavailable},
		map[field]string{fDisabled: reasonSystem, fCascade: reasonSystem, fInherit: reasonMerge, fExclude: reasonMerge, fPatch: reasonMerge})
	if !ok {
		return nil
	}
	s := &System{Limits: d.limits(join(path, d.name(fLimits)), obj[d.name(fLimits)])}
	p := join(path, d.name(fOnUnavailable))
	if o, present := d.str(p, obj[d.name(fOnUnavailable)]); present {
		if ou := config.OnUnavailable(o); ou.Valid() {
			s.OnUnavailable = ou
		} else {
			d.add(p, "%s is not allow or block", strconv.Quote(o))
		}
	}
	return s
}

func (d *decoder) entity(path string, v any) Entity {
	obj, ok := d.object(path, v, []field{fResources}, nil)
	e := Entity{Resources: map[string]Level{}}
	if !ok {
		return e
	}
	rpath := join(path, d.name(fResources))
	res, ok := d.mapping(rpath, obj[d.name(fResources)])
	if !ok {
		return e
	}
	for _, r := range sortedKeys(res) {
		p := join(rpath, r)
		if err := schema.ValidateConfigScope(r); err != nil {
			d.add(p, "%s", reason(err))
			continue
		}
		e.Resources[r] = d.level(p, res[r])
	}
	return e
}

func (d *decoder) level(path string, v any) Level {
	obj, ok := d.object(path, v, []field{fLimits, fDisabled, fCascade},
		map[field]string{fInherit: reasonMerge, fExclude: reasonMerge, fPatch: reasonMerge})
	if !ok {
		return Level{}
	}
	l := Level{Limits: d.limits(join(path, d.name(fLimits)), obj[d.name(fLimits)])}
	if raw, present := obj[d.name(fDisabled)]; present {
		p := join(path, d.name(fDisabled))
		if a, ok, msg := coerceAccess(raw); msg != "" {
			d.add(p, "%s", msg)
		} else if ok {
			l.Disabled = a
		}
	}
	if raw, present := obj[d.name(fCascade)]; present {
		p := join(path, d.name(fCascade))
		if b, ok, msg := coerceBool(raw); msg != "" {
			d.add(p, "%s", msg)
		} else if ok {
			l.Cascade = config.CascadeOff
			if b {
				l.Cascade = config.CascadeOn
			}
		}
	}
	return l
}

func (d *decoder) limits(path string, v any) []limit.Limit {
	if _, isList := v.([]any); isList {
		d.add(path, "must be a mapping of limit name to limit, not a list")
		return nil
	}
	obj, ok := d.mapping(path, v)
	if !ok {
		return nil
	}
	if len(obj) > config.MaxLimitsPerLevel {
		d.add(path, "holds %d limits; at most %d per level", len(obj), config.MaxLimitsPerLevel)
	}
	var out []limit.Limit
	zone, zoned := "", ""
	for _, name := range sortedKeys(obj) {
		l, ok := d.limit(join(path, name), name, obj[name])
		if !ok {
			continue
		}
		if l.Schedule != "" || l.ResetSchedule != "" {
			// One config item holds the level's limits and one sched_tz,
			// shared by every schedule and reset schedule on it.
			if zoned != "" && l.Zone != zone {
				f := fSchedule
				if l.Schedule == "" {
					f = fResetSchedule
				}
				d.add(join(join(path, name), d.name(f)), "reads time zone %q but limit %s reads %q: every schedule and reset schedule of a level reads one time zone", l.Zone, zoned, zone)
			}
			if zoned == "" {
				zone, zoned = l.Zone, name
			}
		}
		out = append(out, l)
	}
	return out
}

func (d *decoder) limit(path, name string, v any) (limit.Limit, bool) {
	obj, ok := d.object(path, v, []field{fCapacity, fBurst, fRefillAmount, fRefillPeriod, fSoft, fSchedule, fResetSchedule, fResetAfterS},
		map[field]string{fResetAfter: "is not a field: a session window's length is " + d.name(fResetAfterS) + ", a whole number of seconds"})
	if !ok {
		return limit.Limit{}, false
	}
	before := len(d.problems)
	if err := schema.ValidateLimitName(name); err != nil {
		d.add(path, "%s", reason(err))
	}
	integer := func(f field) (int64, bool) {
		p := join(path, d.name(f))
		n, present, msg := coerceInt(obj[d.name(f)])
		if msg != "" {
			d.add(p, "%s", msg)
		}
		return n, present
	}
	capacity, hasCap := integer(fCapacity)
	burst, hasBurst := integer(fBurst)
	switch {
	case hasBurst && hasCap && burst != capacity:
		d.add(join(path, d.name(fBurst)), "is an alias of %s and disagrees with it (%d ≠ %d)", d.name(fCapacity), burst, capacity)
	case hasBurst:
		capacity, hasCap = burst, true
	}
	if !hasCap && len(d.problems) == before {
		d.add(join(path, d.name(fCapacity)), "is required")
	}
	refillAt := len(d.problems)
	refill, hasRefill := integer(fRefillAmount)
	refillBad := len(d.problems) > refillAt
	period, hasPeriod := integer(fRefillPeriod)
	soft := false
	if raw, present := obj[d.name(fSoft)]; present {
		b, _, msg := coerceBool(raw)
		if msg != "" {
			d.add(join(path, d.name(fSoft)), "%s", msg)
		}
		soft = b
	}
	sched, zone := d.schedule(join(path, d.name(fSchedule)), obj[d.name(fSchedule)])
	resets, resetZone := d.resets(join(path, d.name(fResetSchedule)), obj[d.name(fResetSchedule)])
	if len(sched) > 0 && len(resets) > 0 && resetZone != zone {
		// One config item holds one sched_tz for both.
		d.add(join(path, d.name(fResetSchedule)), "reads time zone %q but the limit's %s reads %q: a limit's schedules read one time zone",
			resetZone, d.name(fSchedule), zone)
	}
	if len(sched) == 0 {
		zone = resetZone
	}
	// A session quota's window length (ADR-139): a positive whole number
	// of seconds, never beside a reset schedule (a quota resets one way).
	windowAt := len(d.problems)
	window, hasWindow := integer(fResetAfterS)
	wp := join(path, d.name(fResetAfterS))
	switch {
	case len(d.problems) > windowAt:
	case hasWindow && (window <= 0 || window > int64(limit.MaxRefillPeriod/time.Second)):
		d.add(wp, "%d must be between 1 and %d seconds", window, int64(limit.MaxRefillPeriod/time.Second))
	case hasWindow && len(resets) > 0:
		d.add(wp, "beside a %s: a quota resets one way, on a calendar or in a window opened on first use, never both (ADR-139)", d.name(fResetSchedule))
	}
	// A quota is refill_amount 0 with a reset schedule or a window length,
	// and only that (ADR-137: a limit drips or resets, never both). Its
	// refill amount is never defaulted: capacity would be a drip beside the
	// resets, and 0 is what turns the drip off, so the manifest says it
	// (docs/decisions.md P34).
	quota := len(resets) > 0 || hasWindow
	reset := d.name(fResetSchedule)
	if hasWindow {
		reset = d.name(fResetAfterS)
	}
	ra := join(path, d.name(fRefillAmount))
	switch {
	case refillBad:
	case !hasRefill && quota:
		d.add(ra, "is required beside a %s: a quota's %s is 0 (a limit drips or resets, never both, ADR-137)", reset, d.name(fRefillAmount))
	case !hasRefill:
		refill = capacity
	case refill == 0 && !quota && len(d.problems) == before:
		d.add(ra, "0 is a quota, which needs a %s or a %s: without one the bucket never recovers (ADR-137)", d.name(fResetSchedule), d.name(fResetAfterS))
	case refill > 0 && quota:
		d.add(ra, "%d beside a %s: a limit drips or resets, never both (ADR-137); a quota's %s is 0", refill, reset, d.name(fRefillAmount))
	}
	switch {
	case hasPeriod:
	case quota:
		period = int64(limit.QuotaRefillPeriod / time.Second) // inert: a quota does not drip
	default:
		period = DefaultRefillPeriodSeconds
	}
	if len(d.problems) > before {
		return limit.Limit{}, false
	}
	if period <= 0 || period > int64(limit.MaxRefillPeriod/time.Second) {
		d.add(join(path, d.name(fRefillPeriod)), "%d must be between 1 and %d seconds", period, int64(limit.MaxRefillPeriod/time.Second))
		return limit.Limit{}, false
	}
	l := limit.Limit{Name: name, Capacity: capacity, RefillAmount: refill, RefillPeriod: time.Duration(period) * time.Second, Soft: soft}.
		WithSchedule(sched, zone).WithResetSchedule(resets, zone).WithResetAfter(time.Duration(window) * time.Second)
	if err := l.Validate(); err != nil {
		d.add(join(path, d.fieldOf(err)), "%s", reason(err))
		return limit.Limit{}, false
	}
	return l, true
}

// schedule reads a limit's `schedule` (docs/design.md §14): a list of
// entries, each a `cron`, an optional `tz` (every entry of one level reads
// one zone; absent is UTC) and either a `scale` (a positive number, kept
// to the per mille as the Python client keeps it) or absolute
// `capacity`, `refill_amount` and `refill_period_seconds`. nil for none.
func (d *decoder) schedule(path string, v any) (schedule.Schedule, string) {
	list, ok := d.list(path, v)
	if !ok {
		return nil, ""
	}
	var (
		out  schedule.Schedule
		zone string
	)
	for i, ev := range list {
		p := path + "[" + strconv.Itoa(i) + "]"
		obj, ok := d.object(p, ev, []field{fCron, fTz, fScale, fCapacity, fRefillAmount, fRefillSeconds}, nil)
		if !ok {
			continue
		}
		var e schedule.Entry
		c, cronOK := d.cron(p, obj)
		if cronOK {
			e.Cron = c
		}
		d.tz(p, obj, i, &zone)
		if raw, present := obj[d.name(fScale)]; present {
			e.ScalePerMille = d.scale(join(p, d.name(fScale)), raw)
		}
		for _, f := range []struct {
			field field
			dst   *int64
		}{{fCapacity, &e.Capacity}, {fRefillAmount, &e.RefillAmount}, {fRefillSeconds, &e.RefillPeriodSeconds}} {
			n, present, msg := coerceInt(obj[d.name(f.field)])
			switch {
			case msg != "":
				d.add(join(p, d.name(f.field)), "%s", msg)
			case present:
				*f.dst = n
			}
		}
		if !cronOK {
			out = append(out, e)
			continue // the cron is reported; the entry's values are not judged without it
		}
		if err := e.Validate(); err != nil {
			var ee *schedule.EntryError
			if errors.As(err, &ee) {
				d.add(p, "%s", ee.Reason)
			}
		}
		out = append(out, e)
	}
	return out, zone
}

// Reason for a parameter field in a reset entry.
const reasonResetEntry = "a reset entry takes only cron and tz: a reset returns the quota to its capacity and changes no parameter; scale or replace parameters in the limit's schedule"

// resets reads a limit's `reset_schedule` (docs/design.md §14): a list of
// entries, each a `cron` and an optional `tz` (one zone, as for
// `schedule`; absent is UTC) and nothing else. A cron that matches no
// minute of any year is refused: it would reset nothing. nil for none.
func (d *decoder) resets(path string, v any) (schedule.Resets, string) {
	list, ok := d.list(path, v)
	if !ok {
		return nil, ""
	}
	var (
		out  schedule.Resets
		zone string
	)
	refused := map[field]string{fScale: reasonResetEntry, fCapacity: reasonResetEntry, fRefillAmount: reasonResetEntry, fRefillSeconds: reasonResetEntry}
	for i, ev := range list {
		p := path + "[" + strconv.Itoa(i) + "]"
		obj, ok := d.object(p, ev, []field{fCron, fTz}, refused)
		if !ok {
			continue
		}
		c, ok := d.cron(p, obj)
		d.tz(p, obj, i, &zone)
		if !ok {
			continue
		}
		if c.Never() {
			d.add(join(p, d.name(fCron)), "%q matches no minute of any year: it would never reset the quota", c.String())
			continue
		}
		out = append(out, c)
	}
	return out, zone
}

// list reads a list of schedule entries; nil is none.
func (d *decoder) list(path string, v any) ([]any, bool) {
	if v == nil {
		return nil, false
	}
	list, ok := v.([]any)
	if !ok {
		d.add(path, "must be a list of entries, not %s", describe(v))
		return nil, false
	}
	return list, true
}

// cron reads the required `cron` of the entry at p: a five-field set
// pattern (`L`, `W`, `#` and macros refused). ok is false when it is
// reported.
func (d *decoder) cron(p string, obj map[string]any) (schedule.Cron, bool) {
	cp := join(p, d.name(fCron))
	text, _ := d.str(cp, obj[d.name(fCron)])
	c, err := schedule.ParseCron(text)
	switch {
	case text == "":
		if raw := obj[d.name(fCron)]; raw == nil || raw == "" {
			d.add(cp, "is required") // any other value is reported as not a string
		}
		return schedule.Cron{}, false
	case err != nil:
		var ce *schedule.CronError
		if errors.As(err, &ce) && ce.Field != "" {
			d.add(cp, "%q: %s: %s", text, ce.Field, ce.Reason)
		} else if ce != nil {
			d.add(cp, "%q: %s", text, ce.Reason)
		}
		return schedule.Cron{}, false
	}
	return c, true
}

// tz reads the optional `tz` of the i-th entry at p into *zone: a zone the
// zone database holds, the same for every entry of the list.
func (d *decoder) tz(p string, obj map[string]any, i int, zone *string) {
	if raw, present := obj[d.name(fTz)]; present {
		tz, _ := d.str(join(p, d.name(fTz)), raw)
		if _, err := schedule.Zone(tz); err != nil {
			d.add(join(p, d.name(fTz)), "%q is not a time zone the zone database holds", tz)
		}
		if i > 0 && tz != *zone {
			d.add(join(p, d.name(fTz)), "%q differs from the first entry's %q: every schedule of a limit reads one time zone", tz, *zone)
		}
		*zone = tz
	} else if i > 0 && *zone != "" {
		d.add(join(p, d.name(fTz)), "is required: the first entry reads %q", *zone)
	}
}

// scale reads a schedule entry's scale, a positive number (or its text),
// as an integer per mille rounded half to even: what the Python client
// stores (0.5 is 500, 1/3 is 333; at least 1).
func (d *decoder) scale(path string, v any) int64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	case int:
		f = float64(x)
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			d.add(path, "%q is not a number", x)
			return 0
		}
	default:
		d.add(path, "must be a number, not %s", describe(v))
		return 0
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > schedule.MaxScalePerMille/1000 {
		d.add(path, "%v must be a positive number up to %d", f, schedule.MaxScalePerMille/1000)
		return 0
	}
	return max(1, int64(math.RoundToEven(f*1000)))
}

// fieldOf maps a limit.Validate failure to the manifest field it concerns.
func (d *decoder) fieldOf(err error) string {
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		switch ve.Field {
		case limit.FieldCapacity:
			return d.name(fCapacity)
		case limit.FieldRefillAmount:
			return d.name(fRefillAmount)
		case limit.FieldRefillPeriod:
			return d.name(fRefillPeriod)
		case limit.FieldSoft:
			return d.name(fSoft)
		case limit.FieldSchedule:
			return d.name(fSchedule)
		case limit.FieldResetSchedule:
			return d.name(fResetSchedule)
		case limit.FieldResetAfter:
			return d.name(fResetAfterS)
		}
	}
	return ""
}

// str coerces an optional string scalar; "" and null are absent.
func (d *decoder) str(path string, v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, x != ""
	default:
		d.add(path, "must be a string, not %s", describe(v))
		return "", false
	}
}

// reason is a validation error's message without its Go-side field name.
func reason(err error) string {
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		if ve.Value != "" {
			return strconv.Quote(ve.Value) + ": " + ve.Reason
		}
		return ve.Reason
	}
	return err.Error()
}

// coerceInt reads an integer field (docs/design.md §12): a string of
// decimal digits with an optional sign, or a native integer (a float only
// when integral). Booleans and fractions are refused; null and "" are
// absent. msg is "" when the value is acceptable.
func coerceInt(v any) (n int64, present bool, msg string) {
	switch x := v.(type) {
	case nil:
		return 0, false, ""
	case string:
		if x == "" {
			return 0, false, ""
		}
		return parseInt(x)
	case json.Number:
		return parseInt(x.String())
	case bool:
		return 0, false, fmt.Sprintf("%t is a boolean, not an integer", x)
	case int:
		return int64(x), true, ""
	case int64:
		return x, true, ""
	case uint64:
		if x > math.MaxInt64 {
			return 0, false, fmt.Sprintf("%d is out of range", x)
		}
		return int64(x), true, ""
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
			return 0, false, fmt.Sprintf("%v is not an integer", x)
		}
		if x < -(1<<53) || x > 1<<53 {
			return 0, false, fmt.Sprintf("%v is out of range", x)
		}
		return int64(x), true, ""
	default:
		return 0, false, describe(v) + " is not an integer"
	}
}

func parseInt(s string) (int64, bool, string) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, strconv.Quote(s) + " is out of range"
		}
		return 0, false, strconv.Quote(s) + " is not an integer"
	}
	return n, true, ""
}

// coerceBool reads a boolean field: true or false in any case, or a native
// bool; anything else is refused, never guessed. null is absent.
func coerceBool(v any) (b, present bool, msg string) {
	switch x := v.(type) {
	case nil:
		return false, false, ""
	case bool:
		return x, true, ""
	case string:
		switch {
		case strings.EqualFold(x, "true"):
			return true, true, ""
		case strings.EqualFold(x, "false"):
			return false, true, ""
		}
		return false, false, strconv.Quote(x) + " is not a boolean (true or false)"
	default:
		return false, false, describe(v) + " is not a boolean (true or false)"
	}
}

// coerceAccess reads `disabled`: a boolean, or bypass in any case.
func coerceAccess(v any) (a config.Access, present bool, msg string) {
	if s, ok := v.(string); ok && strings.EqualFold(s, "bypass") {
		return config.AccessBypass, true, ""
	}
	b, present, msg := coerceBool(v)
	if msg != "" {
		if s, ok := v.(string); ok {
			return 0, false, strconv.Quote(s) + " is not true, false or bypass"
		}
		return 0, false, describe(v) + " is not true, false or bypass"
	}
	if !present {
		return config.AccessInherit, false, ""
	}
	if b {
		return config.AccessDisabled, true, ""
	}
	return config.AccessEnforce, true, ""
}

// describe names a value's kind for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v", x)
	}
}
