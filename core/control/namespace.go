package control

import (
	"context"
	"errors"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// RegisterNamespace registers the namespace name and returns its id (11
// characters, minted at registration; docs/design.md §2). A name already
// registered returns its id and records nothing; a new registration is
// recorded in the new namespace's audit trail (SystemTrail,
// `namespace_registered`).
func (c *Controls) RegisterNamespace(ctx context.Context, name, principal string) (string, error) {
	if id, err := c.store.ResolveNamespace(ctx, name); err == nil {
		return id, nil
	} else if nf := (*config.NamespaceNotFoundError)(nil); !errors.As(err, &nf) {
		return "", err
	}
	id, err := c.writer.RegisterNamespace(ctx, name)
	if err != nil {
		return "", err
	}
	return id, c.recordAudit(ctx, id, SystemTrail, "namespace_registered", principal, "", map[string]string{"name": name})
}
