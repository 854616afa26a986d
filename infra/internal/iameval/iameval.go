// Package iameval evaluates AWS IAM identity-policy documents for DynamoDB
// and CloudWatch Logs requests. It implements exactly the part of the IAM
// policy language that the infra's generated policies use, and Parse
// refuses everything else with an *UnsupportedError, so that a test can
// never pass on a rule this package does not implement.
//
// Documents come from cfneval: a document is a map with "Version" and
// "Statement", every scalar is a string, and "Action", "Resource" and
// condition values are a string or a list of strings. Resource strings may
// be symbolic ("{Table.Arn}/index/*"): they are glob patterns over the
// whole string and are never parsed as ARNs.
//
// The supported subset, with the rules of the IAM User Guide it follows:
//
//   - Version "2012-10-17" only (earlier versions do not substitute policy
//     variables).
//   - A document of "Version", "Statement" (an object or a list of them)
//     and an optional "Id"; statements of "Effect": "Allow", "Action",
//     "Resource", an optional "Condition" and an optional "Sid" ("Id" and
//     "Sid" are ignored). No Deny, NotAction, NotResource, Principal or
//     NotPrincipal. A request is allowed iff some statement matches it.
//   - Action: matched case-insensitively, with the wildcards * (any run of
//     characters) and ? (one character).
//   - Resource: matched case-sensitively over the whole string with * and ?.
//   - Conditions: every operator of a Condition block must hold, every key
//     under an operator must hold, and a key holds when any of its values
//     does. Condition key names are case-insensitive; operator names must be
//     spelled exactly. The operators are ForAllValues:StringLike on
//     dynamodb:LeadingKeys, and StringEquals and StringLike on
//     aws:PrincipalTag/<tag>.
//   - ForAllValues:StringLike holds iff every partition-key value of the
//     request matches some policy value; it also holds when the request
//     names no partition key (Scan, DescribeTable, logs calls).
//   - StringEquals and StringLike on aws:PrincipalTag/<tag> compare the
//     principal's tag value (case-sensitively) and fail when the principal
//     has no such tag.
//   - Policy variables, in Resource and in condition values:
//     ${aws:PrincipalTag/<tag>} becomes the principal's tag value, looked up
//     with a case-insensitive tag key, and ${*}, ${?} and ${$} become a
//     literal *, ? and $. Characters that come from a variable are always
//     literal: a * inside a tag value is not a wildcard. A variable whose
//     tag the principal does not have has no value: the Resource entry or
//     condition value that holds it matches nothing, and the other entries
//     or values of the same list are still tried.
//
// Matching works on Unicode code points: ? matches one code point.
package iameval

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Version is the only policy language version Parse accepts.
const Version = "2012-10-17"

// The supported condition operators.
const (
	opForAllStringLike = "ForAllValues:StringLike"
	opStringLike       = "StringLike"
	opStringEquals     = "StringEquals"
)

// The supported condition keys (names compare case-insensitively).
const (
	keyLeadingKeys  = "dynamodb:LeadingKeys"
	keyPrincipalTag = "aws:PrincipalTag/"
)

// Request is one request to authorise.
type Request struct {
	// Action is the IAM action, such as "dynamodb:GetItem".
	Action string
	// Resource is the resource the request acts on, an ARN or a symbolic
	// ARN such as "{Table.Arn}/index/GSI4".
	Resource string
	// LeadingKeys are the partition-key values the request names: the
	// context key dynamodb:LeadingKeys. A request that names none (Scan,
	// DescribeTable, logs calls) leaves it empty.
	LeadingKeys []string
	// HasLeadingKeys says the request carries dynamodb:LeadingKeys. It may
	// be true with an empty LeadingKeys (an empty set); LeadingKeys must be
	// empty when it is false.
	HasLeadingKeys bool
	// PrincipalTags are the principal's tags (aws:PrincipalTag/<key>). Keys
	// compare case-insensitively, so two keys that differ only in case are
	// an error.
	PrincipalTags map[string]string
}

// Policy is a parsed identity-policy document. Its zero value is not a
// policy: use Parse.
type Policy struct {
	statements []statement
	parsed     bool
}

// UnsupportedError reports a construct, valid or not in IAM, that is
// outside the subset this package implements.
type UnsupportedError struct {
	// Statement is the index of the statement in the document's Statement
	// list (0 when Statement is a single object), or -1 for the document
	// itself.
	Statement int
	// Element is the policy element: "Version", "Effect", "Action",
	// "Resource", "Condition", or the name of an element not supported
	// (such as "NotAction" or "Principal").
	Element string
	// Operator is the condition operator, when Element is "Condition".
	Operator string
	// Key is the condition key, when Element is "Condition" and the
	// operator is supported.
	Key string
	// Value is the offending value: the version, effect, action, resource
	// or condition value, or the policy variable.
	Value string
	// Reason says what is not supported.
	Reason string
}

// Error gives the statement, element, operator, key and value, and the reason.
func (e *UnsupportedError) Error() string {
	return "iameval: " + describe(e.Statement, e.Element, e.Operator, e.Key, e.Value) + ": unsupported: " + e.Reason
}

// MalformedError reports a document that is not a policy of the expected
// shape: an element of the wrong type, a required element missing, an
// empty list.
type MalformedError struct {
	// Statement is as in UnsupportedError.
	Statement int
	// Element is the policy element, as in UnsupportedError.
	Element string
	// Reason says what is wrong.
	Reason string
}

// Error gives the statement, element and reason.
func (e *MalformedError) Error() string {
	return "iameval: " + describe(e.Statement, e.Element, "", "", "") + ": malformed: " + e.Reason
}

// RequestError reports a Request that cannot be evaluated, or a Policy
// that did not come from Parse.
type RequestError struct {
	// Field is the Request field at fault ("Action", "Resource",
	// "LeadingKeys", "PrincipalTags"), or "Policy".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error gives the field and the reason.
func (e *RequestError) Error() string {
	return "iameval: request " + e.Field + ": " + e.Reason
}

func describe(stmt int, element, operator, key, value string) string {
	var b strings.Builder
	if stmt < 0 {
		b.WriteString("document")
	} else {
		b.WriteString("statement " + strconv.Itoa(stmt))
	}
	if element != "" {
		b.WriteString(" " + element)
	}
	if operator != "" {
		b.WriteString(" " + strconv.Quote(operator))
	}
	if key != "" {
		b.WriteString(" key " + strconv.Quote(key))
	}
	if value != "" {
		b.WriteString(" value " + strconv.Quote(value))
	}
	return b.String()
}

type statement struct {
	actions    []glob    // lower-cased
	resources  []pattern // with wildcards
	conditions []condition
}

type condition struct {
	// leadingKeys: ForAllValues:StringLike on dynamodb:LeadingKeys;
	// otherwise StringEquals or StringLike on the principal tag tag.
	leadingKeys bool
	tag         string
	values      []pattern
}

// Parse parses an identity-policy document. It returns an *UnsupportedError
// for a construct outside the supported subset and a *MalformedError for a
// document of the wrong shape.
func Parse(doc map[string]any) (Policy, error) {
	for k := range doc {
		switch k {
		case "Version", "Statement", "Id":
		default:
			return Policy{}, &UnsupportedError{Statement: -1, Element: k, Reason: "document element"}
		}
	}
	v, ok := doc["Version"]
	if !ok {
		return Policy{}, &UnsupportedError{Statement: -1, Element: "Version", Reason: "a document without a Version (2008-10-17) does not substitute policy variables; want " + Version}
	}
	if s, isStr := v.(string); !isStr || s != Version {
		return Policy{}, &UnsupportedError{Statement: -1, Element: "Version", Value: fmt.Sprint(v), Reason: "want " + Version}
	}
	var raw []any
	switch s := doc["Statement"].(type) {
	case map[string]any:
		raw = []any{s}
	case []any:
		raw = s
	case []map[string]any:
		for _, m := range s {
			raw = append(raw, m)
		}
	case nil:
		return Policy{}, &MalformedError{Statement: -1, Element: "Statement", Reason: "missing"}
	default:
		return Policy{}, &MalformedError{Statement: -1, Element: "Statement", Reason: fmt.Sprintf("want an object or a list of objects, got %T", s)}
	}
	if len(raw) == 0 {
		return Policy{}, &MalformedError{Statement: -1, Element: "Statement", Reason: "empty list"}
	}
	p := Policy{parsed: true}
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return Policy{}, &MalformedError{Statement: i, Reason: fmt.Sprintf("want an object, got %T", r)}
		}
		st, err := parseStatement(i, m)
		if err != nil {
			return Policy{}, err
		}
		p.statements = append(p.statements, st)
	}
	return p, nil
}

func parseStatement(i int, m map[string]any) (statement, error) {
	var st statement
	for k := range m {
		switch k {
		case "Sid", "Effect", "Action", "Resource", "Condition":
		case "NotAction", "NotResource":
			return st, &UnsupportedError{Statement: i, Element: k, Reason: "element"}
		case "Principal", "NotPrincipal":
			return st, &UnsupportedError{Statement: i, Element: k, Reason: "an identity policy names no principal"}
		default:
			return st, &UnsupportedError{Statement: i, Element: k, Reason: "unknown statement element"}
		}
	}
	if sid, ok := m["Sid"]; ok {
		if _, isStr := sid.(string); !isStr {
			return st, &MalformedError{Statement: i, Element: "Sid", Reason: fmt.Sprintf("want a string, got %T", sid)}
		}
	}
	effect, ok := m["Effect"]
	if !ok {
		return st, &MalformedError{Statement: i, Element: "Effect", Reason: "missing"}
	}
	if e, isStr := effect.(string); !isStr || e != "Allow" {
		return st, &UnsupportedError{Statement: i, Element: "Effect", Value: fmt.Sprint(effect), Reason: `only "Allow"`}
	}

	actions, err := stringList(i, "Action", m)
	if err != nil {
		return st, err
	}
	for _, a := range actions {
		if strings.Contains(a, "${") {
			return st, &UnsupportedError{Statement: i, Element: "Action", Value: a, Reason: "policy variable in Action"}
		}
		st.actions = append(st.actions, plainGlob(strings.ToLower(a)))
	}

	resources, err := stringList(i, "Resource", m)
	if err != nil {
		return st, err
	}
	for _, r := range resources {
		p, err := parseValue(r, true)
		if err != nil {
			err.Statement, err.Element = i, "Resource"
			return st, err
		}
		st.resources = append(st.resources, p)
	}

	if c, ok := m["Condition"]; ok {
		if st.conditions, err = parseConditions(i, c); err != nil {
			return st, err
		}
	}
	return st, nil
}

// stringList reads a required element that is a string or a non-empty list
// of strings.
func stringList(i int, element string, m map[string]any) ([]string, error) {
	v, ok := m[element]
	if !ok {
		return nil, &MalformedError{Statement: i, Element: element, Reason: "missing"}
	}
	out, reason := strings1(v)
	if reason != "" {
		return nil, &MalformedError{Statement: i, Element: element, Reason: reason}
	}
	return out, nil
}

// strings1 reads a string or a non-empty list of strings; reason is
// non-empty when v is neither.
func strings1(v any) (out []string, reason string) {
	switch x := v.(type) {
	case string:
		return []string{x}, ""
	case []string:
		out = x
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Sprintf("want a list of strings, got an element of type %T", e)
			}
			out = append(out, s)
		}
	default:
		return nil, fmt.Sprintf("want a string or a list of strings, got %T", v)
	}
	if len(out) == 0 {
		return nil, "empty list"
	}
	return out, ""
}

func parseConditions(i int, c any) ([]condition, error) {
	block, ok := c.(map[string]any)
	if !ok {
		return nil, &MalformedError{Statement: i, Element: "Condition", Reason: fmt.Sprintf("want an object, got %T", c)}
	}
	if len(block) == 0 {
		return nil, &MalformedError{Statement: i, Element: "Condition", Reason: "empty"}
	}
	var out []condition
	for op, keys := range block {
		if op != opForAllStringLike && op != opStringLike && op != opStringEquals {
			return nil, &UnsupportedError{Statement: i, Element: "Condition", Operator: op,
				Reason: "condition operator (supported: " + opForAllStringLike + ", " + opStringLike + ", " + opStringEquals + ")"}
		}
		km, ok := keys.(map[string]any)
		if !ok {
			return nil, &MalformedError{Statement: i, Element: "Condition", Reason: fmt.Sprintf("operator %s: want an object, got %T", op, keys)}
		}
		if len(km) == 0 {
			return nil, &MalformedError{Statement: i, Element: "Condition", Reason: "operator " + op + ": no condition key"}
		}
		for key, vals := range km {
			cond, err := parseCondition(i, op, key, vals)
			if err != nil {
				return nil, err
			}
			out = append(out, cond)
		}
	}
	return out, nil
}

func parseCondition(i int, op, key string, vals any) (condition, error) {
	var c condition
	unsupported := func(value, reason string) *UnsupportedError {
		return &UnsupportedError{Statement: i, Element: "Condition", Operator: op, Key: key, Value: value, Reason: reason}
	}
	tag, isTag := principalTagKey(key)
	switch {
	case op == opForAllStringLike && strings.EqualFold(key, keyLeadingKeys):
		c.leadingKeys = true
	case op == opForAllStringLike:
		return c, unsupported("", "condition key for "+op+" (supported: "+keyLeadingKeys+")")
	case isTag && tag == "":
		return c, unsupported("", "empty tag key")
	case isTag && !validTagKey(tag):
		return c, unsupported("", "tag key character")
	case isTag:
		c.tag = tag
	default:
		return c, unsupported("", "condition key for "+op+" (supported: "+keyPrincipalTag+"<tag>)")
	}
	values, reason := strings1(vals)
	if reason != "" {
		return c, &MalformedError{Statement: i, Element: "Condition", Reason: "operator " + op + " key " + strconv.Quote(key) + ": " + reason}
	}
	for _, v := range values {
		p, err := parseValue(v, op != opStringEquals)
		if err != nil {
			err.Statement, err.Element, err.Operator, err.Key = i, "Condition", op, key
			return c, err
		}
		c.values = append(c.values, p)
	}
	return c, nil
}

// principalTagKey reports whether name is aws:PrincipalTag/<tag> (the
// prefix compared case-insensitively) and returns <tag>.
func principalTagKey(name string) (tag string, ok bool) {
	if len(name) < len(keyPrincipalTag) || !strings.EqualFold(name[:len(keyPrincipalTag)], keyPrincipalTag) {
		return "", false
	}
	return name[len(keyPrincipalTag):], true
}

// validTagKey reports whether every character of a tag key is one IAM
// allows in a tag key, less the space (which IAM refuses inside a policy
// variable).
func validTagKey(tag string) bool {
	for _, r := range tag {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !strings.ContainsRune("_.:/=+-@", r) {
			return false
		}
	}
	return true
}

// A pattern is a policy string before its variables take values.
type pattern []part

type partKind uint8

const (
	partLiteral partKind = iota // text, every character literal
	partAny                     // * as a wildcard
	partOne                     // ? as a wildcard
	partTag                     // ${aws:PrincipalTag/<text>}
)

type part struct {
	kind partKind
	text string
}

// parseValue parses a Resource entry or a condition value. With wildcards,
// * and ? are wildcards; without (StringEquals), they are literal.
func parseValue(s string, wildcards bool) (pattern, *UnsupportedError) {
	var p pattern
	lit := func(t string) {
		if n := len(p); n > 0 && p[n-1].kind == partLiteral {
			p[n-1].text += t
			return
		}
		p = append(p, part{kind: partLiteral, text: t})
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, &UnsupportedError{Value: s, Reason: "policy variable without a closing brace"}
			}
			name := s[i+2 : i+2+end]
			switch tag, isTag := principalTagKey(name); {
			case name == "*" || name == "?" || name == "$":
				lit(name)
			case isTag && tag != "" && validTagKey(tag):
				p = append(p, part{kind: partTag, text: tag})
			default:
				return nil, &UnsupportedError{Value: "${" + name + "}",
					Reason: "policy variable (supported: ${" + keyPrincipalTag + "<tag>}, ${*}, ${?}, ${$})"}
			}
			i += 2 + end + 1
		case wildcards && s[i] == '*':
			p = append(p, part{kind: partAny})
			i++
		case wildcards && s[i] == '?':
			p = append(p, part{kind: partOne})
			i++
		default:
			j := i + 1
			for j < len(s) && s[j] != '$' && s[j] != '*' && s[j] != '?' {
				j++
			}
			lit(s[i:j])
			i = j
		}
	}
	return p, nil
}

// resolve gives p's variables their values; ok is false when a variable
// has no value.
func (p pattern) resolve(c *reqContext) (g glob, ok bool) {
	for _, pt := range p {
		switch pt.kind {
		case partLiteral:
			g = appendLiteral(g, pt.text)
		case partAny:
			g = append(g, token{wild: '*'})
		case partOne:
			g = append(g, token{wild: '?'})
		case partTag:
			v, found := c.tag(pt.text)
			if !found {
				return nil, false
			}
			g = appendLiteral(g, v)
		}
	}
	return g, true
}

// A glob is a resolved pattern: a sequence of literal code points and the
// wildcards * and ?.
type glob []token

type token struct {
	wild byte // 0 (literal), '*' or '?'
	lit  rune
}

func appendLiteral(g glob, s string) glob {
	for _, r := range s {
		g = append(g, token{lit: r})
	}
	return g
}

// plainGlob is s with every * and ? a wildcard and nothing else special.
func plainGlob(s string) glob {
	var g glob
	for _, r := range s {
		switch r {
		case '*', '?':
			g = append(g, token{wild: byte(r)})
		default:
			g = append(g, token{lit: r})
		}
	}
	return g
}

// literalGlob is s with every character literal.
func literalGlob(s string) glob { return appendLiteral(nil, s) }

// match reports whether the whole of s matches g: * matches any run of code
// points (the empty one too), ? exactly one, a literal itself. It is the
// linear-space greedy matcher that backtracks to the last *.
func (g glob) match(s string) bool {
	rs := []rune(s)
	pi, si := 0, 0
	star, starSi := -1, 0
	for si < len(rs) {
		switch {
		case pi < len(g) && g[pi].wild == '*':
			star, starSi = pi, si
			pi++
		case pi < len(g) && (g[pi].wild == '?' || (g[pi].wild == 0 && g[pi].lit == rs[si])):
			pi++
			si++
		case star >= 0:
			starSi++
			pi, si = star+1, starSi
		default:
			return false
		}
	}
	for pi < len(g) && g[pi].wild == '*' {
		pi++
	}
	return pi == len(g)
}

// reqContext is a validated Request.
type reqContext struct {
	action   string // lower-cased
	resource string
	keys     []string
	tags     map[string]string // keys lower-cased
}

func newContext(r Request) (*reqContext, error) {
	svc, name, ok := strings.Cut(r.Action, ":")
	if !ok || svc == "" || name == "" {
		return nil, &RequestError{Field: "Action", Reason: fmt.Sprintf("%q is not service:Action", r.Action)}
	}
	if r.Resource == "" {
		return nil, &RequestError{Field: "Resource", Reason: "empty"}
	}
	if !r.HasLeadingKeys && len(r.LeadingKeys) > 0 {
		return nil, &RequestError{Field: "LeadingKeys", Reason: "values given with HasLeadingKeys false"}
	}
	c := &reqContext{action: strings.ToLower(r.Action), resource: r.Resource, keys: r.LeadingKeys, tags: map[string]string{}}
	for k, v := range r.PrincipalTags {
		if k == "" {
			return nil, &RequestError{Field: "PrincipalTags", Reason: "empty tag key"}
		}
		lk := strings.ToLower(k)
		if _, dup := c.tags[lk]; dup {
			return nil, &RequestError{Field: "PrincipalTags", Reason: fmt.Sprintf("two tag keys equal to %q but for case", k)}
		}
		c.tags[lk] = v
	}
	return c, nil
}

func (c *reqContext) tag(key string) (string, bool) {
	v, ok := c.tags[strings.ToLower(key)]
	return v, ok
}

// Allows reports whether some statement of p allows r. The error is a
// *RequestError when r cannot be evaluated or p is not from Parse.
func (p Policy) Allows(r Request) (bool, error) {
	if !p.parsed {
		return false, &RequestError{Field: "Policy", Reason: "not from Parse"}
	}
	c, err := newContext(r)
	if err != nil {
		return false, err
	}
	return p.allows(c), nil
}

// AllowedBy reports whether some statement of some policy allows r: with
// Allow statements only, that is IAM's answer for the identity policies of
// one principal. No policies allow nothing. The error wraps a
// *RequestError.
func AllowedBy(policies []Policy, r Request) (bool, error) {
	c, err := newContext(r)
	if err != nil {
		return false, err
	}
	allowed := false
	for i, p := range policies {
		if !p.parsed {
			return false, fmt.Errorf("iameval: policy %d: %w", i, &RequestError{Field: "Policy", Reason: "not from Parse"})
		}
		allowed = allowed || p.allows(c)
	}
	return allowed, nil
}

func (p Policy) allows(c *reqContext) bool {
	for _, st := range p.statements {
		if st.matches(c) {
			return true
		}
	}
	return false
}

func (st statement) matches(c *reqContext) bool {
	return st.matchesAction(c) && st.matchesResource(c) && st.conditionsHold(c)
}

func (st statement) matchesAction(c *reqContext) bool {
	for _, g := range st.actions {
		if g.match(c.action) {
			return true
		}
	}
	return false
}

func (st statement) matchesResource(c *reqContext) bool {
	for _, p := range st.resources {
		if g, ok := p.resolve(c); ok && g.match(c.resource) {
			return true
		}
	}
	return false
}

func (st statement) conditionsHold(c *reqContext) bool {
	for _, cond := range st.conditions {
		if !cond.holds(c) {
			return false
		}
	}
	return true
}

func (cond condition) holds(c *reqContext) bool {
	// A value whose variable has no value matches nothing.
	var globs []glob
	for _, p := range cond.values {
		if g, ok := p.resolve(c); ok {
			globs = append(globs, g)
		}
	}
	anyMatches := func(s string) bool {
		for _, g := range globs {
			if g.match(s) {
				return true
			}
		}
		return false
	}
	if cond.leadingKeys {
		// ForAllValues: every request value matches some policy value,
		// which an empty set of request values does vacuously.
		for _, k := range c.keys {
			if !anyMatches(k) {
				return false
			}
		}
		return true
	}
	v, ok := c.tag(cond.tag)
	return ok && anyMatches(v)
}
