package control_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// lowMinVersion is a client_min_version below every gated feature's.
const lowMinVersion = "0.1.0"

// setClientMin writes the version record's client_min_version as an
// operator of an older deployment left it.
func setClientMin(t *testing.T, tbl *ddbtest.Table, v string) {
	t.Helper()
	_, err := tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: schema.VersionKey().AttributeValues(),
		UpdateExpression:          aws.String("SET #m = :v"),
		ExpressionAttributeNames:  map[string]string{"#m": schema.AttrClientMinVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": schema.Str(v)},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// clientMin is the version record's client_min_version.
func clientMin(t *testing.T, tbl *ddbtest.Table) string {
	t.Helper()
	rec, _, err := config.NewStore(tbl.DB, tbl.Name).ReadVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rec.ClientMinVersion
}

// namespaceItems renders every item of namespace ns, audit trail included.
func namespaceItems(t *testing.T, tbl *ddbtest.Table, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)}
	for {
		page, err := tbl.DB.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it[schema.AttrPK].(*types.AttributeValueMemberS).Value
			if !strings.HasPrefix(pk, ns+"/") {
				continue
			}
			var parts []string
			for _, a := range slices.Sorted(maps.Keys(it)) {
				parts = append(parts, a+"="+ddbtest.Render(it[a]))
			}
			out[pk+" "+it[schema.AttrSK].(*types.AttributeValueMemberS).Value] = strings.Join(parts, " ")
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// TestGateBeforeWrites: every write that stores a feature older readers
// misread raises client_min_version before its first write (docs/design.md
// §2 "The writer gate"). With client_min_version below the feature's
// version and the raise refused as IAM refuses a namespace-scoped role
// (docs/design.md §13), each such write fails with a *config.RatchetError
// that says who can raise it, and nothing of the namespace changes — no
// config, no bucket, no audit event; sent again once the raise is allowed,
// it is written and client_min_version is the feature's. The writes: soft
// limits, a bypass, a cascade policy, a quota top-up, an acquire's own
// soft limits.
func TestGateBeforeWrites(t *testing.T) {
	ctx := context.Background()
	tbl := ddbtest.NewTable(t)
	proxy := faultproxy.Start(t, tbl.Endpoint)
	db := proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ns, _, err := config.NewStore(tbl.DB, tbl.Name).Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	ops := control.New(db, tbl.Name, control.Options{Clock: clk.Now})
	setup := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now})
	svc, err := limiter.New(db, tbl.Name, ns, limiter.Options{Clock: clk.Now, ConfigCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	monthly := schedule.Resets{schedule.MustParseCron("0 0 1 * *")}
	if _, err := setup.SetResourceLimits(ctx, ns, "q", []limit.Limit{limit.Quota("tokens", 1000, monthly, "UTC")}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Acquire(ctx, "u", "q", limiter.Consume{"tokens": 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.SetResourceLimits(ctx, ns, "api", []limit.Limit{limit.PerMinute("rpm", 10)}, "ops"); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, need string
		write      func() error
	}{
		{"soft limits", config.SoftBypassVersion, func() error {
			_, err := ops.SetResourceLimits(ctx, ns, "api", []limit.Limit{limit.PerMinute("rpm", 10).AsSoft()}, "ops")
			return err
		}},
		{"bypass", config.SoftBypassVersion, func() error {
			_, err := ops.SetAccess(ctx, ns, "vip", "api", config.AccessBypass, "ops")
			return err
		}},
		{"cascade policy", config.CascadePolicyVersion, func() error {
			_, err := ops.SetCascade(ctx, ns, "", "api", config.CascadeOn, "ops")
			return err
		}},
		{"quota top-up", config.QuotaTopUpVersion, func() error {
			_, err := ops.TopUp(ctx, ns, "u", "q", map[string]int64{"tokens": 50}, control.OperationOptions{Principal: "ops", OperationID: "top-up-1"})
			return err
		}},
		{"an acquire's soft limits", config.SoftBypassVersion, func() error {
			_, err := svc.Acquire(ctx, "w", "adhoc", limiter.Consume{"rpm": 1}, limiter.WithLimits(limit.PerMinute("rpm", 5).AsSoft()))
			return err
		}},
	}
	for _, c := range cases {
		setClientMin(t, tbl, lowMinVersion)
		before := namespaceItems(t, tbl, ns)
		denied := proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.AccessDenied(),
			Match: func(_ string, body []byte) bool { return strings.Contains(string(body), schema.SKVersion) }})
		err := c.write()
		proxy.Remove(denied)
		var re *config.RatchetError
		if !errors.As(err, &re) || !re.Denied() || re.Need != c.need || !strings.Contains(err.Error(), "namespace-scoped role") {
			t.Errorf("%s with the raise refused: %v, want a *config.RatchetError that says who can raise %s", c.name, err, c.need)
		}
		if d := diffSnapshots(before, namespaceItems(t, tbl, ns)); d != "" {
			t.Errorf("%s with the raise refused wrote to the namespace:\n%s", c.name, d)
		}
		if got := clientMin(t, tbl); got != lowMinVersion {
			t.Errorf("%s: client_min_version %q after a refused raise", c.name, got)
		}
		if err := c.write(); err != nil {
			t.Errorf("%s sent again: %v", c.name, err)
		}
		if got := clientMin(t, tbl); got != c.need {
			t.Errorf("%s sent again: client_min_version %q, want %s", c.name, got, c.need)
		}
	}
}

// diffSnapshots lists the items that differ between two renderings.
func diffSnapshots(before, after map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			d = append(d, k+":\n  before "+before[k]+"\n  after  "+after[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			d = append(d, k+": new "+after[k])
		}
	}
	return strings.Join(d, "\n")
}
