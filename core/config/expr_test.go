package config_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// recordingDB records every expression the Store sends.
type recordingDB struct {
	config.DB
	mu    sync.Mutex
	exprs []string
}

func (r *recordingDB) add(ss ...*string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range ss {
		if s != nil {
			r.exprs = append(r.exprs, *s)
		}
	}
}

func (r *recordingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.add(in.UpdateExpression, in.ConditionExpression)
	return r.DB.UpdateItem(ctx, in, o...)
}

func (r *recordingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.add(in.ConditionExpression)
	return r.DB.DeleteItem(ctx, in, o...)
}

func (r *recordingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.add(it.Put.ConditionExpression)
		case it.Update != nil:
			r.add(it.Update.UpdateExpression, it.Update.ConditionExpression)
		case it.Delete != nil:
			r.add(it.Delete.ConditionExpression)
		case it.ConditionCheck != nil:
			r.add(it.ConditionCheck.ConditionExpression)
		}
	}
	if in.ClientRequestToken != nil {
		panic("TransactWriteItemsInput reused: it already carries a ClientRequestToken")
	}
	return r.DB.TransactWriteItems(ctx, in, o...)
}

// TestExpressionsArePositional: no expression the Store
// builds contains a limit, resource or attribute name; they travel in
// ExpressionAttributeNames only.
func TestExpressionsArePositional(t *testing.T) {
	e := newEnv(t)
	rec := &recordingDB{DB: e.tbl.DB}
	st := config.NewStore(rec, e.tbl.Name)
	ctx, ns := e.ctx, e.ns
	names := []limit.Limit{limit.PerMinute("a.b", 1), limit.PerMinute("x-y", 2).AsSoft(), limit.PerMinute("t_p_m", 3)}
	const res = "openai/gpt-4"
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "org", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer(capability.ConfigWrite{}).CreateEntity(ctx, ns, "k:1@org", config.EntityOptions{ParentID: "org"}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // create, then update
		must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "k:1@org", res, names))
		must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "k:1@org", schema.DefaultResource, names))
		must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, res, names))
		must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, names, config.SystemOptions{OnUnavailable: config.OnUnavailableAllow}))
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "k:1@org", res, names[:1])) // removes two
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "k:1@org", res))
	must(t, st.Writer(capability.ConfigWrite{}).DeleteResourceLimits(ctx, ns, res))
	must(t, st.Writer(capability.ConfigWrite{}).DeleteSystemLimits(ctx, ns))
	must(t, st.WriteVersion(ctx, config.VersionRecord{}))
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntity(ctx, ns, "k:1@org"))

	if len(rec.exprs) < 10 {
		t.Fatalf("only %d expressions recorded", len(rec.exprs))
	}
	forbidden := []string{"a.b", "x-y", "t_p_m", "gpt", "_default_", "k:1", "l_", "disabled", "cascade", "on_unavailable",
		"resources", "GSI", "PK", "client_min_version"}
	for _, x := range rec.exprs {
		for _, f := range forbidden {
			if strings.Contains(x, f) {
				t.Errorf("expression %q contains %q", x, f)
			}
		}
	}
}
