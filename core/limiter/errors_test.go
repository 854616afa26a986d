package limiter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func exceeded() *RateLimitExceeded {
	return &RateLimitExceeded{Statuses: []LimitStatus{
		{EntityID: "key-1", Resource: "gpt-4", LimitName: "rpm", Capacity: 60, RefillAmount: 60, RefillPeriod: time.Minute,
			Available: 0, Requested: 1, Exceeded: true, RetryAfter: 1001 * time.Millisecond},
		{EntityID: "key-1", Resource: "gpt-4", LimitName: "tpm", Capacity: 1000, RefillAmount: 1000, RefillPeriod: time.Minute,
			Available: -5, Requested: 100, Exceeded: true, RetryAfter: 6300 * time.Millisecond},
		{EntityID: "key-1", Resource: "gpt-4", LimitName: "rpd", Capacity: 5000, RefillAmount: 5000, RefillPeriod: 24 * time.Hour,
			Available: 4000, Requested: 1},
		{EntityID: "key-1", Resource: "gpt-4", LimitName: "soft", Capacity: 10, RefillAmount: 10, RefillPeriod: time.Second,
			Available: -3, Requested: 5, Soft: true},
	}}
}

func TestRateLimitExceededBottleneck(t *testing.T) {
	e := exceeded()
	p, ok := e.PrimaryViolation()
	if !ok || p.LimitName != "tpm" {
		t.Fatalf("primary = %+v, %v; want tpm", p, ok)
	}
	if got := e.RetryAfterSeconds(); got != 6.3 {
		t.Fatalf("retry after = %v, want 6.3", got)
	}
	if got := e.RetryAfterHeader(); got != "7" {
		t.Fatalf("Retry-After = %q, want 7 (int(6.3)+1)", got)
	}
	if v, p := len(e.Violations()), len(e.Passed()); v != 2 || p != 2 {
		t.Fatalf("violations %d passed %d, want 2 and 2", v, p)
	}
	if !e.Statuses[3].Overdrawn() || e.Statuses[2].Overdrawn() {
		t.Fatal("overdrawn must be soft and negative only")
	}
	if e.HTTPStatus() != 429 {
		t.Fatal("status")
	}
}

func TestRateLimitExceededNever(t *testing.T) {
	e := exceeded()
	e.Statuses[0].Never, e.Statuses[0].RetryAfter = true, 0
	if p, _ := e.PrimaryViolation(); p.LimitName != "rpm" {
		t.Fatalf("a never-satisfiable violation must be the bottleneck, got %s", p.LimitName)
	}
	if !math.IsInf(e.RetryAfterSeconds(), 1) || e.RetryAfterHeader() != "" {
		t.Fatalf("never: seconds %v header %q", e.RetryAfterSeconds(), e.RetryAfterHeader())
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["retry_after_seconds"] != nil || m["retry_after_ms"] != nil {
		t.Fatalf("never must marshal as null: %s", b)
	}
}

func TestRateLimitExceededJSON(t *testing.T) {
	b, err := json.Marshal(exceeded())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Error             string  `json:"error"`
		Message           string  `json:"message"`
		RetryAfterSeconds float64 `json:"retry_after_seconds"`
		RetryAfterMs      int64   `json:"retry_after_ms"`
		Limits            []map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Error != "rate_limit_exceeded" || got.RetryAfterSeconds != 6.3 || got.RetryAfterMs != 6300 || len(got.Limits) != 4 {
		t.Fatalf("json = %s", b)
	}
	first := got.Limits[0]
	for k, want := range map[string]any{
		"entity_id": "key-1", "resource": "gpt-4", "limit_name": "rpm", "kind": "rate",
		"capacity": 60.0, "refill_amount": 60.0, "refill_period_seconds": 60.0,
		"available": 0.0, "requested": 1.0, "exceeded": true, "retry_after_seconds": 1.001, "soft": false,
	} {
		if first[k] != want {
			t.Errorf("limits[0][%s] = %v, want %v", k, first[k], want)
		}
	}
	for _, l := range got.Limits {
		if l["limit_name"] == "wcu" {
			t.Fatal("wcu must never appear")
		}
	}
}

func TestErrorCategories(t *testing.T) {
	unavailable := &RateLimiterUnavailable{Cause: errors.New("throttled"), Stack: "t", EntityID: "e", Resource: "r"}
	validation := schema.NewValidationError("entity_id", "x#y", "cannot contain '#'")
	cases := []struct {
		err                          error
		rateLimit, infra, validation bool
		status                       int
	}{
		{exceeded(), true, false, false, 429},
		{&ResourceDisabled{EntityID: "e", Resource: "r", Level: LevelResource}, false, false, false, 403},
		{ErrLeaseExpired, true, false, false, 0},
		{unavailable, false, true, false, 503},
		{validation, false, false, true, 0},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("acquire: %w", c.err)
		if IsRateLimitError(wrapped) != c.rateLimit || IsInfrastructureError(wrapped) != c.infra || IsValidationError(wrapped) != c.validation {
			t.Errorf("%T: rate %v infra %v validation %v", c.err, IsRateLimitError(wrapped), IsInfrastructureError(wrapped), IsValidationError(wrapped))
		}
		if s, ok := c.err.(interface{ HTTPStatus() int }); ok && s.HTTPStatus() != c.status {
			t.Errorf("%T: status %d, want %d", c.err, s.HTTPStatus(), c.status)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", &LeaseExpiredError{}), ErrLeaseExpired) {
		t.Error("LeaseExpiredError must match ErrLeaseExpired")
	}
	if errors.Unwrap(unavailable).Error() != "throttled" {
		t.Error("RateLimiterUnavailable must unwrap to its cause")
	}
}
