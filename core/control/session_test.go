package control_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestSessionQuotaSettersRefuse: every limit setter refuses a set holding a
// session quota with an *limit.UnsupportedError that says session quotas
// are not supported by this version yet, and writes nothing: no config, no
// audit event, no fan-out (docs/decisions.md P53).
func TestSessionQuotaSettersRefuse(t *testing.T) {
	e := newEnv(t)
	set := []limit.Limit{limit.PerMinute("rpm", 10), limit.Session("session", 10_000, 5*time.Hour)}
	e.proxy.ResetStats()
	for what, call := range map[string]func() error{
		"system": func() error {
			_, err := e.ctl.SetSystemLimits(e.ctx, e.ns, set, config.SystemOptions{}, "ops")
			return err
		},
		"resource": func() error { _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", set, "ops"); return err },
		"entity":   func() error { _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "u", "r", set, "ops"); return err },
		"default": func() error {
			_, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "u", schema.DefaultResource, set, "ops")
			return err
		},
	} {
		err := call()
		var ue *limit.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, limit.ErrSessionQuotaUnsupported) ||
			err.Error() != `invalid reset_after "session": limit "session" is a session quota (reset_after 5h0m0s): session quotas (reset_after) are not supported by this version yet` {
			t.Errorf("%s: %v, want the session quota refused", what, err)
		}
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("refused setters wrote %s", w)
	}
}

// TestPythonSessionLevelRefused: a resource level the Python client wrote
// with a session quota is refused, never half-read, by the operator's
// reset and top-up of a pair it governs: the config's typed refusal, and
// nothing written.
func TestPythonSessionLevelRefused(t *testing.T) {
	e := newEnv(t)
	k := schema.ResourceConfigItemKeys(e.ns, "r")
	it := k.Item()
	for a, v := range map[string]types.AttributeValue{
		"resource": schema.Str("r"), "config_version": schema.Num(1),
		"l_rpm_cp": schema.Num(10), "l_rpm_ra": schema.Num(10), "l_rpm_rp": schema.Num(60),
		"w_session_cp": schema.Num(10_000), "w_session_ra": schema.Num(0), "w_session_rp": schema.Num(1), "w_session_rsa": schema.Num(18_000),
	} {
		it[a] = v
	}
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
		t.Fatal(err)
	}
	e.proxy.ResetStats()
	for what, call := range map[string]func() error{
		"reset": func() error {
			_, err := e.ctl.Reset(e.ctx, e.ns, "u", "r", nil, control.OperationOptions{})
			return err
		},
		"top-up": func() error {
			_, err := e.ctl.TopUp(e.ctx, e.ns, "u", "r", map[string]int64{"rpm": 1}, control.OperationOptions{})
			return err
		},
	} {
		err := call()
		var ue *config.UnsupportedConfigError
		if !errors.As(err, &ue) || ue.Attribute != "w_session_rsa" || !errors.Is(err, limit.ErrSessionQuotaUnsupported) {
			t.Errorf("%s: %v, want the session config refused", what, err)
		}
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("refused operations wrote %s", w)
	}
}
