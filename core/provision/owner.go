package provision

import (
	"errors"
	"fmt"
	"slices"
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
	// StackID is the stack's ARN, when known. It is part of the owner's
	// identity: the owner record keeps it, and a request of the same stack
	// name and logical id from another stack (one deleted and created
	// again under its name without its Delete releasing, or another
	// account's) is refused (docs/design.md §12 "Ownership").
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
	// (moving limits between stacks); each must consent (its own
	// AllowTakeOverBy naming this owner, or an operator's
	// Provisioner.AllowTakeOver), unless it has no owner record left (its
	// resource was deleted). Targets held by another resource of the same
	// stack (the same StackID) are taken over without being named (a
	// renamed logical id, a replacement).
	TakeOverFrom []Owner
	// AllowTakeOverBy are the owners this owner consents to hand its
	// targets to: a later apply of one of them that names this owner in
	// TakeOverFrom may take them. The owner record keeps the list each
	// apply gives.
	AllowTakeOverBy []Owner
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
// owner key from, whose record is holder; why says what is missing when
// it may not.
func (r Request) mayTakeOver(from string, holder State) (ok bool, why string) {
	if sameStack(from, r.Owner.Key()) && (holder.StackID == "" || r.Owner.StackID == "" || holder.StackID == r.Owner.StackID) {
		return true, ""
	}
	named := false
	for _, o := range r.TakeOverFrom {
		named = named || o.Key() == from
	}
	switch {
	case !named:
		return false, "remove it from this manifest, or name its owner in TakeOverFrom to move it"
	case from == LegacyOwnerKey || !holder.Found:
		// An earlier provisioner's record, or an owner whose resource was
		// deleted: nobody is left to consent.
		return true, ""
	case slices.Contains(holder.AllowTakeOverBy, r.Owner.Key()), slices.Contains(holder.TakeOverGranted, r.Owner.Key()):
		return true, ""
	}
	return false, "its owner has not consented: add " + r.Owner.takeOverName() + " to the AllowTakeOverBy of its owner, or run zl limits allow-take-over"
}

// allowTakeOverKeys are the keys of r.AllowTakeOverBy, sorted and
// distinct (nil for none), as the owner record keeps them.
func (r Request) allowTakeOverKeys() []string {
	var keys []string
	for _, o := range r.AllowTakeOverBy {
		keys = append(keys, o.Key())
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// takeOverName is the owner as TakeOverFrom and AllowTakeOverBy name it.
func (o Owner) takeOverName() string {
	if o.Stack == "" {
		return o.Key()
	}
	return o.Stack + "/" + o.Name
}

// Conflict is one target a request names that another owner holds.
type Conflict struct {
	// Target is the target held.
	Target manifest.Target
	// Owner is the holder's key; Holder names it for a person.
	Owner, Holder string
	// Why says what the request lacks to take it.
	Why string
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
		if c.Why != "" && (i == len(e.Conflicts)-1 || e.Conflicts[i+1].Why != c.Why || e.Conflicts[i+1].Owner != c.Owner) {
			fmt.Fprintf(&b, " (%s)", c.Why)
		}
	}
	return b.String()
}

// StackMismatchError refuses a request whose owner (stack name and logical
// id) is recorded in the namespace for another stack: the same name in
// another account or region, or a stack deleted and created again whose
// Delete never reached the provisioner. Nothing was written. The recorded
// stack's Delete releases it; if that stack is gone, an operator releases
// it (zl limits release --owner).
type StackMismatchError struct {
	// Namespace is the namespace's id.
	Namespace string
	// Owner is the request's owner.
	Owner Owner
	// Recorded is the StackId the owner record names.
	Recorded string
}

// Error implements error.
func (e *StackMismatchError) Error() string {
	return fmt.Sprintf("provision: namespace %s: %s is held by the stack %s, not by %s; "+
		"delete that stack (its Delete releases what it holds), or, if it no longer exists, "+
		"release it with zl limits release --owner %s", e.Namespace, e.Owner.Key(), e.Recorded, e.Owner.StackID, e.Owner.takeOverName())
}
