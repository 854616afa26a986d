// Package cfneval evaluates a CloudFormation template for given parameter
// values, the way CloudFormation would before creating anything: it decides
// the conditions, drops the resources and outputs whose condition is false
// and evaluates the intrinsic functions. What cannot be known before a
// deployment stays symbolic: a Ref to a resource is "{Ref:Name}", a GetAtt
// is "{Name.Attribute}", and the pseudo parameters take fixed values.
//
// The infra tests use it to compare the CDK template (which has neither
// parameters nor conditions) with template.yaml as the SAM translator
// renders it (docs/design.md §13). Every scalar becomes a string, as
// CloudFormation passes a parameter: 256 and "256" are the same value.
package cfneval

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pseudo parameter values.
const (
	StackName = "zl-test"
	Region    = "eu-west-1"
	AccountID = "123456789012"
	Partition = "aws"
)

// Resource is one evaluated resource.
type Resource struct {
	Type       string
	Properties map[string]any
	// DependsOn is sorted.
	DependsOn                           []string
	DeletionPolicy, UpdateReplacePolicy string
}

// Output is one evaluated output.
type Output struct {
	Value, Export, Description string
}

// Stack is an evaluated template.
type Stack struct {
	Resources map[string]Resource
	Outputs   map[string]Output
}

// noValue stands for AWS::NoValue until its key or element is removed.
type noValue struct{}

type evaluator struct {
	params     map[string]string
	conditions map[string]any
	decided    map[string]bool
	resources  map[string]bool
}

// Evaluate evaluates template t with the parameter values params; a
// parameter not in params takes its Default. An unknown parameter, a
// parameter without a value, or an intrinsic function it does not know is
// an error.
func Evaluate(t map[string]any, params map[string]string) (*Stack, error) {
	e := &evaluator{params: map[string]string{}, decided: map[string]bool{}, resources: map[string]bool{}}
	declared, _ := t["Parameters"].(map[string]any)
	for name, p := range declared {
		if d, ok := p.(map[string]any)["Default"]; ok {
			e.params[name] = scalarString(d)
		}
	}
	for k, v := range params {
		if _, ok := declared[k]; !ok {
			return nil, fmt.Errorf("cfneval: unknown parameter %s", k)
		}
		e.params[k] = v
	}
	e.conditions, _ = t["Conditions"].(map[string]any)
	resources, _ := t["Resources"].(map[string]any)
	for id := range resources {
		e.resources[id] = true
	}
	out := &Stack{Resources: map[string]Resource{}, Outputs: map[string]Output{}}
	for id, raw := range resources {
		res, on, err := e.resource(raw.(map[string]any))
		if err != nil {
			return nil, fmt.Errorf("cfneval: %s: %w", id, err)
		}
		if on {
			out.Resources[id] = res
		}
	}
	outputs, _ := t["Outputs"].(map[string]any)
	for id, raw := range outputs {
		o, on, err := e.output(raw.(map[string]any))
		if err != nil {
			return nil, fmt.Errorf("cfneval: output %s: %w", id, err)
		}
		if on {
			out.Outputs[id] = o
		}
	}
	return out, nil
}

// resource evaluates one resource; on is false when its condition is.
func (e *evaluator) resource(r map[string]any) (res Resource, on bool, err error) {
	if on, err = e.holds(r["Condition"]); err != nil || !on {
		return res, false, err
	}
	props, err := e.value(r["Properties"])
	if err != nil {
		return res, false, err
	}
	res.Type = r["Type"].(string)
	if m, ok := props.(map[string]any); ok {
		res.Properties = m
	}
	switch d := r["DependsOn"].(type) {
	case string:
		res.DependsOn = []string{d}
	case []any:
		for _, x := range d {
			res.DependsOn = append(res.DependsOn, x.(string))
		}
	}
	sort.Strings(res.DependsOn)
	res.DeletionPolicy, _ = r["DeletionPolicy"].(string)
	res.UpdateReplacePolicy, _ = r["UpdateReplacePolicy"].(string)
	return res, true, nil
}

// output evaluates one output; on is false when its condition is.
func (e *evaluator) output(o map[string]any) (got Output, on bool, err error) {
	if on, err = e.holds(o["Condition"]); err != nil || !on {
		return got, false, err
	}
	if got.Value, err = e.str(o["Value"]); err != nil {
		return got, false, err
	}
	if ex, ok := o["Export"].(map[string]any); ok {
		if got.Export, err = e.str(ex["Name"]); err != nil {
			return got, false, err
		}
	}
	got.Description, _ = o["Description"].(string)
	return got, true, nil
}

// holds evaluates a resource's or output's Condition (nil: always).
func (e *evaluator) holds(name any) (bool, error) {
	if name == nil {
		return true, nil
	}
	return e.condition(name.(string))
}

func (e *evaluator) condition(name string) (bool, error) {
	if v, ok := e.decided[name]; ok {
		return v, nil
	}
	c, ok := e.conditions[name]
	if !ok {
		return false, fmt.Errorf("unknown condition %s", name)
	}
	v, err := e.boolean(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	e.decided[name] = v
	return v, nil
}

// boolean evaluates a condition function.
func (e *evaluator) boolean(v any) (bool, error) {
	fn, arg, ok := intrinsic(v)
	if !ok {
		return false, fmt.Errorf("not a condition: %v", v)
	}
	args, _ := arg.([]any)
	switch fn {
	case "Condition":
		return e.condition(arg.(string))
	case "Fn::Not":
		b, err := e.boolean(args[0])
		return !b, err
	case "Fn::And", "Fn::Or":
		for _, a := range args {
			b, err := e.boolean(a)
			if err != nil {
				return false, err
			}
			if b == (fn == "Fn::Or") {
				return b, nil
			}
		}
		return fn == "Fn::And", nil
	case "Fn::Equals":
		a, err := e.str(args[0])
		if err != nil {
			return false, err
		}
		b, err := e.str(args[1])
		return a == b, err
	}
	return false, fmt.Errorf("unknown condition function %s", fn)
}

// intrinsic reports whether v is a one-key map naming a function.
func intrinsic(v any) (fn string, arg any, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

// str evaluates v and requires a string.
func (e *evaluator) str(v any) (string, error) {
	r, err := e.value(v)
	if err != nil {
		return "", err
	}
	s, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T %v", r, r)
	}
	return s, nil
}

// value evaluates every intrinsic function in v.
func (e *evaluator) value(v any) (any, error) {
	if fn, arg, ok := intrinsic(v); ok {
		return e.call(fn, arg)
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, item := range x {
			r, err := e.value(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, drop := r.(noValue); !drop {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := []any{}
		for i, item := range x {
			r, err := e.value(item)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if _, drop := r.(noValue); !drop {
				out = append(out, r)
			}
		}
		return out, nil
	case nil:
		return nil, nil
	default:
		return scalarString(x), nil
	}
}

func (e *evaluator) call(fn string, arg any) (any, error) {
	args, _ := arg.([]any)
	switch fn {
	case "Ref":
		return e.ref(arg.(string))
	case "Fn::GetAtt":
		var parts []string
		switch a := arg.(type) {
		case string:
			parts = strings.SplitN(a, ".", 2)
		case []any:
			for _, p := range a {
				s, err := e.str(p)
				if err != nil {
					return nil, err
				}
				parts = append(parts, s)
			}
		}
		if len(parts) != 2 || !e.resources[parts[0]] {
			return nil, fmt.Errorf("Fn::GetAtt %v: no such resource", arg)
		}
		return "{" + parts[0] + "." + parts[1] + "}", nil
	case "Fn::If":
		on, err := e.condition(args[0].(string))
		if err != nil {
			return nil, err
		}
		if on {
			return e.value(args[1])
		}
		return e.value(args[2])
	case "Fn::Join":
		sep := args[0].(string)
		list, err := e.value(args[1])
		if err != nil {
			return nil, err
		}
		var parts []string
		for _, p := range list.([]any) {
			s, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("join of %T", p)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, sep), nil
	case "Fn::Split":
		sep := args[0].(string)
		s, err := e.str(args[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		idx, err := e.str(args[0])
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return nil, err
		}
		list, err := e.value(args[1])
		if err != nil {
			return nil, err
		}
		l := list.([]any)
		if i < 0 || i >= len(l) {
			return nil, fmt.Errorf("select %d of %d", i, len(l))
		}
		return l[i], nil
	case "Fn::Sub":
		return e.sub(arg)
	}
	return nil, fmt.Errorf("unsupported function %s", fn)
}

func (e *evaluator) ref(name string) (any, error) {
	switch name {
	case "AWS::NoValue":
		return noValue{}, nil
	case "AWS::StackName":
		return StackName, nil
	case "AWS::Region":
		return Region, nil
	case "AWS::AccountId":
		return AccountID, nil
	case "AWS::Partition":
		return Partition, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if v, ok := e.params[name]; ok {
		return v, nil
	}
	if e.resources[name] {
		return "{Ref:" + name + "}", nil
	}
	return nil, fmt.Errorf("ref %s: no such parameter or resource", name)
}

// sub evaluates Fn::Sub: "${Name}" is a Ref, "${Name.Attr}" a GetAtt,
// "${!Literal}" the text "${Literal}".
func (e *evaluator) sub(arg any) (any, error) {
	body, vars := "", map[string]any{}
	switch a := arg.(type) {
	case string:
		body = a
	case []any:
		body = a[0].(string)
		if m, ok := a[1].(map[string]any); ok {
			vars = m
		}
	}
	var b strings.Builder
	for {
		i := strings.Index(body, "${")
		if i < 0 {
			b.WriteString(body)
			return b.String(), nil
		}
		j := strings.Index(body[i:], "}")
		if j < 0 {
			return nil, errors.New("sub: unclosed ${")
		}
		b.WriteString(body[:i])
		name := body[i+2 : i+j]
		body = body[i+j+1:]
		if strings.HasPrefix(name, "!") {
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		var v any
		var err error
		if x, ok := vars[name]; ok {
			v, err = e.value(x)
		} else if res, attr, dotted := strings.Cut(name, "."); dotted && e.resources[res] {
			v, err = "{"+res+"."+attr+"}", nil
		} else {
			v, err = e.ref(name)
		}
		if err != nil {
			return nil, fmt.Errorf("sub ${%s}: %w", name, err)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("sub ${%s}: not a string", name)
		}
		b.WriteString(s)
	}
}

// scalarString renders a JSON scalar as CloudFormation would pass it.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprint(v)
}
