package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// resetCommand is `zl reset`: refill a bucket's limits (docs/design.md §8).
func (a *App) resetCommand() *cobra.Command {
	var limits []string
	var opID string
	cmd := &cobra.Command{
		Use:   "reset ENTITY RESOURCE",
		Short: "Refill an entity's bucket on a resource (asks first)",
		Long: `Refill the limits of an entity's bucket on a resource to their capacity
(--limit names some; default every limit), forgiving any debt, in one
transaction over every shard of the bucket; a calendar quota gets its allowance
back for the rest of its period. The bucket must exist (the entity has acquired
on the resource). Recorded in the entity's audit trail.

--op-id makes the reset idempotent (a ticket id, say): running it again with
the same id changes nothing and says so; without one, an id is minted and
printed. Asks for confirmation on a terminal; elsewhere it needs --yes.`,
		Example: `  zl reset key-1 gpt-4
  zl reset key-1 gpt-4 --limit rpm --op-id ticket-4711 --yes`,
		Args: exactArgs("ENTITY", "RESOURCE"),
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.reset(ctx, args[0], args[1], limits, opID)
		}),
	}
	cmd.Flags().StringArrayVar(&limits, "limit", nil, "a limit to refill (repeatable; default every limit)")
	cmd.Flags().StringVar(&opID, "op-id", "", "the operation's idempotency key (default: a minted one)")
	return cmd
}

// operationView is what a reset or top-up did.
type operationView struct {
	Namespace     string           `json:"namespace"`
	Entity        string           `json:"entity"`
	Resource      string           `json:"resource"`
	Operation     string           `json:"operation"`
	OperationID   string           `json:"operation_id"`
	Replayed      bool             `json:"replayed"`
	ShardsWritten int              `json:"shards_written"`
	ShardCount    int64            `json:"shard_count"`
	Granted       map[string]int64 `json:"granted"`
}

func (v operationView) Tables() []output.Table {
	t := output.Table{
		Title:   fmt.Sprintf("%s of entity %s on %s (namespace %s), operation %s", strings.ToUpper(v.Operation[:1])+v.Operation[1:], v.Entity, v.Resource, v.Namespace, v.OperationID),
		Columns: []string{"LIMIT", "GRANTED"},
	}
	names := make([]string, 0, len(v.Granted))
	for n := range v.Granted {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Rows = append(t.Rows, []string{n, strconv.FormatInt(v.Granted[n], 10)})
	}
	t.Caption = fmt.Sprintf("%d of %d shard(s) written.", v.ShardsWritten, v.ShardCount)
	if v.Replayed {
		t.Caption = "Replayed: operation " + v.OperationID + " had run already; nothing was written, this is its first result."
	}
	return []output.Table{t}
}

func (a *App) operationTarget(entity, resource, opID string) error {
	if err := schema.ValidateEntityID(entity); err != nil {
		return err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return err
	}
	if opID != "" {
		if err := schema.ValidateOperationID(opID); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) reset(ctx context.Context, entity, resource string, limits []string, opID string) error {
	if err := a.operationTarget(entity, resource, opID); err != nil {
		return err
	}
	for _, n := range limits {
		if err := schema.ValidateLimitName(n); err != nil {
			return err
		}
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	which := "every limit"
	if len(limits) > 0 {
		which = "limits " + strings.Join(limits, ", ")
	}
	if err := a.Confirm("reset", fmt.Sprintf("Refill %s of entity %s on %s (namespace %s), forgiving any debt?", which, entity, resource, a.flags.namespace)); err != nil {
		return err
	}
	op, err := ctl.Reset(ctx, ns, entity, resource, limits, control.OperationOptions{OperationID: opID, Principal: a.Principal()})
	if err != nil {
		return explainOperation(err, entity, resource)
	}
	return a.renderOperation("reset", entity, resource, op)
}

// explainOperation says what to do about a reset or top-up's refusals.
func explainOperation(err error, entity, resource string) error {
	if schema.IsValidationError(err) && strings.Contains(err.Error(), "no bucket") {
		return withHint(err, "entity %s has not acquired on %s yet, so there is nothing to change", entity, resource)
	}
	return err
}

func (a *App) renderOperation(kind, entity, resource string, op control.Operation) error {
	if op.Replayed {
		a.Infof("Operation %s had run already: nothing was written; this is its first result.", op.OperationID)
	}
	granted := op.Granted
	if granted == nil {
		granted = map[string]int64{}
	}
	return a.Render(operationView{
		Namespace: a.flags.namespace, Entity: entity, Resource: resource, Operation: kind,
		OperationID: op.OperationID, Replayed: op.Replayed, ShardsWritten: op.ShardsWritten, ShardCount: op.ShardCount, Granted: granted,
	})
}
