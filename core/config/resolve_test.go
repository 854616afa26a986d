package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// levelLimit is the distinct limit each level gets in precedence tests, so
// a result tells which level supplied it.
func levelLimit(l config.Level) limit.Limit {
	return limit.PerMinute("rpm", int64(l)*100)
}

// TestResolvePrecedence covers all 16 combinations of levels holding limits
// (docs/design.md §7: the first non-empty slot wins; nothing ⇒ ValidationError).
func TestResolvePrecedence(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	ctx := e.ctx
	for mask := range 16 {
		ns := fmt.Sprintf("ns%02d", mask)
		entity, resource := "key-1", "openai/gpt-4"
		has := func(l config.Level) bool { return mask&(1<<(int(l)-1)) != 0 }
		if has(config.LevelEntity) {
			must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, entity, resource, []limit.Limit{levelLimit(config.LevelEntity)}))
		}
		if has(config.LevelEntityDefault) {
			must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, entity, schema.DefaultResource, []limit.Limit{levelLimit(config.LevelEntityDefault)}))
		}
		if has(config.LevelResource) {
			must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, resource, []limit.Limit{levelLimit(config.LevelResource)}))
		}
		if has(config.LevelSystem) {
			must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{levelLimit(config.LevelSystem)}, config.SystemOptions{OnUnavailable: config.OnUnavailableAllow}))
		}
		want := config.LevelNone
		for _, l := range []config.Level{config.LevelEntity, config.LevelEntityDefault, config.LevelResource, config.LevelSystem} {
			if has(l) {
				want = l
				break
			}
		}
		t.Run(fmt.Sprintf("mask=%04b", mask), func(t *testing.T) {
			res, err := st.Resolver().Resolve(ctx, ns, entity, resource)
			if want == config.LevelNone {
				var ve *schema.ValidationError
				if !errors.As(err, &ve) || ve.Field != schema.FieldLimits {
					t.Fatalf("Resolve = %+v, %v; want ValidationError(limits)", res, err)
				}
				return
			}
			must(t, err)
			if res.Source != want || len(res.Limits) != 1 || res.Limits[0] != levelLimit(want) {
				t.Fatalf("Resolve = %+v, want source %v", res, want)
			}
			wantOU := config.OnUnavailable("")
			if has(config.LevelSystem) {
				wantOU = config.OnUnavailableAllow
			}
			if res.OnUnavailable != wantOU {
				t.Fatalf("on_unavailable = %q, want %q (always from the system item)", res.OnUnavailable, wantOU)
			}
			// Resolving the `_default_` scope consults entity(_default_) and system only.
			res, err = st.Resolver().Resolve(ctx, ns, entity, schema.DefaultResource)
			wantDef := config.LevelNone
			switch {
			case has(config.LevelEntityDefault):
				wantDef = config.LevelEntityDefault
			case has(config.LevelSystem):
				wantDef = config.LevelSystem
			}
			if wantDef == config.LevelNone {
				if !schema.IsValidationError(err) {
					t.Fatalf("Resolve(_default_) = %+v, %v", res, err)
				}
			} else if err != nil || res.Source != wantDef {
				t.Fatalf("Resolve(_default_) = %+v, %v, want %v", res, err, wantDef)
			}
		})
	}
	for _, bad := range [][3]string{{"", "e", "r"}, {"ns", "e#", "r"}, {"ns", "e", "r#"}, {"ns", "e", ""}} {
		if _, err := st.Resolver().Resolve(ctx, bad[0], bad[1], bad[2]); !schema.IsValidationError(err) {
			t.Errorf("Resolve%v = %v, want a validation error", bad, err)
		}
	}
}

// batchKeys records how many keys each BatchGetItem asked for.
type batchKeys struct {
	mu   sync.Mutex
	keys []int
}

func (b *batchKeys) match(_ string, body []byte) bool {
	var req struct {
		RequestItems map[string]struct{ Keys []json.RawMessage }
	}
	if json.Unmarshal(body, &req) == nil {
		n := 0
		for _, ka := range req.RequestItems {
			n += len(ka.Keys)
		}
		b.mu.Lock()
		b.keys = append(b.keys, n)
		b.mu.Unlock()
	}
	return false // never fire: only observe
}

func (b *batchKeys) take() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.keys
	b.keys = nil
	return k
}

// TestResolveCache counts the calls that reach DynamoDB Local.
func TestResolveCache(t *testing.T) {
	e := newEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	clock := newClock()
	st := config.NewStore(p.DynamoDB(), e.tbl.Name, config.WithClock(clock.Now))
	r := st.Resolver()
	ctx, ns := e.ctx, e.ns
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("sys", 1)}, config.SystemOptions{}))
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt", []limit.Limit{limit.PerMinute("res", 2)}))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "vip", "gpt", []limit.Limit{limit.PerMinute("ent", 3)}))
	obs := &batchKeys{}
	p.Add(faultproxy.Rule{Operation: "BatchGetItem", Fault: faultproxy.InternalServerError(), Match: obs.match})

	calls := func() (batch, get int) {
		return p.StatsFor("BatchGetItem").Forwarded, p.StatsFor("GetItem").Forwarded
	}
	expect := func(step string, wantBatch int, wantKeys []int, wantSource config.Level, entity string) {
		t.Helper()
		p.ResetStats()
		obs.take()
		res, err := r.Resolve(ctx, ns, entity, "gpt")
		if err != nil || res.Source != wantSource {
			t.Fatalf("%s: Resolve = %+v, %v, want source %v", step, res, err, wantSource)
		}
		bt, gt := calls()
		if keys := obs.take(); bt != wantBatch || gt != 0 || fmt.Sprint(keys) != fmt.Sprint(wantKeys) {
			t.Fatalf("%s: BatchGetItem %d (keys %v), GetItem %d; want %d batch (keys %v), 0 GetItem", step, bt, keys, gt, wantBatch, wantKeys)
		}
	}

	expect("cold", 1, []int{4}, config.LevelEntity, "vip")
	expect("warm", 0, nil, config.LevelEntity, "vip")
	clock.Advance(59 * time.Second)
	expect("just inside the TTL", 0, nil, config.LevelEntity, "vip")
	clock.Advance(time.Second)
	expect("TTL reached", 1, []int{4}, config.LevelEntity, "vip")

	// Negative entries: an entity without config costs its two entity slots
	// once (resource and system are cached), then nothing.
	expect("new entity", 1, []int{2}, config.LevelResource, "plain")
	expect("negative entries cached", 0, nil, config.LevelResource, "plain")

	// Own writes evict exactly their slot.
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "plain", schema.DefaultResource, []limit.Limit{limit.PerMinute("def", 4)}))
	expect("after own entity write", 1, []int{1}, config.LevelEntityDefault, "plain")
	must(t, st.Writer(capability.ConfigWrite{}).DeleteEntityLimits(ctx, ns, "plain", schema.DefaultResource))
	expect("after own delete", 1, []int{1}, config.LevelResource, "plain")

	// Someone else's write shows only after the TTL or Invalidate.
	e.del(t, schema.EntityConfigKey(ns, "vip", "gpt"))
	expect("foreign delete, cached", 0, nil, config.LevelEntity, "vip")
	r.Invalidate()
	if r.CacheLen() != 0 {
		t.Fatalf("CacheLen after Invalidate = %d", r.CacheLen())
	}
	expect("after Invalidate", 1, []int{4}, config.LevelResource, "vip")

	// A negative TTL disables the cache.
	st0 := config.NewStore(p.DynamoDB(), e.tbl.Name, config.WithCacheTTL(-1), config.WithClock(clock.Now))
	for range 3 {
		p.ResetStats()
		if _, err := st0.Resolver().Resolve(ctx, ns, "vip", "gpt"); err != nil {
			t.Fatal(err)
		}
		if bt, _ := calls(); bt != 1 {
			t.Fatalf("negative TTL: %d BatchGetItems, want 1 per Resolve", bt)
		}
	}
	if st0.Resolver().CacheLen() != 0 {
		t.Fatal("a negative TTL cached something")
	}
	// Zero means the default, as for limiter.Options.ConfigCacheTTL.
	stz := config.NewStore(p.DynamoDB(), e.tbl.Name, config.WithCacheTTL(0), config.WithClock(clock.Now))
	for i := range 3 {
		p.ResetStats()
		if _, err := stz.Resolver().Resolve(ctx, ns, "vip", "gpt"); err != nil {
			t.Fatal(err)
		}
		if bt, _ := calls(); (i == 0) != (bt == 1) || bt > 1 {
			t.Fatalf("TTL 0, resolve %d: %d BatchGetItems, want the default cache (1 then 0)", i, bt)
		}
	}
}

// TestResolveFallsBackToGetItem: BatchGetItem fails (500, SDK retries off);
// each slot is read with GetItem and cached.
func TestResolveFallsBackToGetItem(t *testing.T) {
	e := newEnv(t)
	p := faultproxy.Start(t, e.tbl.Endpoint)
	db := p.DynamoDB(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	st := config.NewStore(db, e.tbl.Name)
	ctx, ns := e.ctx, e.ns
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("sys", 1)}, config.SystemOptions{OnUnavailable: config.OnUnavailableAllow}))
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt", []limit.Limit{limit.PerMinute("res", 2)}))
	p.Add(faultproxy.Rule{Operation: "BatchGetItem", Fault: faultproxy.InternalServerError()})
	p.ResetStats()
	res, err := st.Resolver().Resolve(ctx, ns, "e", "gpt")
	if err != nil || res.Source != config.LevelResource || res.Limits[0].Name != "res" || res.OnUnavailable != config.OnUnavailableAllow {
		t.Fatalf("Resolve = %+v, %v", res, err)
	}
	b, g := p.StatsFor("BatchGetItem"), p.StatsFor("GetItem")
	if b.Injected != 1 || b.Forwarded != 0 || g.Forwarded != 4 {
		t.Fatalf("BatchGetItem %+v, GetItem %+v; want 1 injected batch, 4 GetItems", b, g)
	}
	p.ResetStats()
	if _, err := st.Resolver().Resolve(ctx, ns, "e", "gpt"); err != nil {
		t.Fatal(err)
	}
	if b, g := p.StatsFor("BatchGetItem"), p.StatsFor("GetItem"); b.Requests+g.Requests != 0 {
		t.Fatalf("fallback results were not cached: %+v %+v", b, g)
	}

	// When GetItem fails too, Resolve reports the infrastructure error and
	// OnUnavailable falls back to the last value seen.
	st.Resolver().Invalidate()
	p.Add(faultproxy.Rule{Operation: "GetItem", Fault: faultproxy.InternalServerError()})
	if _, err := st.Resolver().Resolve(ctx, ns, "e", "gpt"); err == nil || schema.IsValidationError(err) {
		t.Fatalf("Resolve with DynamoDB down = %v, want an infrastructure error", err)
	}
	if o := st.Resolver().OnUnavailable(ctx, ns, ""); o != config.OnUnavailableAllow {
		t.Fatalf("OnUnavailable with DynamoDB down = %q, want the last seen allow", o)
	}
	if o := st.Resolver().OnUnavailable(ctx, ns, config.OnUnavailableBlock); o != config.OnUnavailableBlock {
		t.Fatalf("per-call OnUnavailable = %q", o)
	}
	if o := st.Resolver().OnUnavailable(ctx, "never-seen", ""); o != config.OnUnavailableBlock {
		t.Fatalf("OnUnavailable of an unseen namespace = %q, want block", o)
	}
}

func TestOnUnavailableThroughCache(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	r := st.Resolver()
	if o := r.OnUnavailable(e.ctx, e.ns, ""); o != config.OnUnavailableBlock {
		t.Fatalf("no system config: %q", o)
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, []limit.Limit{limit.PerMinute("x", 1)}, config.SystemOptions{OnUnavailable: config.OnUnavailableAllow}))
	if o := r.OnUnavailable(e.ctx, e.ns, ""); o != config.OnUnavailableAllow {
		t.Fatalf("system allow: %q", o)
	}
	if r.LastOnUnavailable(e.ns) != config.OnUnavailableAllow {
		t.Fatal("last seen not recorded")
	}
	e.set(t, schema.SystemConfigKey(e.ns), map[string]types.AttributeValue{"on_unavailable": s("bogus")})
	r.Invalidate()
	if o := r.OnUnavailable(e.ctx, e.ns, ""); o != config.OnUnavailableBlock {
		t.Fatalf("a readable system item without a valid value: %q, want block", o)
	}
}

// unprocessedReads answers BatchGetItem calls with every key unprocessed
// while left > 0, then forwards.
type unprocessedReads struct {
	config.ReadDB
	left  atomic.Int32
	calls atomic.Int32
}

func (u *unprocessedReads) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	u.calls.Add(1)
	if u.left.Add(-1) >= 0 {
		return &dynamodb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
	}
	return u.ReadDB.BatchGetItem(ctx, in, optFns...)
}

func TestResolveRetriesUnprocessedKeys(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "gpt", []limit.Limit{limit.PerMinute("res", 2)}))

	fake := &unprocessedReads{ReadDB: e.tbl.DB}
	fake.left.Store(2)
	r := config.NewResolver(fake, e.tbl.Name, config.WithBatchRetries(3, time.Millisecond))
	res, err := r.Resolve(e.ctx, e.ns, "e", "gpt")
	if err != nil || res.Source != config.LevelResource {
		t.Fatalf("Resolve = %+v, %v", res, err)
	}
	if c := fake.calls.Load(); c != 3 {
		t.Fatalf("BatchGetItem calls = %d, want 3 (two unprocessed answers re-sent)", c)
	}

	// Always unprocessed: after the retries, GetItem takes over.
	fake = &unprocessedReads{ReadDB: e.tbl.DB}
	fake.left.Store(1 << 30)
	r = config.NewResolver(fake, e.tbl.Name, config.WithBatchRetries(2, time.Millisecond))
	res, err = r.Resolve(e.ctx, e.ns, "e", "gpt")
	if err != nil || res.Source != config.LevelResource {
		t.Fatalf("Resolve = %+v, %v", res, err)
	}
	if c := fake.calls.Load(); c != 3 {
		t.Fatalf("BatchGetItem calls = %d, want 1 + 2 retries", c)
	}

	// A cancelled context stops the backoff.
	fake = &unprocessedReads{ReadDB: e.tbl.DB}
	fake.left.Store(1 << 30)
	r = config.NewResolver(fake, e.tbl.Name, config.WithBatchRetries(10, time.Hour))
	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := r.Resolve(ctx, e.ns, "e", "gpt"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Resolve with a cancelled context = %v", err)
	}
}

// TestResolveUnsupportedFailsClosed: an unsupported item reached before a
// winner fails the resolution; one below the winner does not matter.
func TestResolveUnsupportedFailsClosed(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	ctx, ns := e.ctx, e.ns
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt", []limit.Limit{limit.PerMinute("res", 2)}))
	e.put(t, schema.EntityConfigItemKeys(ns, "sess", "gpt"),
		attrs{"l_s_cp": n("10"), "l_s_ra": n("10"), "l_s_rp": n("60"), "inherit_limits": b(true)})
	var ue *config.UnsupportedConfigError
	if _, err := st.Resolver().Resolve(ctx, ns, "sess", "gpt"); !errors.As(err, &ue) || ue.Attribute != "inherit_limits" {
		t.Fatalf("Resolve = %v, want UnsupportedConfigError", err)
	}
	// Cached: still refused without a read.
	if _, err := st.Resolver().Resolve(ctx, ns, "sess", "gpt"); !errors.As(err, &ue) {
		t.Fatalf("cached Resolve = %v", err)
	}
	if _, err := st.Resolver().ResolveAccess(ctx, ns, "sess", "gpt", config.AccessOptions{}); !errors.As(err, &ue) {
		t.Fatalf("ResolveAccess = %v", err)
	}

	// A merging resource item under an entity that has its own limits.
	e.put(t, schema.ResourceConfigItemKeys(ns, "merged"), merge(lim("res", "1", "1", "1"), attrs{"inherit_limits": b(true)}))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "own", "merged", []limit.Limit{limit.PerMinute("ent", 1)}))
	if res, err := st.Resolver().Resolve(ctx, ns, "own", "merged"); err != nil || res.Source != config.LevelEntity {
		t.Fatalf("Resolve above an unsupported level = %+v, %v", res, err)
	}
	if _, err := st.Resolver().Resolve(ctx, ns, "other", "merged"); !errors.As(err, &ue) || ue.Attribute != "inherit_limits" {
		t.Fatalf("Resolve through an unsupported level = %v", err)
	}

	// Corrupt limits are skipped: the entity level with only a corrupt
	// limit has none, so the resource level wins.
	e.put(t, schema.EntityConfigItemKeys(ns, "broken", "gpt"), attrs{"l_x_cp": n("5"), "l_x_ra": n("5")})
	if res, err := st.Resolver().Resolve(ctx, ns, "broken", "gpt"); err != nil || res.Source != config.LevelResource {
		t.Fatalf("Resolve past a corrupt limit = %+v, %v", res, err)
	}
}

// TestResolveConcurrent runs many resolving goroutines against one that
// keeps invalidating and rewriting config; run under -race.
func TestResolveConcurrent(t *testing.T) {
	e := newEnv(t)
	st := e.store(config.WithCacheTTL(time.Minute))
	r := st.Resolver()
	ctx, ns := e.ctx, e.ns
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("sys", 1)}, config.SystemOptions{}))
	for i := range 4 {
		must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, fmt.Sprintf("e%d", i), "gpt", []limit.Limit{limit.PerMinute("ent", 10)}))
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.Invalidate()
			r.EvictEntity(ns, "e0")
			n := int64(10 + i%2)
			if err := st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e1", "gpt", []limit.Limit{limit.PerMinute("ent", n)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				entity := fmt.Sprintf("e%d", (g+i)%6) // e4, e5 have no config: system
				res, err := r.Resolve(ctx, ns, entity, "gpt")
				if err != nil {
					t.Error(err)
					return
				}
				switch {
				case (g+i)%6 >= 4:
					if res.Source != config.LevelSystem {
						t.Errorf("%s: %+v", entity, res)
					}
				case res.Source != config.LevelEntity || res.Limits[0].Name != "ent" || res.Limits[0].Capacity < 10 || res.Limits[0].Capacity > 11:
					t.Errorf("%s: %+v", entity, res)
				}
				res.Limits[0].Capacity = -1 // results are copies: this must not reach the cache
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
}

// TestResolveAccessWalk is the 4³ table of the property for `disabled` and
// the 3³ table for `cascade`: first explicit value in entity(resource) →
// entity(_default_) → resource wins, whatever level supplies the limits.
func TestResolveAccessWalk(t *testing.T) {
	e := newEnv(t)
	clock := newClock()
	st := e.store(config.WithClock(clock.Now))
	ctx, ns := e.ctx, e.ns
	disabledValues := []types.AttributeValue{nil, b(true), b(false), s("bypass")}
	modes := []config.Access{config.AccessInherit, config.AccessDisabled, config.AccessEnforce, config.AccessBypass}
	walk := []config.Level{config.LevelEntity, config.LevelEntityDefault, config.LevelResource}
	keysFor := func(entity, resource string) []schema.ItemKeys {
		return []schema.ItemKeys{
			schema.EntityConfigItemKeys(ns, entity, resource),
			schema.EntityConfigItemKeys(ns, entity, schema.DefaultResource),
			schema.ResourceConfigItemKeys(ns, resource),
		}
	}
	must(t, st.Writer(capability.ConfigWrite{}).SetSystemLimits(ctx, ns, []limit.Limit{limit.PerMinute("sys", 1).AsSoft()}, config.SystemOptions{OnUnavailable: config.OnUnavailableBlock}))

	i := 0
	for a := range 4 {
		for bb := range 4 {
			for c := range 4 {
				entity, resource := fmt.Sprintf("e%d", i), fmt.Sprintf("r%d", i)
				i++
				choice := []int{a, bb, c}
				for lvl, k := range keysFor(entity, resource) {
					if v := disabledValues[choice[lvl]]; v != nil {
						e.put(t, k, attrs{"disabled": v})
					}
				}
				wantMode, wantLevel := config.AccessEnforce, config.LevelNone
				for lvl, ch := range choice {
					if ch != 0 {
						wantMode, wantLevel = modes[ch], walk[lvl]
						break
					}
				}
				w, err := st.Resolver().ResolveAccess(ctx, ns, entity, resource, config.AccessOptions{Consistent: true})
				if err != nil || w.Mode != wantMode || w.Level != wantLevel {
					t.Errorf("disabled %v: walk = mode %v level %v (%v), want %v %v", choice, w.Mode, w.Level, err, wantMode, wantLevel)
				}
				if w.Limits != nil || w.Source != config.LevelNone || w.OnUnavailable != "" || !w.ReadAt.Equal(clock.Now()) {
					t.Errorf("without the system item: %+v", w)
				}
			}
		}
	}

	cascadeValues := []types.AttributeValue{nil, b(true), b(false)}
	policies := []config.CascadePolicy{config.CascadeUnset, config.CascadeOn, config.CascadeOff}
	for a := range 3 {
		for bb := range 3 {
			for c := range 3 {
				entity, resource := fmt.Sprintf("c%d", i), fmt.Sprintf("cr%d", i)
				i++
				choice := []int{a, bb, c}
				for lvl, k := range keysFor(entity, resource) {
					if v := cascadeValues[choice[lvl]]; v != nil {
						e.put(t, k, attrs{"cascade": v})
					}
				}
				want, wantLevel := config.CascadeUnset, config.LevelNone
				for lvl, ch := range choice {
					if ch != 0 {
						want, wantLevel = policies[ch], walk[lvl]
						break
					}
				}
				w, err := st.Resolver().ResolveAccess(ctx, ns, entity, resource, config.AccessOptions{IncludeSystem: true})
				if err != nil || w.Cascade != want || w.CascadeLevel != wantLevel || w.Mode != config.AccessEnforce {
					t.Errorf("cascade %v: walk = %v at %v (%v), want %v at %v", choice, w.Cascade, w.CascadeLevel, err, want, wantLevel)
				}
				// Fresh limits come from the system item here, soft flag included.
				if w.Source != config.LevelSystem || len(w.Limits) != 1 || !w.Limits[0].Soft || w.OnUnavailable != config.OnUnavailableBlock {
					t.Errorf("with the system item: %+v", w)
				}
			}
		}
	}
}

// TestResolveAccessIsUncached: a change made behind the cache shows at once
// in ResolveAccess, while Resolve still serves the cached limits.
func TestResolveAccessIsUncached(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	r := st.Resolver()
	ctx, ns := e.ctx, e.ns
	must(t, st.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, ns, "gpt", []limit.Limit{limit.PerMinute("res", 1)}))
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", "gpt", []limit.Limit{limit.PerMinute("ent", 1)}))
	if _, err := r.Resolve(ctx, ns, "e", "gpt"); err != nil {
		t.Fatal(err)
	}
	e.set(t, schema.ResourceConfigKey(ns, "gpt"), map[string]types.AttributeValue{"disabled": b(true), "l_res_soft": b(true)})
	e.set(t, schema.EntityConfigKey(ns, "e", "gpt"), map[string]types.AttributeValue{"l_ent_soft": b(true)})
	w, err := r.ResolveAccess(ctx, ns, "e", "gpt", config.AccessOptions{})
	if err != nil || w.Mode != config.AccessDisabled || w.Level != config.LevelResource {
		t.Fatalf("walk = %+v, %v", w, err)
	}
	if w.Source != config.LevelEntity || !w.Limits[0].Soft {
		t.Fatalf("fresh limits = %v from %v, want the entity's, now soft", w.Limits, w.Source)
	}
	res, _ := r.Resolve(ctx, ns, "e", "gpt")
	if res.Limits[0].Soft {
		t.Fatal("Resolve bypassed its cache")
	}
	// The `_default_` scope walks one item.
	must(t, st.Writer(capability.ConfigWrite{}).SetEntityLimits(ctx, ns, "e", schema.DefaultResource, []limit.Limit{limit.PerMinute("d", 1)}))
	e.set(t, schema.EntityConfigKey(ns, "e", schema.DefaultResource), map[string]types.AttributeValue{"disabled": s("bypass")})
	w, err = r.ResolveAccess(ctx, ns, "e", schema.DefaultResource, config.AccessOptions{})
	if err != nil || w.Mode != config.AccessBypass || w.Level != config.LevelEntityDefault || w.Source != config.LevelEntityDefault {
		t.Fatalf("_default_ walk = %+v, %v", w, err)
	}
}
