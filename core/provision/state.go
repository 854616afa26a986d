package provision

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Attribute names of the state record R10 (docs/design.md §12).
const (
	attrManagedSystem    = "managed_system"
	attrManagedResources = "managed_resources"
	attrManagedEntities  = "managed_entities"
	attrLastApplied      = "last_applied"
	attrAppliedHash      = "applied_hash"
	// attrPending lists the targets whose bucket fan-outs did not finish;
	// the next apply runs them again even when their config is unchanged
	// (docs/decisions.md P32). Readers that do not know it ignore it.
	attrPending = "pending_fanouts"
)

// State is the state record (R10): what the last apply managed.
type State struct {
	// Found is false for a namespace no apply has reached.
	Found            bool
	ManagedSystem    bool
	ManagedResources []string
	// ManagedEntities maps an entity id to its managed resources (or
	// `_default_`).
	ManagedEntities map[string][]string
	// LastApplied is the ISO-8601 UTC time of the last apply that wrote.
	LastApplied string
	// AppliedHash is the manifest hash of that apply (`sha256:…`).
	AppliedHash string
	// Pending are targets whose fan-outs are owed.
	Pending []manifest.Target
}

// Targets lists what the state manages, in apply order.
func (s State) Targets() []manifest.Target {
	var ts []manifest.Target
	if s.ManagedSystem {
		ts = append(ts, manifest.Target{Kind: manifest.KindSystem})
	}
	for _, r := range s.ManagedResources {
		ts = append(ts, manifest.Target{Kind: manifest.KindResource, Resource: r})
	}
	for e, rs := range s.ManagedEntities {
		for _, r := range rs {
			ts = append(ts, manifest.Target{Kind: manifest.KindEntity, Entity: e, Resource: r})
		}
	}
	sortTargets(ts)
	return ts
}

func sortTargets(ts []manifest.Target) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Less(ts[j]) })
}

// stateOf is the state that manages ts.
func stateOf(ts []manifest.Target) State {
	s := State{ManagedResources: []string{}, ManagedEntities: map[string][]string{}}
	for _, t := range ts {
		switch t.Kind {
		case manifest.KindSystem:
			s.ManagedSystem = true
		case manifest.KindResource:
			s.ManagedResources = append(s.ManagedResources, t.Resource)
		case manifest.KindEntity:
			s.ManagedEntities[t.Entity] = append(s.ManagedEntities[t.Entity], t.Resource)
		}
	}
	sort.Strings(s.ManagedResources)
	for _, rs := range s.ManagedEntities {
		sort.Strings(rs)
	}
	return s
}

// sameManaged reports whether two states manage the same targets.
func sameManaged(a, b State) bool {
	at, bt := a.Targets(), b.Targets()
	if len(at) != len(bt) {
		return false
	}
	for i := range at {
		if at[i] != bt[i] {
			return false
		}
	}
	return true
}

// pendingKey encodes a target for the state record: `system`,
// `resource#{r}`, `entity#{e}#{r}` (`#` can occur in no name).
func pendingKey(t manifest.Target) string {
	switch t.Kind {
	case manifest.KindSystem:
		return "system"
	case manifest.KindResource:
		return "resource#" + t.Resource
	default:
		return "entity#" + t.Entity + "#" + t.Resource
	}
}

func parsePendingKey(s string) (manifest.Target, bool) {
	parts := strings.Split(s, "#")
	switch {
	case len(parts) == 1 && parts[0] == "system":
		return manifest.Target{Kind: manifest.KindSystem}, true
	case len(parts) == 2 && parts[0] == "resource" && schema.ValidateResource(parts[1]) == nil:
		return manifest.Target{Kind: manifest.KindResource, Resource: parts[1]}, true
	case len(parts) == 3 && parts[0] == "entity" && schema.ValidateEntityID(parts[1]) == nil && schema.ValidateConfigScope(parts[2]) == nil:
		return manifest.Target{Kind: manifest.KindEntity, Entity: parts[1], Resource: parts[2]}, true
	}
	return manifest.Target{}, false
}

// ReadState reads namespace ns's state record strongly consistently.
// Malformed parts (a name that is not valid, a wrong type) are skipped and
// logged: an item someone edited by hand never stops an apply.
func (p *Provisioner) ReadState(ctx context.Context, ns string) (State, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(p.table), Key: schema.ProvisionerStateKey(ns).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return State{}, fmt.Errorf("provision: read state: %w", err)
	}
	return p.decodeState(out.Item), nil
}

func (p *Provisioner) decodeState(it map[string]types.AttributeValue) State {
	s := State{ManagedEntities: map[string][]string{}}
	if len(it) == 0 {
		return s
	}
	s.Found = true
	skip := func(what string) { p.log.Warn("provision: state record: skipped a malformed part", "part", what) }
	if v, ok := it[attrManagedSystem].(*types.AttributeValueMemberBOOL); ok {
		s.ManagedSystem = v.Value
	}
	for _, r := range stringList(it[attrManagedResources]) {
		if schema.ValidateResource(r) != nil {
			skip(attrManagedResources + ": " + r)
			continue
		}
		s.ManagedResources = append(s.ManagedResources, r)
	}
	if m, ok := it[attrManagedEntities].(*types.AttributeValueMemberM); ok {
		for e, v := range m.Value {
			if schema.ValidateEntityID(e) != nil {
				skip(attrManagedEntities + ": " + e)
				continue
			}
			for _, r := range stringList(v) {
				if schema.ValidateConfigScope(r) != nil {
					skip(attrManagedEntities + ": " + e + "/" + r)
					continue
				}
				s.ManagedEntities[e] = append(s.ManagedEntities[e], r)
			}
		}
	}
	if v, ok := it[attrLastApplied].(*types.AttributeValueMemberS); ok {
		s.LastApplied = v.Value
	}
	if v, ok := it[attrAppliedHash].(*types.AttributeValueMemberS); ok {
		s.AppliedHash = v.Value
	}
	for _, k := range stringList(it[attrPending]) {
		if t, ok := parsePendingKey(k); ok {
			s.Pending = append(s.Pending, t)
		} else {
			skip(attrPending + ": " + k)
		}
	}
	s = normalizeState(s)
	return s
}

// normalizeState sorts and de-duplicates a state's lists.
func normalizeState(s State) State {
	n := stateOf(s.Targets())
	n.Found, n.LastApplied, n.AppliedHash = s.Found, s.LastApplied, s.AppliedHash
	seen := map[manifest.Target]bool{}
	for _, t := range s.Pending {
		if !seen[t] {
			seen[t] = true
			n.Pending = append(n.Pending, t)
		}
	}
	sortTargets(n.Pending)
	return n
}

// stringList reads an L of S (or an SS) attribute.
func stringList(v types.AttributeValue) []string {
	switch x := v.(type) {
	case *types.AttributeValueMemberL:
		out := make([]string, 0, len(x.Value))
		for _, e := range x.Value {
			if s, ok := e.(*types.AttributeValueMemberS); ok {
				out = append(out, s.Value)
			}
		}
		return out
	case *types.AttributeValueMemberSS:
		return x.Value
	}
	return nil
}

func listOf(ss []string) *types.AttributeValueMemberL {
	l := &types.AttributeValueMemberL{Value: make([]types.AttributeValue, 0, len(ss))}
	for _, s := range ss {
		l.Value = append(l.Value, schema.Str(s))
	}
	return l
}

// writeState puts the state record (R10) with both GSI4 keys.
func (p *Provisioner) writeState(ctx context.Context, ns string, s State) error {
	s = normalizeState(s)
	it := schema.ProvisionerStateItemKeys(ns).Item()
	it[attrManagedSystem] = &types.AttributeValueMemberBOOL{Value: s.ManagedSystem}
	it[attrManagedResources] = listOf(s.ManagedResources)
	ents := make(map[string]types.AttributeValue, len(s.ManagedEntities))
	for e, rs := range s.ManagedEntities {
		ents[e] = listOf(rs)
	}
	it[attrManagedEntities] = &types.AttributeValueMemberM{Value: ents}
	it[attrLastApplied] = schema.Str(p.now().UTC().Format(time.RFC3339Nano))
	it[attrAppliedHash] = schema.Str(s.AppliedHash)
	if len(s.Pending) > 0 {
		keys := make([]string, len(s.Pending))
		for i, t := range s.Pending {
			keys[i] = pendingKey(t)
		}
		it[attrPending] = listOf(keys)
	}
	if _, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: it}); err != nil {
		return fmt.Errorf("provision: write state: %w", err)
	}
	return nil
}
