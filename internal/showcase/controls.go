package showcase

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// ctlResource is the operator step's resource.
const ctlResource = "images/generate"

// controls shows the operator controls: a resource disabled with one entity
// carved out, a soft limit overdrawn, a bypassed entity whose wcu still
// binds, and a top-up and a reset with their audit events.
func (d *demo) controls(ctx context.Context) error {
	clk := clock.NewManual(d.now.Add(time.Hour))
	lim, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	// The controls clear this process's limiter caches around each write.
	ctl := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	const ops = "ops@example.com"
	limits := []limit.Limit{limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000).AsSoft()}
	if _, err := ctl.SetResourceLimits(ctx, d.ns, ctlResource, limits, ops); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "resource %s: %s (tpm is soft: metered, may go into debt, never refuses)\n", ctlResource, limitList(limits))
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, err := lim.Acquire(ctx, u, ctlResource, limiter.Consume{"rpm": 1}); err != nil {
			return err
		}
	}
	outcome := func(entity string, consume limiter.Consume) (*limiter.Lease, string, error) {
		lease, err := lim.Acquire(ctx, entity, ctlResource, consume)
		var dis *limiter.ResourceDisabled
		var rle *limiter.RateLimitExceeded
		switch {
		case err == nil && lease.Bypassed():
			return lease, "admitted (bypassed)", nil
		case err == nil:
			return lease, "admitted", nil
		case errors.As(err, &dis):
			return nil, "403 " + err.Error(), nil
		case errors.As(err, &rle):
			return nil, "429", nil
		}
		return nil, "", err
	}

	p, err := ctl.SetAccess(ctx, d.ns, "", ctlResource, config.AccessDisabled, ops)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "disable the resource: %d buckets re-stamped before the call returned\n", p.Stamped)
	if p, err = ctl.SetAccess(ctx, d.ns, "u1", ctlResource, config.AccessEnforce, ops); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "carve u1 out (disabled = false on its own config): %d bucket re-stamped\n", p.Stamped)
	for _, u := range []string{"u1", "u2"} {
		_, out, err := outcome(u, limiter.Consume{"rpm": 1})
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %-3s %s\n", u, out)
	}
	if _, err := ctl.SetAccess(ctx, d.ns, "", ctlResource, config.AccessInherit, ops); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "re-enable the resource; u2 asks 700 tpm twice against the soft 1000:")
	for range 2 {
		lease, out, err := outcome("u2", limiter.Consume{"rpm": 1, "tpm": 700})
		if err != nil {
			return err
		}
		left, _ := lease.Remaining("tpm")
		fmt.Fprintf(d.out, "  u2  %s, tpm %d left, overdrawn %v\n", out, left, lease.Overdrawn())
	}

	if _, err := ctl.SetAccess(ctx, d.ns, "u3", ctlResource, config.AccessBypass, ops); err != nil {
		return err
	}
	before, err := d.bucketItem(ctx, "u3", ctlResource)
	if err != nil {
		return err
	}
	admitted := 0
	for range 20 {
		if _, out, err := outcome("u3", limiter.Consume{"rpm": 1}); err != nil {
			return err
		} else if strings.HasPrefix(out, "admitted") {
			admitted++
		}
	}
	after, err := d.bucketItem(ctx, "u3", ctlResource)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "bypass u3, then 20 requests against rpm 10: %d admitted; rpm tk %s → %s (nothing debited), "+
		"rpm tc %s → %s (counted), wcu %s → %s (every write still pays its write-capacity token)\n",
		admitted, numStr(before, "b_rpm_tk"), numStr(after, "b_rpm_tk"), numStr(before, "b_rpm_tc"), numStr(after, "b_rpm_tc"),
		numStr(before, "b_wcu_tk"), numStr(after, "b_wcu_tk"))

	top, err := ctl.TopUp(ctx, d.ns, "u2", ctlResource, map[string]int64{"rpm": 3}, control.OperationOptions{OperationID: "purchase-42", Principal: ops})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "top up u2's rpm by 3 (operation %s): granted %d on %d shard\n", top.OperationID, top.Granted["rpm"], top.ShardsWritten)
	if top, err = ctl.TopUp(ctx, d.ns, "u2", ctlResource, map[string]int64{"rpm": 3}, control.OperationOptions{OperationID: "purchase-42", Principal: ops}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "the same operation id again: replayed %v, nothing written\n", top.Replayed)
	reset, err := ctl.Reset(ctx, d.ns, "u2", ctlResource, nil, control.OperationOptions{Principal: ops})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "reset u2: rpm +%d, tpm +%d (debt forgiven), tc untouched\n", reset.Granted["rpm"], reset.Granted["tpm"])
	for _, who := range []string{control.ResourceTrail(ctlResource), "u2", "u3"} {
		evs, err := ctl.AuditEvents(ctx, d.ns, who)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "audit trail of %s:\n", who)
		for _, ev := range evs {
			fmt.Fprintf(d.out, "  %-17s by %s %s\n", ev.Action, ev.Principal, fmtDetails(ev.Details))
		}
	}
	if err := d.scheduledLimit(ctx); err != nil {
		return err
	}
	if err := d.limitChange(ctx); err != nil {
		return err
	}
	if err := d.dailyQuota(ctx); err != nil {
		return err
	}
	return d.sessionQuota(ctx)
}

func fmtDetails(m map[string]string) string {
	var parts []string
	for _, k := range []string{"scope", "value", "level", "limits", "operation_id", "requested", "granted"} {
		if v, ok := m[k]; ok && v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// bucketItem reads shard 0 of a pair, strongly consistent.
func (d *demo) bucketItem(ctx context.Context, entity, resource string) (map[string]types.AttributeValue, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.table), Key: schema.BucketKey(d.ns, entity, resource, 0).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}
