package limiter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// exampleLimiter opens a limiter on a fresh DynamoDB Local table with a
// clock that stands still, as the examples need reproducible output, and
// the operator API that sets its limits (core/control: every write is
// audited, and buckets already stamped are brought in line).
func exampleLimiter(name string) (*limiter.Limiter, *control.Controls, string, func()) {
	tbl, drop := ddbtest.ExampleTable(name)
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ops := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now})
	ns, err := ops.RegisterNamespace(ctx, "example", "ops@example.com")
	if err != nil {
		panic(err)
	}
	lim, err := limiter.Open(ctx, tbl.DB, tbl.Name, "example", limiter.Options{Clock: clk.Now})
	if err != nil {
		panic(err)
	}
	return lim, ops, ns, drop
}

// An HTTP handler maps Acquire's outcome to a response: the request goes
// on when admitted; a rate limit is a 429 with Retry-After and a JSON body.
func ExampleLimiter_Acquire() {
	lim, ops, ns, drop := exampleLimiter("ExampleLimiter_Acquire")
	defer drop()
	ctx := context.Background()
	if _, err := ops.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("rpm", 2)}, "ops@example.com"); err != nil {
		panic(err)
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		_, err := lim.Acquire(r.Context(), r.Header.Get("X-API-Key"), "gpt-4", limiter.Consume{"rpm": 1})
		var rle *limiter.RateLimitExceeded
		switch {
		case errors.As(err, &rle):
			w.Header().Set("Retry-After", rle.RetryAfterHeader())
			w.WriteHeader(rle.HTTPStatus())
			_ = json.NewEncoder(w).Encode(rle)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat", nil)
		req.Header.Set("X-API-Key", "key-1")
		rec := httptest.NewRecorder()
		handler(rec, req)
		if rec.Code != http.StatusTooManyRequests {
			fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
			continue
		}
		var body struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"), body.Error)
	}
	// Output:
	// 200 ok
	// 200 ok
	// 429 Retry-After: 31 rate_limit_exceeded
}

// A lease takes an estimate at admission; once the real consumption is
// known, Adjust corrects it and Commit writes the correction.
func ExampleLease_Commit() {
	lim, ops, ns, drop := exampleLimiter("ExampleLease_Commit")
	defer drop()
	ctx := context.Background()
	if _, err := ops.SetResourceLimits(ctx, ns, "gpt-4", []limit.Limit{limit.PerMinute("tpm", 10_000)}, "ops@example.com"); err != nil {
		panic(err)
	}
	lease, err := lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"tpm": 2000}) // the estimate
	if err != nil {
		panic(err)
	}
	left, _ := lease.Remaining("tpm")
	fmt.Println("after the estimate:", left)
	used := int64(1200) // what the model call really used
	if err := lease.Adjust("tpm", used-2000); err != nil {
		panic(err)
	}
	if err := lease.Commit(ctx); err != nil {
		panic(err)
	}
	left, _ = lease.Remaining("tpm")
	fmt.Println("after the commit:", left)
	// Output:
	// after the estimate: 8000
	// after the commit: 8800
}

// Limits set at the four levels: the first level with limits for a pair
// wins — the entity on the resource, the entity's default for every
// resource, the resource, the system.
func Example_limitLevels() {
	lim, ops, ns, drop := exampleLimiter("Example_limitLevels")
	defer drop()
	ctx := context.Background()
	rpm := func(n int64) []limit.Limit { return []limit.Limit{limit.PerMinute("rpm", n)} }
	must := func(_ control.Progress, err error) {
		if err != nil {
			panic(err)
		}
	}
	const who = "ops@example.com"
	must(ops.SetSystemLimits(ctx, ns, rpm(60), config.SystemOptions{}, who))
	must(ops.SetResourceLimits(ctx, ns, "gpt-4", rpm(30), who))
	must(ops.SetEntityLimits(ctx, ns, "key-vip", schema.DefaultResource, rpm(100), who))
	must(ops.SetEntityLimits(ctx, ns, "key-vip", "gpt-4", rpm(500), who))
	for _, c := range []struct{ entity, resource string }{
		{"key-1", "embeddings"}, {"key-1", "gpt-4"}, {"key-vip", "embeddings"}, {"key-vip", "gpt-4"},
	} {
		lease, err := lim.Acquire(ctx, c.entity, c.resource, limiter.Consume{"rpm": 1})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s on %s: %d a minute\n", c.entity, c.resource, lease.Statuses()[0].Capacity)
	}
	// Output:
	// key-1 on embeddings: 60 a minute
	// key-1 on gpt-4: 30 a minute
	// key-vip on embeddings: 100 a minute
	// key-vip on gpt-4: 500 a minute
}
