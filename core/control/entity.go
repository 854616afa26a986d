package control

import (
	"context"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// CreateEntity creates entity id in namespace ns and records it in its
// audit trail. opts names a parent (which must exist; an entity can be
// neither its own parent nor its own ancestor), the entity's default for
// cascading to it, a display name and metadata. An entity need not be
// created to acquire or to carry limits: creating one gives it a parent.
// An existing id is a *config.EntityExistsError, a missing parent a
// *config.EntityNotFoundError.
func (c *Controls) CreateEntity(ctx context.Context, ns, id string, opts config.EntityOptions, principal string) (config.Entity, error) {
	defer c.changing()()
	e, err := c.writer.CreateEntity(ctx, ns, id, opts)
	if err != nil {
		return e, err
	}
	details := map[string]string{"parent_id": opts.ParentID}
	if opts.Cascade {
		details["cascade"] = "true"
	}
	return e, c.recordAudit(ctx, ns, id, "entity_created", principal, "", details)
}

// DeleteEntity deletes entity id of namespace ns with everything it owns —
// its limits and settings on every resource, its buckets, usage snapshots
// and reset and top-up records — and records it in its audit trail, which
// outlives it. Its children keep their parent id. A missing entity is a
// *config.EntityNotFoundError; a call that fails part way leaves the
// entity in place and can be repeated.
func (c *Controls) DeleteEntity(ctx context.Context, ns, id, principal string) error {
	defer c.changing()()
	if err := c.writer.DeleteEntity(ctx, ns, id); err != nil {
		return err
	}
	return c.recordAudit(ctx, ns, id, "entity_deleted", principal, "", nil)
}
