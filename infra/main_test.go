package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// TestMain ends the jsii kernel after the tests: it removes the runtime
// the kernel unpacked into the temp folder, which a test binary that just
// exits leaves behind.
func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// template reads the stack's template from a cloud assembly.
func template(t *testing.T, dir string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, DefaultStackName+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoRunIsCdkSynth: `go run .` and `cdk synth` (the CLI of _tools,
// installed by `make cdk-cli`) write the same template, with the zips of
// `make lambdas` as its assets.
func TestGoRunIsCdkSynth(t *testing.T) {
	for _, zip := range []string{"aggregator.zip", "provisioner.zip"} {
		if _, err := os.Stat(filepath.Join("..", "build", zip)); err != nil {
			t.Fatalf("%v: run `make lambdas` first", err)
		}
	}
	cli, err := filepath.Abs(filepath.Join("_tools", "node_modules", ".bin", "cdk"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("%v: run `make cdk-cli` first", err)
	}
	goRun, cdkOut := t.TempDir(), t.TempDir()
	run := func(env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
	}
	run([]string{"CDK_OUTDIR=" + goRun}, "go", "run", ".")
	run([]string{"CDK_DISABLE_CLI_TELEMETRY=true"}, cli, "synth", "--quiet", "--no-notices", "--output", cdkOut)
	a, b := template(t, goRun), template(t, cdkOut)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("go run . and cdk synth wrote different templates")
	}
	fn := a["Resources"].(map[string]any)["AggregatorFunction"].(map[string]any)["Properties"].(map[string]any)
	key := fn["Code"].(map[string]any)["S3Key"].(string)
	if _, err := os.Stat(filepath.Join(goRun, "asset."+key)); err != nil {
		t.Errorf("the aggregator's asset %s is not in the assembly: %v", key, err)
	}
}

// TestAppContext: the app's context values reach the construct: the
// example manifest becomes a limits resource, retained when asked; a stack
// name the construct refuses is an error.
func TestAppContext(t *testing.T) {
	t.Setenv("CDK_OUTDIR", t.TempDir())
	_, stack, err := newApp(map[string]any{
		"limits": "limits.example.yaml", "retainLimits": "true", "enableIamRoles": "true", "buildDir": fakeBuild(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("CDK assertion: %v", r)
			}
		}()
		tpl.HasResource(jsii.String("Custom::ZaeLimiterLimits"), map[string]any{"DeletionPolicy": "Retain"})
		tpl.ResourceCountIs(jsii.String("AWS::IAM::Role"), jsii.Number(5))
	}()
	if _, _, err := newApp(map[string]any{"stackName": "no_underscores"}); err == nil {
		t.Error("an invalid stack name was accepted")
	}
}

func fakeBuild(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range []string{"aggregator", "provisioner"} {
		if err := os.WriteFile(filepath.Join(dir, fn+".zip"), []byte(fn), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
