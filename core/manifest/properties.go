package manifest

import (
	"strconv"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// Properties is m as the ResourceProperties of a limits custom resource:
// PascalCase names, every scalar a string, as CloudFormation delivers them
// (FromProperties reads it back to m). Defaults are written out; `Soft`,
// `Disabled`, `Cascade`, `OnUnavailable`, `NamespaceId` and `TableName`
// appear only when set. A CDK app builds its limits resource from a
// manifest file with Parse and Properties, so a bad manifest fails the
// synth, not the deployment.
func (m *Manifest) Properties() map[string]any {
	out := map[string]any{"Namespace": m.Namespace}
	if m.NamespaceID != "" {
		out["NamespaceId"] = m.NamespaceID
	}
	if m.TableName != "" {
		out["TableName"] = m.TableName
	}
	if m.System != nil {
		sys := map[string]any{}
		if len(m.System.Limits) > 0 {
			sys["Limits"] = limitProperties(m.System.Limits)
		}
		if m.System.OnUnavailable != "" {
			sys["OnUnavailable"] = string(m.System.OnUnavailable)
		}
		out["System"] = sys
	}
	if len(m.Resources) > 0 {
		res := make(map[string]any, len(m.Resources))
		for r, l := range m.Resources {
			res[r] = levelProperties(l)
		}
		out["Resources"] = res
	}
	if len(m.Entities) > 0 {
		ents := make(map[string]any, len(m.Entities))
		for id, e := range m.Entities {
			res := make(map[string]any, len(e.Resources))
			for r, l := range e.Resources {
				res[r] = levelProperties(l)
			}
			ents[id] = map[string]any{"Resources": res}
		}
		out["Entities"] = ents
	}
	return out
}

func levelProperties(l Level) map[string]any {
	out := map[string]any{}
	if len(l.Limits) > 0 {
		out["Limits"] = limitProperties(l.Limits)
	}
	switch l.Disabled {
	case config.AccessDisabled:
		out["Disabled"] = "true"
	case config.AccessEnforce:
		out["Disabled"] = "false"
	case config.AccessBypass:
		out["Disabled"] = "bypass"
	}
	switch l.Cascade {
	case config.CascadeOn:
		out["Cascade"] = "true"
	case config.CascadeOff:
		out["Cascade"] = "false"
	}
	return out
}

func limitProperties(ls []limit.Limit) map[string]any {
	out := make(map[string]any, len(ls))
	for _, l := range ls {
		p := map[string]any{
			"Capacity":     strconv.FormatInt(l.Capacity, 10),
			"RefillAmount": strconv.FormatInt(l.RefillAmount, 10),
			"RefillPeriod": strconv.FormatInt(l.RefillPeriodSeconds(), 10),
		}
		if l.Soft {
			p["Soft"] = "true"
		}
		out[l.Name] = p
	}
	return out
}
