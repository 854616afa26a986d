package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/httplimit"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// The middleware on a chi route: each API key (hashed into its entity) may
// make 2 chat requests a minute and spend 10,000 tokens a minute; a request
// takes an estimate of 1,000 tokens, and the handler reports what it really
// used, which the lease is settled to. The third request in a minute is a
// 429 with Retry-After, the RateLimit fields and a problem body.
func Example_chi() {
	tbl, drop := ddbtest.ExampleTable("Example_chi")
	defer drop()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) // stands still: reproducible output
	ops := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now})
	ns, err := ops.RegisterNamespace(ctx, "example", "ops@example.com")
	if err != nil {
		panic(err)
	}
	_, err = ops.SetResourceLimits(ctx, ns, "chat", []limit.Limit{limit.PerMinute("rpm", 2), limit.PerMinute("tpm", 10_000)}, "ops@example.com")
	if err != nil {
		panic(err)
	}
	lim, err := limiter.Open(ctx, tbl.DB, tbl.Name, "example", limiter.Options{Clock: clk.Now})
	if err != nil {
		panic(err)
	}

	limited, err := httplimit.New(lim, httplimit.Options{
		Entity:   httplimit.EntityFromAPIKey("X-API-Key"),
		Resource: httplimit.FixedResource("chat"),
		Consume:  limiter.Consume{"rpm": 1, "tpm": 1000},
		Usage:    httplimit.UsageFromHeader("X-Tokens-Used", "tpm"),
		Clock:    clk.Now,
	})
	if err != nil {
		panic(err)
	}
	r := chi.NewRouter()
	r.With(limited).Post("/v1/chat", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Tokens-Used", "400") // what the model call really used
		_, _ = io.WriteString(w, "hello\n")
	})

	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat", nil)
		req.Header.Set("X-API-Key", "sk-example")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code, http.StatusText(rec.Code))
		for _, f := range []string{"Retry-After", "RateLimit-Policy", "RateLimit", "Content-Type"} {
			if v := rec.Header().Get(f); v != "" {
				fmt.Printf("  %s: %s\n", f, v)
			}
		}
		if rec.Code == http.StatusTooManyRequests {
			fmt.Print("  ", rec.Body.String())
		}
	}
	// Output:
	// 200 OK
	//   RateLimit-Policy: "rpm";q=2;w=60
	//   RateLimit: "rpm";r=1;t=30
	//   Content-Type: text/plain; charset=utf-8
	// 200 OK
	//   RateLimit-Policy: "rpm";q=2;w=60
	//   RateLimit: "rpm";r=0;t=60
	//   Content-Type: text/plain; charset=utf-8
	// 429 Too Many Requests
	//   Retry-After: 31
	//   RateLimit-Policy: "rpm";q=2;w=60, "tpm";q=10000;w=60
	//   RateLimit: "rpm";r=0;t=31, "tpm";r=9200;t=5
	//   Content-Type: application/problem+json
	//   {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"rpm exhausted; retry after 31 s","violated-policies":["rpm"],"limits":[{"name":"rpm","limit":2,"window_seconds":60,"remaining":0,"requested":1,"exceeded":true,"retry_after_seconds":31},{"name":"tpm","limit":10000,"window_seconds":60,"remaining":9200,"requested":1000,"exceeded":false}]}
}
