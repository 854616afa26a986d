package control_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// TestFanoutReportsProgress: Options.OnProgress is told each discovery
// pass's count before any bucket of it is stamped, then every outcome, with
// the scope; its counts never go back, and its last report is the Progress
// the write returns — also when a bucket fails.
func TestFanoutReportsProgress(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	for _, ent := range []string{"a", "b", "c", "d", "e"} {
		e.acquire(ent, "r")
	}
	var (
		mu      sync.Mutex
		reports []control.Progress
		scopes  = map[control.Scope]bool{}
	)
	ctl := control.New(e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), e.tbl.Name, control.Options{
		Clock: e.clk.Now, Workers: 2, Caches: []control.Cache{e.lim},
		OnProgress: func(sc control.Scope, p control.Progress) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, p)
			scopes[sc] = true
		},
	})
	check := func(name string, got control.Progress) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(reports) == 0 {
			t.Fatalf("%s: no progress reported", name)
		}
		if reports[0].Buckets != 5 || reports[0].Stamped+reports[0].Unchanged+reports[0].Failed+reports[0].Vanished != 0 {
			t.Errorf("%s: first report %+v, want the 5 buckets found before any outcome", name, reports[0])
		}
		for i := 1; i < len(reports); i++ {
			a, b := reports[i-1], reports[i]
			if b.Buckets < a.Buckets || b.Stamped < a.Stamped || b.Unchanged < a.Unchanged || b.Failed < a.Failed || b.Vanished < a.Vanished {
				t.Errorf("%s: report %d went back: %+v after %+v", name, i, b, a)
			}
		}
		// 1 discovery report per pass and 1 per outcome.
		if last := reports[len(reports)-1]; last != got || len(reports) != 2+got.Stamped+got.Unchanged+got.Failed+got.Vanished {
			t.Errorf("%s: %d reports ending %+v; the call returned %+v", name, len(reports), last, got)
		}
		if len(scopes) != 1 || !scopes[control.Scope{Resource: "r"}] {
			t.Errorf("%s: scopes %v, want resource r", name, scopes)
		}
		reports, scopes = nil, map[control.Scope]bool{}
	}

	p, err := ctl.SetAccess(e.ctx, e.ns, "", "r", dis, "")
	if err != nil || p.Stamped != 5 {
		t.Fatalf("SetAccess: %+v, %v", p, err)
	}
	check("disable", p)

	// One bucket's write fails: the counts still end at what the error
	// carries.
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Count: 1, Fault: faultproxy.InternalServerError(),
		Match: func(_ string, body []byte) bool { return strings.Contains(string(body), "BUCKET#c#r#0") }})
	_, err = ctl.SetAccess(e.ctx, e.ns, "", "r", inh, "")
	var inc *control.FanoutIncompleteError
	if !errors.As(err, &inc) || inc.Progress.Failed != 1 {
		t.Fatalf("want an incomplete fan-out, got %v", err)
	}
	check("failed bucket", inc.Progress)
}

// TestAuditPage: a trail read a page at a time, oldest or newest first,
// from a given instant on; the pages together are the trail, without a
// repeat or a gap, and a bad token is refused.
func TestAuditPage(t *testing.T) {
	e := newEnv(t)
	base := e.clk.Now()
	ctl := control.New(e.tbl.DB, e.tbl.Name, control.Options{Clock: e.clk.Now})
	var want []string // actions, oldest first
	for i := range 7 {
		e.clk.Set(base.Add(time.Duration(i) * time.Minute))
		action := "limits_set"
		if i%2 == 1 {
			action = "limits_deleted"
		}
		if err := ctl.Record(e.ctx, e.ns, control.AuditEvent{EntityID: "k", Action: action, Principal: "p" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "p"+string(rune('0'+i)))
	}
	// Another trail is never read.
	if err := ctl.Record(e.ctx, e.ns, control.AuditEvent{EntityID: "k2", Action: "limits_set"}); err != nil {
		t.Fatal(err)
	}
	all := func(q control.AuditQuery) (got []string, pages int) {
		t.Helper()
		for {
			evs, next, err := ctl.AuditPage(e.ctx, e.ns, "k", q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if q.Limit > 0 && len(evs) > q.Limit {
				t.Fatalf("a page of %d events, limit %d", len(evs), q.Limit)
			}
			for _, ev := range evs {
				got = append(got, ev.Principal)
			}
			if next == "" {
				return got, pages
			}
			if pages > 20 {
				t.Fatal("pages without end")
			}
			q.After = next
		}
	}
	if got, pages := all(control.AuditQuery{}); strings.Join(got, ",") != strings.Join(want, ",") || pages != 1 {
		t.Errorf("everything: %v in %d page(s), want %v in 1", got, pages, want)
	}
	if got, pages := all(control.AuditQuery{Limit: 3}); strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Errorf("pages of 3: %v in %d pages, want %v in 3", got, pages, want)
	}
	if got, _ := all(control.AuditQuery{Limit: 2, NewestFirst: true}); strings.Join(got, ",") != "p6,p5,p4,p3,p2,p1,p0" {
		t.Errorf("newest first: %v", got)
	}
	// Since is inclusive, to the millisecond.
	if got, _ := all(control.AuditQuery{Since: base.Add(4 * time.Minute), NewestFirst: true, Limit: 2}); strings.Join(got, ",") != "p6,p5,p4" {
		t.Errorf("since minute 4, newest first: %v", got)
	}
	if got, _ := all(control.AuditQuery{Since: base.Add(4*time.Minute + time.Millisecond)}); strings.Join(got, ",") != "p5,p6" {
		t.Errorf("since just after minute 4: %v", got)
	}
	if got, _ := all(control.AuditQuery{Since: base.Add(time.Hour)}); len(got) != 0 {
		t.Errorf("since after the last event: %v", got)
	}
	// Since before 1970 is everything.
	if got, _ := all(control.AuditQuery{Since: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}); len(got) != 7 {
		t.Errorf("since 1960: %v", got)
	}
	for _, bad := range []string{"nope", "01ARZ3NDEKTSV4RRFFQ69G5FA#", "01ARZ3NDEKTSV4RRFFQ69G5FAu"} {
		_, _, err := ctl.AuditPage(e.ctx, e.ns, "k", control.AuditQuery{After: bad})
		if !schema.IsValidationError(err) {
			t.Errorf("token %q: %v, want a validation error", bad, err)
		}
	}
	if _, _, err := ctl.AuditPage(e.ctx, e.ns, "bad#trail", control.AuditQuery{}); err == nil {
		t.Error("a trail with # was read")
	}
}
