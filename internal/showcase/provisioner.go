package showcase

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/verdict"
)

// provNamespace is the namespace the provisioner step manages.
const provNamespace = "tenant-alpha"

// cfnSide is CloudFormation's side of a custom resource: it receives the
// response PUT at a local pre-signed-URL stand-in.
type cfnSide struct {
	mu   sync.Mutex
	last cfn.Response
	url  string
	srv  *http.Server
}

func startCFN() (*cfnSide, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cfnSide{url: "http://" + l.Addr().String() + "/response?X-Amz-Signature=local"}
	c.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		_ = json.Unmarshal(body, &c.last)
		c.mu.Unlock()
	})}
	go func() { _ = c.srv.Serve(l) }()
	return c, nil
}

func (c *cfnSide) response() cfn.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// provisioner applies a limits manifest as CloudFormation would: Create,
// Update and Delete requests of a Custom::ZaeLimiterLimits resource, each
// written to a file and handled by the provisioner's -event path, with the
// response PUT to a local stand-in of the pre-signed URL; acquires show the
// effect of each.
func (d *demo) provisioner(ctx context.Context) error {
	ops := control.New(d.db, d.table, control.Options{})
	ns, err := ops.RegisterNamespace(ctx, provNamespace, "make run")
	if err != nil {
		return err
	}
	cf, err := startCFN()
	if err != nil {
		return err
	}
	defer cf.srv.Close()
	dir, err := os.MkdirTemp("", "zl-provisioner-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	clk := clock.NewManual(d.now.Add(2 * time.Hour))
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := handler.New(d.db, handler.Settings{Table: d.table, Clock: clk.Now}, quiet)
	lim, err := limiter.New(d.db, d.table, ns, limiter.Options{Clock: clk.Now, ConfigCacheTTL: -1})
	if err != nil {
		return err
	}

	props := map[string]any{
		"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:zae-limiter-limits-provisioner",
		"Namespace":    provNamespace,
		"System":       map[string]any{"OnUnavailable": "block", "Limits": map[string]any{"rpm": map[string]any{"Capacity": "1000"}}},
		"Resources": map[string]any{
			"gpt-4":   map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "3", "RefillAmount": "3", "RefillPeriod": "60"}}},
			"gpt-3.5": map[string]any{"Disabled": "true"},
		},
		"Entities": map[string]any{
			"api-key-1": map[string]any{"Resources": map[string]any{"gpt-3.5": map[string]any{"Disabled": "false"}}},
			"api-key-2": map[string]any{"Resources": map[string]any{"_default_": map[string]any{"Disabled": "bypass"}}},
		},
	}
	physical := ""
	request := func(kind cfn.RequestType, props map[string]any) error {
		ev := cfn.Event{RequestType: kind, RequestID: fmt.Sprintf("req-%s", strings.ToLower(string(kind))), ResponseURL: cf.url,
			ResourceType: "Custom::ZaeLimiterLimits", LogicalResourceID: "TenantLimits", PhysicalResourceID: physical,
			StackID: "arn:aws:cloudformation:us-east-1:123456789012:stack/tenant-alpha-limits/0000", ResourceProperties: props}
		raw, err := json.MarshalIndent(ev, "", "  ")
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "cfn-"+strings.ToLower(string(kind))+".json")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "provisioner -event %s (%s, ResponseURL %s)\n", filepath.Base(path), kind, "http://127.0.0.1/…")
		if err := h.RunEvent(ctx, path, io.Discard); err != nil {
			return err
		}
		resp := cf.response()
		physical = resp.PhysicalResourceID
		fmt.Fprintf(d.out, "  CloudFormation received %s, PhysicalResourceId %s\n", resp.Status, strings.Replace(resp.PhysicalResourceID, ns, "{ns}", 1))
		if resp.Status != cfn.StatusSuccess {
			return fmt.Errorf("%s answered %s: %s", kind, resp.Status, resp.Reason)
		}
		fmt.Fprintf(d.out, "  Data: Status %v, Created %v, Updated %v, Deleted %v, ErrorCount %v\n",
			resp.Data["Status"], resp.Data["Created"], resp.Data["Updated"], resp.Data["Deleted"], resp.Data["ErrorCount"])
		return nil
	}
	try := func(entity, resource string) string {
		lease, err := lim.Acquire(ctx, entity, resource, limiter.Consume{"rpm": 1})
		switch verdict.Of(lease, err) {
		case verdict.Bypass:
			return "admitted (bypassed)"
		case verdict.OK:
			return "admitted"
		case verdict.Disabled:
			return "403 disabled"
		case verdict.Limited:
			return "429"
		}
		return "error: " + err.Error()
	}
	show := func(label string, calls [][2]string) {
		fmt.Fprintf(d.out, "  %s\n", label)
		for _, c := range calls {
			fmt.Fprintf(d.out, "    %-10s on %-8s %s\n", c[0], c[1], try(c[0], c[1]))
		}
	}

	if err := request(cfn.RequestCreate, props); err != nil {
		return err
	}
	show("acquires under the manifest (gpt-4: 3 per minute; gpt-3.5 disabled, api-key-1 carved out; api-key-2 bypassed):", [][2]string{
		{"api-key-1", "gpt-3.5"}, {"api-key-3", "gpt-3.5"}, {"api-key-2", "gpt-3.5"},
		{"api-key-3", "gpt-4"}, {"api-key-3", "gpt-4"}, {"api-key-3", "gpt-4"}, {"api-key-3", "gpt-4"},
	})

	// The pull request: gpt-3.5 is enabled again, gpt-4 allows 5 a minute.
	props["Resources"] = map[string]any{"gpt-4": map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "5"}}}}
	props["Entities"].(map[string]any)["api-key-1"] = map[string]any{"Resources": map[string]any{}}
	if err := request(cfn.RequestUpdate, props); err != nil {
		return err
	}
	show("after the Update (gpt-3.5 no longer managed: its buckets re-stamped, not disabled):", [][2]string{
		{"api-key-3", "gpt-3.5"}, {"api-key-4", "gpt-4"},
	})
	if err := request(cfn.RequestUpdate, props); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "  (the same Update again: nothing written)")
	if err := request(cfn.RequestDelete, props); err != nil {
		return err
	}
	l, err := ops.Store().GetResourceLimits(ctx, ns, "gpt-4")
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  after the Delete: gpt-4 has %d limits of its own; the namespace's buckets and balances stay\n", len(l))
	return nil
}
