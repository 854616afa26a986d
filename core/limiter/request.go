package limiter

import (
	"context"
	"slices"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Consume names the whole-token amounts one acquire takes, by limit name.
// An amount of 0 still declares the limit (it is checked, not debited).
type Consume map[string]int64

// AcquireOption adjusts one Acquire call.
type AcquireOption func(*request)

// WithLimits bypasses config resolution and uses these limits for the call
// (docs/design.md §7, source "override"). A session quota among them
// passes the writer gate first (config.SessionQuotaVersion: the table's
// readers must keep its window; a *config.VersionMismatchError refuses the
// call, under on_unavailable=allow too), once per Limiter.
func WithLimits(limits ...limit.Limit) AcquireOption {
	return func(r *request) { r.override = slices.Clone(limits) }
}

// WithOnUnavailable sets the call's action on an infrastructure error,
// ahead of the system config (docs/design.md §7).
func WithOnUnavailable(o config.OnUnavailable) AcquireOption {
	return func(r *request) { r.onUnavailable = o }
}

// request is one validated Acquire call.
type request struct {
	entity, resource string
	declared         []bucketwrite.Declared // sorted by name
	override         []limit.Limit
	onUnavailable    config.OnUnavailable
	// readers is the reader version the override's limits need on the
	// buckets they write (a session quota's window: the writer gate of
	// docs/design.md §2), "" for none.
	readers string
	// lostMoves counts the slow passes whose quota move off a sibling was
	// lost (ADR-145: re-read once, then start a covered slot empty).
	lostMoves int
	// path is the acquire path entered last: the one that answered
	// (telemetry.go).
	path acquirePath
	// small holds declared for the common request of a few limits, so a
	// request is one allocation.
	small [4]bucketwrite.Declared
}

func (l *Limiter) newRequest(entity, resource string, consume Consume, opts []AcquireOption) (*request, error) {
	if err := schema.ValidateEntityID(entity); err != nil {
		return nil, err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return nil, err
	}
	if len(consume) == 0 {
		return nil, schema.NewValidationError(schema.FieldLimits, "", "an acquire must name at least one limit")
	}
	r := &request{entity: entity, resource: resource}
	r.declared = r.small[:0]
	if len(consume) > len(r.small) {
		r.declared = make([]bucketwrite.Declared, 0, len(consume))
	}
	for name, amount := range consume {
		if err := schema.ValidateLimitName(name); err != nil {
			return nil, err
		}
		if amount < 0 {
			return nil, schema.NewValidationError("amount", name, "consume amounts must be ≥ 0")
		}
		if _, ok := bucket.ToMilli(amount); !ok {
			return nil, schema.NewValidationError("amount", name, "amount × 1000 must fit in 64 bits")
		}
		r.declared = append(r.declared, bucketwrite.Declared{Name: name, Amount: amount})
	}
	slices.SortFunc(r.declared, func(a, b bucketwrite.Declared) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range opts {
		o(r)
	}
	if r.override != nil {
		if err := limit.ValidateSet(r.override); err != nil {
			return nil, err
		}
		r.readers = config.ReadersFor(r.override)
	}
	if r.onUnavailable != "" && !r.onUnavailable.Valid() {
		return nil, schema.NewValidationError("on_unavailable", string(r.onUnavailable), "must be allow or block")
	}
	return r, nil
}

// forEntity is the same request made for another entity (the cascade parent).
func (r *request) forEntity(entity string) *request {
	c := *r
	c.entity = entity
	return &c
}

// requireReaders is the writer gate for limits given to an acquire
// (docs/design.md §2, §13): the table's readers must be at least need
// before a bucket carries what those limits write, and client_min_version
// is raised to need once. A version passed is remembered for the
// limiter's life, so only the first such acquire pays the read.
func (l *Limiter) requireReaders(ctx context.Context, need string) error {
	l.gateMu.Lock()
	passed := l.gatePassed
	l.gateMu.Unlock()
	if passed != "" && config.LaterVersion(passed, need) == passed {
		return nil
	}
	if err := l.store.Gate(ctx, need); err != nil {
		return err
	}
	l.gateMu.Lock()
	l.gatePassed = config.LaterVersion(l.gatePassed, need)
	l.gateMu.Unlock()
	return nil
}
