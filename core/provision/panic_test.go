package provision_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// panicky is a DynamoDB client that panics, once, in the first call trip
// selects: a panic on one of an apply's goroutines cannot be caused for
// real.
type panicky struct {
	provision.DB
	trip  func(op string, pk string, index string) bool
	mu    sync.Mutex
	fired int
}

func (p *panicky) check(op, pk, index string) {
	if !p.trip(op, pk, index) {
		return
	}
	p.mu.Lock()
	first := p.fired == 0
	p.fired++
	p.mu.Unlock()
	if first {
		panic("injected")
	}
}

func pkOf(item map[string]types.AttributeValue) string {
	if s, ok := item[schema.AttrPK].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func (p *panicky) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	p.check("PutItem", pkOf(in.Item), "")
	return p.DB.PutItem(ctx, in, o...)
}

func (p *panicky) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	p.check("UpdateItem", pkOf(in.Key), "")
	return p.DB.UpdateItem(ctx, in, o...)
}

func (p *panicky) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	p.check("Query", "", aws.ToString(in.IndexName))
	return p.DB.Query(ctx, in, o...)
}

const (
	panicBefore = "namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}"
	panicAfter  = panicBefore + "\nresources: {r: {disabled: true}}"
)

// A panic on a goroutine of an apply — an audit worker, or a fan-out
// worker outside the per-bucket recovery of core/control (here the
// discovery of the resource's buckets) — does not escape: it is recovered,
// logged with its stack, and the apply returns a *provision.PanicError
// before its commit. The owner record still says applying and its claims
// cover what the apply wrote, so a retry runs every owed fan-out, and a
// rollback (the previous manifest again) restores the namespace.
func TestPanicInAnApplyWorker(t *testing.T) {
	trips := map[string]func(op, pk, index string) bool{
		"audit": func(op, pk, _ string) bool { return op == "PutItem" && strings.Contains(pk, "/AUDIT#") },
		"fan-out": func(op, _, index string) bool {
			return op == "Query" && index == schema.GSI2 // the access fan-out's discovery of r's buckets
		},
	}
	for name, trip := range trips {
		for _, retry := range []bool{true, false} {
			sub := name + "/rollback"
			if retry {
				sub = name + "/retry"
			}
			t.Run(sub, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				a := resource("stack-a", "Limits")
				e.mustApplyAs(a, panicBefore)
				e.acquire("u", "r")

				var logs bytes.Buffer
				db := &panicky{DB: e.tbl.DB, trip: trip}
				p := provision.New(db, e.tbl.Name, provision.Options{Clock: e.clk.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
				_, err := p.Apply(e.ctx, e.ns, e.parse(panicAfter), a)
				var pe *provision.PanicError
				if !errors.As(err, &pe) || pe.Value != "injected" || !strings.Contains(string(pe.Stack), "goroutine") {
					t.Fatalf("apply: %v, want a *provision.PanicError with its stack", err)
				}
				if db.fired != 1 {
					t.Fatalf("the panic fired %d times", db.fired)
				}
				if !strings.Contains(logs.String(), "a worker panicked") || !strings.Contains(logs.String(), "panicky") {
					t.Fatalf("the panic is not logged with its stack: %s", logs.String())
				}
				st, err := e.prov.ReadState(e.ctx, e.ns, a.Owner)
				if err != nil || !st.Applying || targets(st.Targets) != "system; r" {
					t.Fatalf("after the panic the owner is %+v (%v), want applying, holding system and r", st, err)
				}
				if d, ok := e.item(schema.ResourceConfigKey(e.ns, "r"))[schema.AttrDisabled].(*types.AttributeValueMemberBOOL); !ok || !d.Value {
					t.Fatal("the config was not written before the panic")
				}
				if _, stamped := e.bucket("u", "r")[schema.AttrDisabled]; stamped {
					t.Fatal("the access fan-out ran after the panic")
				}

				if !retry {
					e.mustApplyAs(a, panicBefore)
					if it := e.item(schema.ResourceConfigKey(e.ns, "r")); it != nil {
						t.Fatalf("the rollback left r: %v", it)
					}
					if got := e.acquire("u", "r"); got != "ok" {
						t.Fatalf("u/r after the rollback: %s", got)
					}
					if st, _ := e.prov.ReadState(e.ctx, e.ns, a.Owner); st.Applying || targets(st.Targets) != "system" {
						t.Fatalf("owner after the rollback %+v", st)
					}
					return
				}
				res := e.mustApplyAs(a, panicAfter)
				if !res.StateWritten {
					t.Fatal("the retry did not run the owed fan-outs")
				}
				if _, stamped := e.bucket("u", "r")[schema.AttrDisabled]; !stamped {
					t.Fatal("u/r is not stamped after the retry")
				}
				if got := e.acquire("u", "r"); got != "403" {
					t.Fatalf("u/r after the retry: %s", got)
				}
				if st, _ := e.prov.ReadState(e.ctx, e.ns, a.Owner); st.Applying || len(st.Pending) != 0 {
					t.Fatalf("owner after the retry %+v", st)
				}
				e.proxy.ResetStats()
				e.mustApplyAs(a, panicAfter)
				if w := e.proxy.Writes(); w != "" {
					t.Fatalf("a third apply wrote %s", w)
				}
			})
		}
	}
}

// A panic in one bucket's stamp (inside core/control's fan-out, which
// recovers it per bucket) is that fan-out's failure: the apply commits with
// the problem in Result.Errors and the target's fan-out owed, and the next
// apply of the same manifest finishes it.
func TestPanicInABucketStampIsAnOwedFanout(t *testing.T) {
	e := newEnv(t)
	a := resource("stack-a", "Limits")
	e.mustApplyAs(a, panicBefore)
	e.acquire("u", "r")
	bucketPK := schema.BucketKey(e.ns, "u", "r", 0).PK
	db := &panicky{DB: e.tbl.DB, trip: func(op, pk, _ string) bool { return op == "UpdateItem" && pk == bucketPK }}
	p := provision.New(db, e.tbl.Name, provision.Options{Clock: e.clk.Now, Logger: quietLogger()})
	res, err := p.Apply(e.ctx, e.ns, e.parse(panicAfter), a)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if db.fired != 1 {
		t.Fatalf("the panic fired %d times", db.fired)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "access fan-out resource r") || !strings.Contains(res.Errors[0], ": injected") || strings.Contains(res.Errors[0], "goroutine ") {
		t.Fatalf("errors %q", res.Errors)
	}
	st, _ := e.prov.ReadState(e.ctx, e.ns, a.Owner)
	if st.Applying || targets(st.Pending) != "r" {
		t.Fatalf("owner %+v, want committed with r's fan-out owed", st)
	}
	if _, stamped := e.bucket("u", "r")[schema.AttrDisabled]; stamped {
		t.Fatal("the bucket whose stamp panicked is stamped")
	}
	res = e.mustApplyAs(a, panicAfter)
	if !res.StateWritten || len(res.Changes) != 0 {
		t.Fatalf("the owed fan-out's apply %+v", res)
	}
	if got := e.acquire("u", "r"); got != "403" {
		t.Fatalf("u/r after the owed fan-out ran: %s", got)
	}
	if st, _ := e.prov.ReadState(e.ctx, e.ns, a.Owner); len(st.Pending) != 0 {
		t.Fatalf("still owed %+v", st.Pending)
	}
}
