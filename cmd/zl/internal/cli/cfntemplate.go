package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
)

// LimitsResourceType is the CloudFormation type of a limits resource: any
// custom resource type the provisioner serves but its version stamp is a
// limits resource (docs/design.md §12); the stack's own templates and the
// README use this one.
const LimitsResourceType = "Custom::ZaeLimiterLimits"

// stackParameter is the template's parameter naming the limiter stack.
const stackParameter = "LimiterStack"

var logicalIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,255}$`)

// limitsTemplate is `zl limits cfn-template`: the manifest as a limits
// resource in a template of its own, which imports the limiter stack's
// provisioner and table.
func (a *App) limitsTemplate(f *manifestFlags, stack, logicalID string) error {
	m, err := a.readManifest(f)
	if err != nil {
		return err
	}
	if !logicalIDPattern.MatchString(logicalID) {
		return usageErrorf("--logical-id %q: a logical id is letters and digits only", logicalID)
	}
	for _, n := range f.takeOver {
		if _, _, err := provision.ParseOwner(strings.TrimSpace(n)); err != nil {
			return &UsageError{Err: fmt.Errorf("--take-over-from: %w", err)}
		}
	}
	if stack == "" {
		stack = a.flags.table
	}
	props := m.Properties()
	delete(props, "TableName")
	sub := func(export string) map[string]any {
		return map[string]any{"Fn::ImportValue": map[string]any{"Fn::Sub": "${" + stackParameter + "}-" + export}}
	}
	param := map[string]any{
		"Type":           "String",
		"Description":    "The limiter stack's name: its ProvisionerArn and TableName exports serve this resource",
		"AllowedPattern": "^[A-Za-z][A-Za-z0-9-]*$",
	}
	if stack != "" {
		param["Default"] = stack
	}
	resProps := ordered{{"ServiceToken", sub("ProvisionerArn")}, {"TableName", sub("TableName")}}
	if len(f.takeOver) > 0 {
		resProps = append(resProps, kv{"TakeOverFrom", strings.Join(f.takeOver, ",")})
	}
	rest := make([]string, 0, len(props))
	for k := range props {
		rest = append(rest, k)
	}
	sort.Slice(rest, func(i, j int) bool {
		return propertyRank(rest[i]) < propertyRank(rest[j]) || (propertyRank(rest[i]) == propertyRank(rest[j]) && rest[i] < rest[j])
	})
	for _, k := range rest {
		resProps = append(resProps, kv{k, props[k]})
	}
	tmpl := ordered{
		{"AWSTemplateFormatVersion", "2010-09-09"},
		{"Description", fmt.Sprintf("Limits of namespace %s, applied by the limiter stack's provisioner (zl limits cfn-template)", m.Namespace)},
		{"Parameters", ordered{{stackParameter, param}}},
		{"Resources", ordered{{logicalID, ordered{{"Type", LimitsResourceType}, {"Properties", resProps}}}}},
	}
	if a.flags.outputSet && a.Format() == output.FormatJSON {
		enc := json.NewEncoder(a.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(tmpl)
	}
	enc := yaml.NewEncoder(a.env.Stdout)
	enc.SetIndent(2)
	if err := enc.Encode(tmpl.node()); err != nil {
		return err
	}
	return enc.Close()
}

// propertyRank orders a limits resource's properties as people write them.
func propertyRank(k string) int {
	switch k {
	case "Namespace":
		return 0
	case "NamespaceId":
		return 1
	case "System":
		return 2
	case "Resources":
		return 3
	case "Entities":
		return 4
	}
	return 5
}

// kv and ordered are a mapping whose keys keep their order in YAML and
// JSON.
type kv struct {
	k string
	v any
}

type ordered []kv

// MarshalJSON writes the keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// node is o as a YAML mapping, keys in order; nested plain maps by sorted
// key.
func (o ordered) node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range o {
		n.Content = append(n.Content, output.YAMLString(e.k), toNode(e.v))
	}
	return n
}

func toNode(v any) *yaml.Node {
	switch x := v.(type) {
	case ordered:
		return x.node()
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			n.Content = append(n.Content, output.YAMLString(k), toNode(x[k]))
		}
		return n
	case string:
		return output.YAMLString(x)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range x {
			n.Content = append(n.Content, toNode(e))
		}
		return n
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(v)}
	}
	return &n
}
