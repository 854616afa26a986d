package construct_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

// userApp is a CDK app as a user of the construct writes it: zero props.
const userApp = `package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("user-limiter"), nil)
	if _, err := construct.New(stack, "Limiter", construct.Props{}); err != nil {
		panic(err)
	}
	app.Synth(nil)
}
`

// TestUserApp plays a CDK user who got the infra module with `go get`: a
// new app outside this repository, its go.mod requiring the infra module
// (replaces to this checkout stand in for the module proxy: one for the
// infra module and one for the root module, since Go ignores the replaces
// of a dependency), construct.New with zero props, `cdk synth` with the
// pinned CLI. The template holds both functions with bundled assets and
// passes cfn-lint, warnings included, and the assets' bootstraps are the
// bytes `make lambdas` builds from this checkout.
func TestUserApp(t *testing.T) {
	root, err := filepath.Abs(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(root, "infra", "_tools", "node_modules", ".bin", "cdk")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("%v: run `make cdk-cli` first", err)
	}
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is needed (it comes with the machine's Python packages): %v", err)
	}
	made := map[string]string{}
	for _, fn := range []string{"aggregator", "provisioner"} {
		made[fn] = filepath.Join(root, "build", fn, "bootstrap")
		if _, err := os.Stat(made[fn]); err != nil {
			t.Fatalf("%v: run `make lambdas` first", err)
		}
	}
	app := t.TempDir()
	if rel, err := filepath.Rel(root, app); err != nil || !strings.HasPrefix(rel, "..") {
		t.Fatalf("the app %s is inside the repository", app)
	}
	infraSum, err := os.ReadFile(filepath.Join(root, "infra", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, app, map[string]string{
		"main.go":  userApp,
		"cdk.json": `{"app": "go run .", "versionReporting": false}` + "\n",
		"go.mod": "module example.com/limiterapp\n\ngo " + construct.GoDirective + "\n\n" +
			"require " + construct.ModulePath + "/infra v0.0.0\n\n" +
			"replace " + construct.ModulePath + "/infra => " + filepath.Join(root, "infra") + "\n\n" +
			"replace " + construct.ModulePath + " => " + root + "\n",
		// The infra module's checksums: the app's module graph is the infra
		// module's, so tidy needs no checksum database.
		"go.sum": string(infraSum),
	})
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "CDK_DISABLE_CLI_TELEMETRY=true", "CDK_DISABLE_VERSION_CHECK=true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
	}
	// What `go get` and the user's `go mod tidy` would leave in go.mod.
	run("go", "mod", "tidy")
	out := filepath.Join(app, "cdk.out")
	run(cli, "synth", "--quiet", "--no-notices", "--output", out)

	tplPath := filepath.Join(out, "user-limiter.template.json")
	tpl := readTemplate(t, tplPath)
	for fn, pkg := range map[string]string{"AggregatorFunction": "aggregator", "ProvisionerFunction": "provisioner"} {
		got, want := mustRead(t, bootstrapOf(t, tpl, out, fn)), mustRead(t, made[pkg])
		if got != want {
			t.Errorf("%s: the bundled bootstrap (%d bytes) differs from build/%s/bootstrap (%d bytes; is build/ from this commit? run `make lambdas`)",
				fn, len(got), pkg, len(want))
		}
	}
	if got := props(t, tpl, "VersionStamp")["LambdaVersion"]; got != config.BuildVersion {
		t.Errorf("stamp LambdaVersion %v, want this source's %s", got, config.BuildVersion)
	}
	if lintOut, err := exec.Command(lint, tplPath).CombinedOutput(); err != nil {
		t.Fatalf("cfn-lint: %v\n%s", err, lintOut)
	}
}
