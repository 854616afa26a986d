package construct

import (
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"go.yaml.in/yaml/v3"
)

// LimitsProperties turns a limits manifest (the provisioner's YAML,
// docs/design.md §13) into the properties of a Custom::ZaeLimiterLimits
// resource: PascalCase keys, names of resources, entities and limits kept
// as written, and every scalar a string, as CloudFormation delivers them.
// `burst` is written as Capacity. Unknown keys are errors; whether the
// values are valid is the provisioner's to judge.
func LimitsProperties(manifest []byte) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("limits manifest: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("limits manifest: empty")
	}
	if _, ok := m["namespace"]; !ok {
		if _, ok := m["namespace_id"]; !ok {
			return nil, fmt.Errorf("limits manifest: namespace is required")
		}
	}
	out, err := convert("", m, manifestShape())
	if err != nil {
		return nil, fmt.Errorf("limits manifest: %w", err)
	}
	return out.(map[string]any), nil
}

// shape is what a manifest node may hold: fixed keys with their shapes
// (a struct), or user-named keys all of one shape (a map), or a list, or
// a scalar (nil shape).
type shape struct {
	fields map[string]field
	each   *shape // map of user names, or list entries
	list   bool
}

type field struct {
	name  string // PascalCase
	shape *shape
}

func strct(fields map[string]field) *shape { return &shape{fields: fields} }
func names(of *shape) *shape               { return &shape{each: of} }
func list(of *shape) *shape                { return &shape{each: of, list: true} }

// manifestShape is the manifest's grammar (docs/design.md §13).
func manifestShape() *shape {
	scheduleEntry := strct(map[string]field{
		"cron": {"Cron", nil}, "tz": {"Tz", nil}, "scale": {"Scale", nil}, "capacity": {"Capacity", nil},
		"refill_amount": {"RefillAmount", nil}, "refill_period_seconds": {"RefillPeriodSeconds", nil},
	})
	limitDecl := strct(map[string]field{
		"capacity": {"Capacity", nil}, "burst": {"Capacity", nil}, "refill_amount": {"RefillAmount", nil},
		"refill_period": {"RefillPeriod", nil}, "soft": {"Soft", nil}, "reset_after": {"ResetAfter", nil},
		"schedule": {"Schedule", list(scheduleEntry)}, "reset_schedule": {"ResetSchedule", list(scheduleEntry)},
	})
	levelConfig := strct(map[string]field{
		"limits": {"Limits", names(limitDecl)}, "disabled": {"Disabled", nil}, "cascade": {"Cascade", nil},
	})
	return strct(map[string]field{
		"namespace": {"Namespace", nil}, "namespace_id": {"NamespaceId", nil},
		"system": {"System", strct(map[string]field{
			"on_unavailable": {"OnUnavailable", nil}, "limits": {"Limits", names(limitDecl)},
		})},
		"resources": {"Resources", names(levelConfig)},
		"entities": {"Entities", names(strct(map[string]field{
			"resources": {"Resources", names(levelConfig)},
		}))},
	})
}

func convert(path string, v any, sh *shape) (any, error) {
	if sh == nil {
		return scalar(path, v)
	}
	if sh.list {
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want a list", path)
		}
		out := make([]any, len(items))
		for i, it := range items {
			c, err := convert(fmt.Sprintf("%s[%d]", path, i), it, sh.each)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a mapping", path)
	}
	out := map[string]any{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, sub := k, sh.each
		if sh.each == nil {
			f, ok := sh.fields[k]
			if !ok {
				return nil, fmt.Errorf("%s: unknown key %q", path+"/"+k, k)
			}
			name, sub = f.name, f.shape
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: both capacity and burst", path)
		}
		c, err := convert(path+"/"+k, m[k], sub)
		if err != nil {
			return nil, err
		}
		out[name] = c
	}
	return out, nil
}

// scalar is v as the string CloudFormation would deliver.
func scalar(path string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	default:
		return "", fmt.Errorf("%s: want a scalar, got %T", path, v)
	}
}

// buildLimits adds the Custom::ZaeLimiterLimits resource of props.Limits,
// applied after the version stamp; on delete it removes what the manifest
// manages, unless RetainOnDelete (docs/decisions.md P39).
func (b *builder) buildLimits() error {
	lim := b.s.Limits
	if lim == nil {
		return nil
	}
	raw, err := os.ReadFile(lim.ManifestFile)
	if err != nil {
		return fmt.Errorf("construct: limits: %w", err)
	}
	props, err := LimitsProperties(raw)
	if err != nil {
		return fmt.Errorf("construct: %s: %w", lim.ManifestFile, err)
	}
	props["TableName"] = b.table.Ref()
	removal := awscdk.RemovalPolicy_DESTROY
	if lim.RetainOnDelete {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	cr := awscdk.NewCustomResource(b.scope(), jsii.String("Limits"), &awscdk.CustomResourceProps{
		ServiceToken:  b.provisioner.AttrArn(),
		ResourceType:  jsii.String(LimitsResourceType),
		Properties:    &props,
		RemovalPolicy: removal,
	})
	logicalID(cr.Node().DefaultChild().(awscdk.CfnElement), "Limits")
	cr.Node().AddDependency(b.stamp)
	return nil
}
