package manifest

import (
	"strconv"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// Properties is m as the ResourceProperties of a limits custom resource:
// PascalCase names, every scalar a string, as CloudFormation delivers them
// (FromProperties reads it back to m). Defaults are written out; `Soft`,
// `Disabled`, `Cascade`, `OnUnavailable`, `NamespaceId` and `TableName`
// appear only when set, `Limits` only when not empty. A CDK app builds its
// limits resource from a manifest file with Parse and Properties, so a bad
// manifest fails the synth, not the deployment.
func (m *Manifest) Properties() map[string]any { return m.document(pascalCase) }

// document writes m in style: the snake_case form is the canonical
// document (native values, `limits` always present, as the hash needs);
// the PascalCase form is the CloudFormation one (every scalar a string,
// empty `Limits` left out, `NamespaceId` and `TableName` when set). Field
// names come from the decoder's table, so both forms read back.
func (m *Manifest) document(s style) map[string]any {
	w := writer{style: s, cfn: s == pascalCase}
	out := map[string]any{w.name(fNamespace): m.Namespace}
	if w.cfn && m.NamespaceID != "" {
		out[w.name(fNamespaceID)] = m.NamespaceID
	}
	if w.cfn && m.TableName != "" {
		out[w.name(fTableName)] = m.TableName
	}
	if m.System != nil {
		sys := map[string]any{}
		w.limits(sys, m.System.Limits)
		if m.System.OnUnavailable != "" {
			sys[w.name(fOnUnavailable)] = string(m.System.OnUnavailable)
		}
		out[w.name(fSystem)] = sys
	}
	if len(m.Resources) > 0 {
		res := make(map[string]any, len(m.Resources))
		for r, l := range m.Resources {
			res[r] = w.level(l)
		}
		out[w.name(fResources)] = res
	}
	if len(m.Entities) > 0 {
		ents := make(map[string]any, len(m.Entities))
		for id, e := range m.Entities {
			res := make(map[string]any, len(e.Resources))
			for r, l := range e.Resources {
				res[r] = w.level(l)
			}
			ents[id] = map[string]any{w.name(fResources): res}
		}
		out[w.name(fEntities)] = ents
	}
	return out
}

// writer writes the scalars and names of one form.
type writer struct {
	style style
	cfn   bool // every scalar a string, empty limits left out
}

func (w writer) name(f field) string { return f.in(w.style) }

func (w writer) int(n int64) any {
	if w.cfn {
		return strconv.FormatInt(n, 10)
	}
	return n
}

func (w writer) bool(b bool) any {
	if w.cfn {
		return strconv.FormatBool(b)
	}
	return b
}

func (w writer) level(l Level) map[string]any {
	out := map[string]any{}
	w.limits(out, l.Limits)
	switch l.Disabled {
	case config.AccessDisabled:
		out[w.name(fDisabled)] = w.bool(true)
	case config.AccessEnforce:
		out[w.name(fDisabled)] = w.bool(false)
	case config.AccessBypass:
		out[w.name(fDisabled)] = "bypass"
	}
	switch l.Cascade {
	case config.CascadeOn:
		out[w.name(fCascade)] = w.bool(true)
	case config.CascadeOff:
		out[w.name(fCascade)] = w.bool(false)
	}
	return out
}

// limits adds the limits of a level to out under `limits`.
func (w writer) limits(out map[string]any, ls []limit.Limit) {
	if w.cfn && len(ls) == 0 {
		return
	}
	m := make(map[string]any, len(ls))
	for _, l := range ls {
		d := map[string]any{
			w.name(fCapacity):     w.int(l.Capacity),
			w.name(fRefillAmount): w.int(l.RefillAmount),
			w.name(fRefillPeriod): w.int(l.RefillPeriodSeconds()),
		}
		if l.Soft {
			d[w.name(fSoft)] = w.bool(true)
		}
		if s, _, err := l.ParamSchedule(); err == nil && len(s) > 0 {
			d[w.name(fSchedule)] = w.schedule(s, l.Zone)
		}
		if r, _, err := l.Resets(); err == nil && len(r) > 0 {
			d[w.name(fResetSchedule)] = w.resets(r, l.Zone)
		}
		if l.IsSession() {
			d[w.name(fResetAfterS)] = w.int(l.ResetAfterSeconds())
		}
		m[l.Name] = d
	}
	out[w.name(fLimits)] = m
}

// schedule writes a limit's schedule entries: each cron as stored, the
// zone when not UTC, and the scale as a decimal (per mille / 1000) or the
// absolute values.
func (w writer) schedule(s schedule.Schedule, zone string) []any {
	out := make([]any, 0, len(s))
	for _, e := range s {
		m := map[string]any{w.name(fCron): e.Cron.String()}
		if zone != "" {
			m[w.name(fTz)] = zone
		}
		if e.ScalePerMille != 0 {
			m[w.name(fScale)] = strconv.FormatFloat(float64(e.ScalePerMille)/1000, 'f', -1, 64)
		}
		for _, f := range []struct {
			field field
			v     int64
		}{{fCapacity, e.Capacity}, {fRefillAmount, e.RefillAmount}, {fRefillSeconds, e.RefillPeriodSeconds}} {
			if f.v != 0 {
				m[w.name(f.field)] = w.int(f.v)
			}
		}
		out = append(out, m)
	}
	return out
}

// resets writes a quota's reset entries: each cron as stored, and the zone
// when not UTC.
func (w writer) resets(r schedule.Resets, zone string) []any {
	out := make([]any, 0, len(r))
	for _, c := range r {
		m := map[string]any{w.name(fCron): c.String()}
		if zone != "" {
			m[w.name(fTz)] = zone
		}
		out = append(out, m)
	}
	return out
}
