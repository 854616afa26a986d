package cli

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// topUpCommand is `zl top-up`: add tokens to a bucket (docs/design.md §8,
// §15).
func (a *App) topUpCommand() *cobra.Command {
	var amounts []string
	var opID string
	cmd := &cobra.Command{
		Use:   "top-up ENTITY RESOURCE --limit NAME=AMOUNT...",
		Short: "Add tokens to an entity's bucket on a resource",
		Long: `Add whole tokens to limits of an entity's bucket on a resource, in one
transaction recorded in the entity's audit trail. A limit that drips gets up to
the amount, capped at its capacity; a calendar quota gets exactly the amount on
top of its allowance, until its next reset (and its bucket is created if the
entity has not acquired yet).

--op-id makes the top-up idempotent (a purchase id, say): running it again with
the same id grants nothing twice and says so; without one, an id is minted and
printed.`,
		Example: `  zl top-up key-1 gpt-4 --limit rpm=3
  zl top-up key-1 gpt-4 --limit tokens=50000 --op-id purchase-981`,
		Args: exactArgs("ENTITY", "RESOURCE"),
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.topUp(ctx, args[0], args[1], amounts, opID)
		}),
	}
	cmd.Flags().StringArrayVar(&amounts, "limit", nil, "NAME=AMOUNT: whole tokens to add to the limit NAME (repeatable; at least one)")
	cmd.Flags().StringVar(&opID, "op-id", "", "the operation's idempotency key (default: a minted one)")
	return cmd
}

func (a *App) topUp(ctx context.Context, entity, resource string, specs []string, opID string) error {
	if err := a.operationTarget(entity, resource, opID); err != nil {
		return err
	}
	if len(specs) == 0 {
		return usageErrorf("zl top-up needs --limit NAME=AMOUNT (e.g. --limit rpm=3)")
	}
	amounts := map[string]int64{}
	for _, s := range specs {
		name, amount, ok := strings.Cut(s, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(amount), 10, 64)
		if !ok || err != nil || n <= 0 {
			return usageErrorf("--limit %q: pass NAME=AMOUNT, a positive whole number of tokens (e.g. --limit rpm=3)", s)
		}
		name = strings.TrimSpace(name)
		if err := schema.ValidateLimitName(name); err != nil {
			return err
		}
		if _, dup := amounts[name]; dup {
			return usageErrorf("--limit %q: limit %s is named twice", s, name)
		}
		amounts[name] = n
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	op, err := ctl.TopUp(ctx, ns, entity, resource, amounts, control.OperationOptions{OperationID: opID, Principal: a.Principal()})
	if err != nil {
		return explainOperation(err, entity, resource)
	}
	return a.renderOperation("top-up", entity, resource, op)
}
