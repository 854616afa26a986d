package construct_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

func TestLimitsProperties(t *testing.T) {
	got, err := construct.LimitsProperties([]byte(`
namespace: tenant-alpha
system:
  on_unavailable: allow
  limits:
    rpm: {capacity: 100, refill_period: 60}
resources:
  gpt-4:
    limits:
      tpm: {burst: 1000, refill_amount: 500, soft: true}
    disabled: bypass
    cascade: false
entities:
  key-1:
    resources:
      _default_:
        limits:
          rpm: {capacity: 3}
        disabled: false
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"Namespace": "tenant-alpha",
		"System": map[string]any{"OnUnavailable": "allow", "Limits": map[string]any{
			"rpm": map[string]any{"Capacity": "100", "RefillAmount": "100", "RefillPeriod": "60"}}},
		"Resources": map[string]any{"gpt-4": map[string]any{
			"Limits":   map[string]any{"tpm": map[string]any{"Capacity": "1000", "RefillAmount": "500", "RefillPeriod": "60", "Soft": "true"}},
			"Disabled": "bypass", "Cascade": "false"}},
		"Entities": map[string]any{"key-1": map[string]any{"Resources": map[string]any{"_default_": map[string]any{
			"Limits":   map[string]any{"rpm": map[string]any{"Capacity": "3", "RefillAmount": "3", "RefillPeriod": "60"}},
			"Disabled": "false"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// A session quota converts with its window length.
	session, err := construct.LimitsProperties([]byte("namespace: a\nresources: {r: {limits: {x: {capacity: 1, refill_amount: 0, reset_after_seconds: 60}}}}"))
	if err != nil {
		t.Fatal(err)
	}
	if x := session["Resources"].(map[string]any)["r"].(map[string]any)["Limits"].(map[string]any)["x"].(map[string]any); x["ResetAfterSeconds"] != "60" {
		t.Errorf("session quota properties %v", x)
	}
	// A bad manifest fails the synth, every bad field named.
	for file, errWant := range map[string]string{
		"":                                       "empty",
		"system: {}":                             "namespace: is required",
		"namespace: a\nnamspace: b":              "namspace: unknown field",
		"namespace: a\nsystem: {disabled: true}": "system.disabled: is not allowed at system level",
		"namespace: a\nresources: {r: {limits: {x: {capacity: 1, burst: 2}}}}":           "burst: is an alias of capacity and disagrees",
		"namespace: a\nresources: {r: {limits: {x: {capacity: 2.5}}}}":                   "2.5 is not an integer",
		"namespace: a\nresources: [r]":                                                   "must be a mapping",
		"namespace: a\nresources: {r: {limits: {x: {capacity: 1, reset_after: 60}}}}":    "a session window's length is reset_after_seconds",
		"namespace: a\nnamespace: b":                                                     "already defined",
		"namespace: a\nresources: {r: {limits: {x: {capacity: lots}}, disabled: maybe}}": `2 problems`,
	} {
		if _, err := construct.LimitsProperties([]byte(file)); err == nil || !strings.Contains(err.Error(), errWant) {
			t.Errorf("%q: error %v, want %q", file, err, errWant)
		}
	}
}

// TestLimitsResource: a manifest becomes a Custom::ZaeLimiterLimits
// resource served by the provisioner, applied after the version stamp,
// deleted with the stack unless retained (docs/decisions.md P39); the
// app's example manifest converts.
func TestLimitsResource(t *testing.T) {
	example := filepath.Join("..", "limits.example.yaml")
	raw, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	props, err := construct.LimitsProperties(raw)
	if err != nil {
		t.Fatalf("the app's example: %v", err)
	}
	for _, retain := range []bool{false, true} {
		tpl, _ := synth(t, construct.Props{Limits: &construct.Limits{ManifestFile: example, RetainOnDelete: retain}})
		policy := "Delete"
		if retain {
			policy = "Retain"
		}
		want := map[string]any{"ServiceToken": getAtt("ProvisionerFunction", "Arn"), "TableName": ref("RateLimitsTable")}
		for k, v := range props {
			want[k] = v
		}
		must(t, func() {
			tpl.HasResource(jsii.String(construct.LimitsResourceType), obj{
				"Properties": want, "DependsOn": []any{"VersionStamp"},
				"DeletionPolicy": policy, "UpdateReplacePolicy": policy,
			})
		})
	}
}
