package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// TestCfnTemplate: `zl limits cfn-template` of the repository's example
// manifest passes cfn-lint (warnings included, as `make cfn-lint` holds
// the stack's templates), and its limits resource reads back — as the
// provisioner reads CloudFormation properties — to the same manifest
// (same hash), served by the limiter stack's imported provisioner.
func TestCfnTemplate(t *testing.T) {
	t.Parallel()
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is needed (make pytools says how to install it): %v", err)
	}
	src := filepath.Join("..", "..", "events", "limits.yaml")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("zl", "limits", "cfn-template", "-f", src, "--stack", "my-limiter", "--logical-id", "TenantLimits", "--take-over-from", "manifest:default")
	cmd.Env = append(os.Environ(), "ZAEL_TABLE=", "GORACE="+childGORACE())
	tmpl, err := cmd.Output()
	if err != nil {
		t.Fatalf("cfn-template: %v", err)
	}
	file := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(file, tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lint, file).CombinedOutput(); err != nil {
		t.Fatalf("cfn-lint: %v\n%s\n%s", err, out, tmpl)
	}

	var doc struct {
		Parameters map[string]map[string]any `yaml:"Parameters"`
		Resources  map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(tmpl, &doc); err != nil {
		t.Fatal(err)
	}
	res, ok := doc.Resources["TenantLimits"]
	if !ok || res.Type != "Custom::ZaeLimiterLimits" || doc.Parameters["LimiterStack"]["Default"] != "my-limiter" {
		t.Fatalf("template:\n%s", tmpl)
	}
	token, _ := res.Properties["ServiceToken"].(map[string]any)
	if imp, _ := token["Fn::ImportValue"].(map[string]any); imp["Fn::Sub"] != "${LimiterStack}-ProvisionerArn" {
		t.Fatalf("ServiceToken %v", res.Properties["ServiceToken"])
	}
	if res.Properties["TakeOverFrom"] != "manifest:default" {
		t.Fatalf("TakeOverFrom %v", res.Properties["TakeOverFrom"])
	}
	// CloudFormation resolves TableName to a string; the provisioner reads
	// the rest.
	delete(res.Properties, "TableName")
	got, err := manifest.FromProperties(res.Properties)
	if err != nil {
		t.Fatalf("the provisioner would refuse the properties: %v", err)
	}
	if got.Hash() != want.Hash() {
		t.Fatalf("hash %s, want %s: the template is not the manifest", got.Hash(), want.Hash())
	}
}
