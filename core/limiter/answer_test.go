package limiter_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// updateAnswers keeps what each UpdateItem answered: how many attributes
// the SDK decoded.
type updateAnswers struct {
	limiter.DB
	mu    sync.Mutex
	attrs []int
}

func (u *updateAnswers) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := u.DB.UpdateItem(ctx, in, o...)
	if err == nil {
		u.mu.Lock()
		u.attrs = append(u.attrs, len(out.Attributes))
		u.mu.Unlock()
	}
	return out, err
}

// TestFastPathReadsItsAnswer: on DynamoDB Local, the fast path's image is
// read from the answer's body (the SDK decodes no attribute of it), and the
// lease it gives is the bucket's: the balances after each debit, then a
// rejection where the capacity runs out.
func TestFastPathReadsItsAnswer(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	clk := newClock()
	db := &updateAnswers{DB: tbl.DB}
	lim, err := limiter.New(db, tbl.Name, ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "api", []limit.Limit{limit.PerMinute("rpm", 3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Acquire(ctx, "e", "api", limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err) // the slow path creates the bucket
	}
	db.mu.Lock()
	db.attrs = nil
	db.mu.Unlock()
	for want := int64(1); want >= 0; want-- {
		lease, err := lim.Acquire(ctx, "e", "api", limiter.Consume{"rpm": 1})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := lease.Remaining("rpm"); got != want {
			t.Errorf("remaining %d, want %d", got, want)
		}
	}
	if _, err := lim.Acquire(ctx, "e", "api", limiter.Consume{"rpm": 1}); !limiter.IsRateLimitError(err) {
		t.Fatalf("the fourth acquire of a 3-per-minute limit: %v, want rate limited", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.attrs) != 2 || db.attrs[0] != 0 || db.attrs[1] != 0 {
		t.Errorf("the fast path's two admissions answered with %v SDK-decoded attributes, want [0 0] (read from the body)", db.attrs)
	}
}
