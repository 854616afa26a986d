package control

import (
	"context"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// CreateEntity creates an entity (see config.Writer.CreateEntity) and
// records it in the audit trail.
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

// DeleteEntity deletes an entity and everything under its key (see
// config.Writer.DeleteEntity) and records it in the audit trail, which
// outlives it.
func (c *Controls) DeleteEntity(ctx context.Context, ns, id, principal string) error {
	defer c.changing()()
	if err := c.writer.DeleteEntity(ctx, ns, id); err != nil {
		return err
	}
	return c.recordAudit(ctx, ns, id, "entity_deleted", principal, "", nil)
}
