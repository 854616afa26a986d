package provision

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Attribute names of an earlier provisioner's state record R10
// (docs/design.md §12, Ownership).
const (
	attrManagedSystem    = "managed_system"
	attrManagedResources = "managed_resources"
	attrManagedEntities  = "managed_entities"
	attrPending          = "pending_fanouts"
)

// State is what one owner manages in a namespace: its owner record and the
// claims it holds.
type State struct {
	// Found is false for an owner with no record in the namespace.
	Found bool
	// Owner is the owner's key.
	Owner string
	// PhysicalID is the CloudFormation incarnation that last applied.
	PhysicalID string
	// Applying is true while an apply has recorded its intent and not
	// committed: every fan-out of the owner's targets is owed.
	Applying bool
	// MovingTo is the physical id of a move to another namespace or table
	// that has started (an Update that changed the namespace).
	MovingTo string
	// LastApplied is the RFC 3339 UTC time of the last commit.
	LastApplied string
	// AppliedHash is the manifest hash of the last commit (`sha256:…`), or
	// of the apply in flight while Applying.
	AppliedHash string
	// Targets are the targets the owner holds, in apply order.
	Targets []manifest.Target
	// Pending are held targets whose fan-outs are owed.
	Pending []manifest.Target
	// StackID is the ARN of the stack whose resource the owner is ("" for
	// a manifest owner, or a record written before stacks were recorded).
	StackID string
	// AllowTakeOverBy are the owners (keys) this owner consents to hand
	// its targets to (Request.AllowTakeOverBy of its last apply).
	AllowTakeOverBy []string
	// TakeOverGranted are the owners (keys) an operator allowed to take
	// this owner's targets (Provisioner.AllowTakeOver); the owner's own
	// applies keep them.
	TakeOverGranted []string

	committedHash string // while Applying: the hash of the last commit
}

// stackMismatch reports a record of another stack than o's: both name a
// stack, and not the same one.
func (s State) stackMismatch(o Owner) bool {
	return s.Found && s.StackID != "" && o.StackID != "" && s.StackID != o.StackID
}

// Committed is the manifest hash of the owner's last commit: AppliedHash
// when no apply is in flight; while one is, the hash it started from ("" when
// the owner never committed). A CloudFormation rollback resends the
// properties of that commit.
func (s State) Committed() string {
	if !s.Applying {
		return s.AppliedHash
	}
	return s.committedHash
}

// legacyState is an earlier provisioner's state record (R10): the targets
// it manages and the fan-outs it owes.
type legacyState struct {
	found   bool
	targets []manifest.Target
	pending []manifest.Target
}

func sortTargets(ts []manifest.Target) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Less(ts[j]) })
}

// pendingKey encodes a target as a legacy R10's `pending_fanouts` and a
// claim's sort key name it: `system`, `resource#{r}`, `entity#{e}#{r}` (`#`
// can occur in no name).
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

// readLegacy reads namespace ns's R10 strongly consistently. Malformed
// parts (a name that is not valid, a wrong type) are skipped and logged: an
// item someone edited by hand never stops an apply.
func (p *Provisioner) readLegacy(ctx context.Context, ns string) (legacyState, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(p.table), Key: schema.ProvisionerStateKey(ns).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return legacyState{}, fmt.Errorf("provision: read the legacy state record: %w", err)
	}
	it := out.Item
	var s legacyState
	if len(it) == 0 {
		return s, nil
	}
	s.found = true
	skip := func(what string) {
		p.log.Warn("provision: legacy state record: skipped a malformed part", "part", what)
	}
	seen := map[manifest.Target]bool{}
	add := func(t manifest.Target) {
		if !seen[t] {
			seen[t] = true
			s.targets = append(s.targets, t)
		}
	}
	if v, ok := it[attrManagedSystem].(*types.AttributeValueMemberBOOL); ok && v.Value {
		add(manifest.Target{Kind: manifest.KindSystem})
	}
	for _, r := range stringList(it[attrManagedResources]) {
		if schema.ValidateResource(r) != nil {
			skip(attrManagedResources + ": " + r)
			continue
		}
		add(manifest.Target{Kind: manifest.KindResource, Resource: r})
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
				add(manifest.Target{Kind: manifest.KindEntity, Entity: e, Resource: r})
			}
		}
	}
	for _, k := range stringList(it[attrPending]) {
		if t, ok := parsePendingKey(k); ok {
			s.pending = append(s.pending, t)
		} else {
			skip(attrPending + ": " + k)
		}
	}
	sortTargets(s.targets)
	sortTargets(s.pending)
	return s, nil
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
