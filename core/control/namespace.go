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
