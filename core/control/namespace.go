package control

import (
	"context"
)

// RegisterNamespace registers the namespace name and returns its id (11
// characters, minted at registration; docs/design.md §2). A name already
// registered returns its id and records nothing; a new registration is
// recorded in the new namespace's audit trail (SystemTrail,
// `namespace_registered`).
func (c *Controls) RegisterNamespace(ctx context.Context, name, principal string) (string, error) {
	id, created, err := c.writer.RegisterNamespace(ctx, name)
	if err != nil || !created {
		return id, err
	}
	return id, c.recordAudit(ctx, id, SystemTrail, "namespace_registered", principal, "", map[string]string{"name": name})
}

// DeleteNamespace deletes the live namespace name and returns its id,
// recorded in the namespace's audit trail (SystemTrail,
// `namespace_deleted`). The delete is soft (docs/design.md §2): the name
// stops resolving, so limiters can no longer open it by name and the name
// may be registered again, while the namespace's config, entities, buckets
// and audit trail stay in the table until RecoverNamespace brings it back.
// An unregistered name is a *config.NamespaceNotFoundError.
func (c *Controls) DeleteNamespace(ctx context.Context, name, principal string) (string, error) {
	defer c.changing()()
	id, err := c.writer.DeleteNamespace(ctx, name)
	if err != nil {
		return "", err
	}
	return id, c.recordAudit(ctx, id, SystemTrail, "namespace_deleted", principal, "", map[string]string{"name": name})
}

// RecoverNamespace brings back the deleted namespace whose id is id, with
// everything it held, and returns its name; recorded in its audit trail
// (SystemTrail, `namespace_recovered`). An unknown id is a
// *config.NamespaceNotFoundError, a namespace that is not deleted a
// *config.NamespaceStateError, and a name registered again since the
// delete a *config.NamespaceNameTakenError: nothing is written then.
func (c *Controls) RecoverNamespace(ctx context.Context, id, principal string) (string, error) {
	defer c.changing()()
	name, err := c.writer.RecoverNamespace(ctx, id)
	if err != nil {
		return "", err
	}
	return name, c.recordAudit(ctx, id, SystemTrail, "namespace_recovered", principal, "", map[string]string{"name": name})
}
