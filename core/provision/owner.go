package provision

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Owner is who manages a namespace's targets (docs/design.md §12): a
// CloudFormation resource, named by its stack and logical id, or a manifest
// applied outside CloudFormation (the command line, a direct invocation),
// named by the caller. Each target is held by at most one owner.
type Owner struct {
	// Stack is the CloudFormation stack's name; "" for a manifest owner.
	Stack string
	// Name is the resource's logical id, or the manifest owner's name.
	Name string
	// StackID is the stack's ARN, when known: for messages only (a stack
	// deleted and created again under its name is the same owner).
	StackID string
}

// Prefixes of owner keys, the form an owner is stored and named in.
const (
	ownerKeyCloudFormation = "cfn:"
	ownerKeyManifest       = "manifest:"
)

// LegacyOwnerKey is the owner of the targets of an earlier provisioner's
// single state record (the Go provisioner before owners, or the Python
// provisioner; R10 of docs/design.md §2). See Request.AdoptLegacy.
const LegacyOwnerKey = "legacy"

// DefaultManifestOwner is the owner of manifests applied outside
// CloudFormation when the caller names none.
const DefaultManifestOwner = "default"

// CloudFormationOwner is the owner of the custom resource logicalID in the
// stack stackID (its ARN, `arn:aws:cloudformation:{region}:{account}:stack/{name}/{guid}`).
func CloudFormationOwner(stackID, logicalID string) (Owner, error) {
	parts := strings.Split(stackID, "/")
	if len(parts) < 2 || schema.ValidateStackName(parts[1]) != nil {
		return Owner{}, fmt.Errorf("provision: StackId %q does not name a stack", stackID)
	}
	if !isLogicalID(logicalID) {
		return Owner{}, fmt.Errorf("provision: LogicalResourceId %q is not a logical id (1–255 letters and digits)", logicalID)
	}
	return Owner{Stack: parts[1], Name: logicalID, StackID: stackID}, nil
}

// ManifestOwner is the owner of manifests applied outside CloudFormation
// under name ("" is DefaultManifestOwner).
func ManifestOwner(name string) (Owner, error) {
	if name == "" {
		name = DefaultManifestOwner
	}
	if err := schema.ValidateIdentifier("owner", name); err != nil {
		return Owner{}, err
	}
	return Owner{Name: name}, nil
}

// ParseOwner reads an owner as a TakeOverFrom names it: `{stack}/{logical
// id}`, `manifest:{name}`, or `legacy` (the zero Owner with legacy true: see
// Request.AdoptLegacy).
func ParseOwner(s string) (o Owner, legacy bool, err error) {
	switch {
	case s == LegacyOwnerKey:
		return Owner{}, true, nil
	case strings.HasPrefix(s, ownerKeyManifest):
		o, err = ManifestOwner(strings.TrimPrefix(s, ownerKeyManifest))
		return o, false, err
	}
	stack, logical, ok := strings.Cut(strings.TrimPrefix(s, ownerKeyCloudFormation), "/")
	if !ok || schema.ValidateStackName(stack) != nil || !isLogicalID(logical) {
		return Owner{}, false, fmt.Errorf("provision: owner %q is neither {stack}/{logical id}, manifest:{name} nor legacy", s)
	}
	return Owner{Stack: stack, Name: logical}, false, nil
}

func isLogicalID(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// Key is the owner as stored: `cfn:{stack}/{logical id}` or
// `manifest:{name}`.
func (o Owner) Key() string {
	if o.Stack == "" {
		return ownerKeyManifest + o.Name
	}
	return ownerKeyCloudFormation + o.Stack + "/" + o.Name
}

// IsZero reports the zero Owner.
func (o Owner) IsZero() bool { return o.Name == "" }

// String names the owner for a person.
func (o Owner) String() string { return describeOwner(o.Key(), o.StackID) }

// describeOwner names a stored owner key for a person.
func describeOwner(key, stackID string) string {
	switch {
	case key == LegacyOwnerKey:
		return "the state record of an earlier provisioner (R10, physical id {table}/{namespace_id}/limits-provisioner)"
	case strings.HasPrefix(key, ownerKeyManifest):
		return "the manifest owner " + strings.TrimPrefix(key, ownerKeyManifest) + " (applied outside CloudFormation)"
	}
	stack, logical, _ := strings.Cut(strings.TrimPrefix(key, ownerKeyCloudFormation), "/")
	s := "stack " + stack + ", logical id " + logical
	if stackID != "" {
		s += " (" + stackID + ")"
	}
	return s
}

// sameStack reports whether two owner keys are CloudFormation resources of
// one stack.
func sameStack(a, b string) bool {
	stackOf := func(key string) (string, bool) {
		rest, ok := strings.CutPrefix(key, ownerKeyCloudFormation)
		stack, _, _ := strings.Cut(rest, "/")
		return stack, ok
	}
	as, aok := stackOf(a)
	bs, bok := stackOf(b)
	return aok && bok && as == bs
}

// Request says who applies a manifest and how (docs/design.md §12).
type Request struct {
	// Owner is who applies. Required.
	Owner Owner
	// PhysicalID is the CloudFormation physical id of the resource's
	// incarnation that applies; the owner record remembers it, and a
	// Release of another id changes nothing. "" for a manifest owner.
	PhysicalID string
	// TakeOverFrom names owners whose targets this apply may take over
	// (moving limits between stacks). Targets held by another resource of
	// the same stack are taken over without being named (a renamed logical
	// id, a replacement).
	TakeOverFrom []Owner
	// AdoptLegacy makes an earlier provisioner's state record the owner's
	// own: its targets become the owner's previous targets (what this
	// manifest no longer names is removed) and the record is deleted when
	// the apply commits. The provisioner's handler sets it for requests
	// whose physical id is the legacy `{table}/{ns}/limits-provisioner`
	// (the resource that wrote that record) and for a TakeOverFrom naming
	// `legacy`. Without it, the record's targets are held by
	// LegacyOwnerKey.
	AdoptLegacy bool
	// Principal is who applies, as the audit trail records it (the
	// provisioner's handler gives `cfn:{stack}` for a CloudFormation
	// request).
	Principal string
}

func (r Request) validate() error {
	if r.Owner.IsZero() {
		return errors.New("provision: a request needs an owner")
	}
	return nil
}

// mayTakeOver reports whether the request may take a target held by the
// owner key from.
func (r Request) mayTakeOver(from string) bool {
	if sameStack(from, r.Owner.Key()) {
		return true
	}
	for _, o := range r.TakeOverFrom {
		if o.Key() == from {
			return true
		}
	}
	return false
}

// Conflict is one target a request names that another owner holds.
type Conflict struct {
	// Target is the target held.
	Target manifest.Target
	// Owner is the holder's key; Holder names it for a person.
	Owner, Holder string
}

// OwnershipError refuses an apply that names targets another owner holds
// (docs/design.md §12). Nothing was written.
type OwnershipError struct {
	// Namespace is the namespace's id.
	Namespace string
	// Conflicts lists the targets other owners hold, with their holders.
	Conflicts []Conflict
}

// Error implements error. It names each holder once, then the targets.
func (e *OwnershipError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provision: namespace %s: %d target(s) are managed by another owner; ", e.Namespace, len(e.Conflicts))
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s is managed by %s", c.Target.Kind, c.Target, c.Holder)
	}
	b.WriteString(" (remove them from this manifest, or name the owner in TakeOverFrom to move them)")
	return b.String()
}
