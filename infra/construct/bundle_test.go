package construct_test

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
)

// writeFiles writes files (path relative to dir: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeRoot is a module under construct.ModulePath in a temporary directory:
// go directive goVersion, config.BuildVersion buildVersion and two tiny
// functions, each printing its name and tag. It returns the directory.
func fakeRoot(t *testing.T, goVersion, buildVersion, tag string) string {
	t.Helper()
	dir := t.TempDir()
	main := func(fn string) string {
		return "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"" + fn + " " + tag + "\\n\") }\n"
	}
	writeFiles(t, dir, map[string]string{
		"go.mod":                        "module " + construct.ModulePath + "\n\ngo " + goVersion + "\n",
		"core/config/doc.go":            "// Package config is a stand-in.\npackage config\n",
		"core/config/version.go":        "package config\n\n// BuildVersion is the stand-in's.\nconst BuildVersion = \"" + buildVersion + "\"\n",
		"core/config/version_test.go":   "package config\n\nconst BuildVersion = \"0.0.1\"\n",
		"functions/aggregator/main.go":  main("aggregator"),
		"functions/provisioner/main.go": main("provisioner"),
	})
	return dir
}

// useRoot makes the working directory a module whose go.mod replaces
// construct.ModulePath with dir, as a CDK app's may.
func useRoot(t *testing.T, dir string) {
	t.Helper()
	app := t.TempDir()
	writeFiles(t, app, map[string]string{"go.mod": "module example.com/app\n\ngo " + construct.GoDirective +
		"\n\nrequire " + construct.ModulePath + " v0.0.0\n\nreplace " + construct.ModulePath + " => " + dir + "\n"})
	t.Chdir(app)
}

// bundled synthesizes the stack with p (no BuildDir: the construct builds
// the Lambdas) into a fresh cloud assembly and returns the template and
// the assembly's directory.
func bundled(t *testing.T, p construct.Props) (map[string]any, string) {
	t.Helper()
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), AnalyticsReporting: jsii.Bool(false)})
	stack := awscdk.NewStack(app, jsii.String(cfneval.StackName), nil)
	if _, err := construct.New(stack, "Limiter", p); err != nil {
		t.Fatal(err)
	}
	app.Synth(nil)
	return readTemplate(t, filepath.Join(out, cfneval.StackName+".template.json")), out
}

// readTemplate reads a template file.
func readTemplate(t *testing.T, path string) map[string]any {
	t.Helper()
	var tpl map[string]any
	if err := json.Unmarshal([]byte(mustRead(t, path)), &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// props is a resource's properties in a template.
func props(t *testing.T, tpl map[string]any, id string) map[string]any {
	t.Helper()
	r, ok := tpl["Resources"].(map[string]any)[id].(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	return r["Properties"].(map[string]any)
}

// assetHash is the hash of a function's asset: its S3 key without ".zip".
func assetHash(t *testing.T, tpl map[string]any, function string) string {
	t.Helper()
	key, _ := props(t, tpl, function)["Code"].(map[string]any)["S3Key"].(string)
	hash, ok := strings.CutSuffix(key, ".zip")
	if !ok {
		t.Fatalf("%s: S3Key %q", function, key)
	}
	return hash
}

// bootstrapOf is the bootstrap in a function's asset directory.
func bootstrapOf(t *testing.T, tpl map[string]any, out, function string) string {
	t.Helper()
	p := filepath.Join(out, "asset."+assetHash(t, tpl, function), "bootstrap")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s: mode %v, not executable", p, fi.Mode())
	}
	return p
}

// TestBundledFromSource: without code and BuildDir, the construct builds
// both functions from the source Go resolves for the working directory (a
// replace here): static linux/arm64 binaries with the flags of
// scripts/build-lambdas.sh, in directory assets whose hashes change with
// the code only; the stamp's LambdaVersion is the source's BuildVersion,
// not this build's, unless given.
func TestBundledFromSource(t *testing.T) {
	root := fakeRoot(t, "1.26.0", "9.8.7", "v1")
	useRoot(t, root)
	tpl, out := bundled(t, construct.Props{})

	if got := props(t, tpl, "VersionStamp")["LambdaVersion"]; got != "9.8.7" || got == config.BuildVersion {
		t.Errorf("stamp LambdaVersion %v, want the bundled source's 9.8.7", got)
	}
	env := props(t, tpl, "ProvisionerFunction")["Environment"].(map[string]any)["Variables"].(map[string]any)
	if got := env["ZAEL_LAMBDA_VERSION"]; got != "9.8.7" {
		t.Errorf("ZAEL_LAMBDA_VERSION %v, want 9.8.7", got)
	}
	want := map[string]string{
		"-tags": "lambda.norpc", "-trimpath": "true", // -trimpath leaves -ldflags out of the record
		"CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": "arm64",
	}
	hashes := map[string]string{}
	for fn, pkg := range map[string]string{"AggregatorFunction": "aggregator", "ProvisionerFunction": "provisioner"} {
		hashes[fn] = assetHash(t, tpl, fn)
		bin := bootstrapOf(t, tpl, out, fn)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		machine, interp := f.Machine, f.Section(".interp") != nil
		// -ldflags='-s -w -buildid=': no symbol table, no build id note.
		symtab, buildID := f.Section(".symtab") != nil, f.Section(".note.go.buildid") != nil
		f.Close()
		if machine != elf.EM_AARCH64 || interp || symtab || buildID {
			t.Errorf("%s: machine %v, interpreter %v, symbol table %v, build id %v; want a static, stripped arm64 binary without build id",
				fn, machine, interp, symtab, buildID)
		}
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if info.Path != construct.ModulePath+"/functions/"+pkg {
			t.Errorf("%s: built %s", fn, info.Path)
		}
		got := map[string]string{}
		for _, s := range info.Settings {
			got[s.Key] = s.Value
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: build setting %s=%q, want %q", fn, k, got[k], v)
			}
		}
	}
	if hashes["AggregatorFunction"] == hashes["ProvisionerFunction"] {
		t.Error("both functions have one asset")
	}

	// The same source, another assembly: the same hashes.
	again, _ := bundled(t, construct.Props{LambdaVersion: "9.8.6"})
	for fn, h := range hashes {
		if got := assetHash(t, again, fn); got != h {
			t.Errorf("%s: asset hash %s, then %s for the same source", fn, h, got)
		}
	}
	if got := props(t, again, "VersionStamp")["LambdaVersion"]; got != "9.8.6" {
		t.Errorf("stamp LambdaVersion %v, want the one given, 9.8.6", got)
	}

	// The aggregator's code changes: its hash only.
	writeFiles(t, root, map[string]string{"functions/aggregator/main.go": strings.ReplaceAll(
		mustRead(t, filepath.Join(root, "functions/aggregator/main.go")), " v1", " v2")})
	changed, _ := bundled(t, construct.Props{})
	if got := assetHash(t, changed, "AggregatorFunction"); got == hashes["AggregatorFunction"] {
		t.Error("the aggregator's asset hash did not change with its code")
	}
	if got := assetHash(t, changed, "ProvisionerFunction"); got != hashes["ProvisionerFunction"] {
		t.Error("the provisioner's asset hash changed with the aggregator's code")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestBundlingNeedsGo: with no go command on PATH, New fails naming the
// go directive of the root module's go.mod.
func TestBundlingNeedsGo(t *testing.T) {
	need, err := construct.GoDirectiveOf(filepath.Join(repoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if need != construct.GoDirective {
		t.Fatalf("go.mod says go %s, the construct %s", need, construct.GoDirective)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String(cfneval.StackName), nil)
	t.Setenv("PATH", t.TempDir()) // after the jsii runtime has started node
	_, err = construct.New(stack, "Limiter", construct.Props{})
	var ge *construct.GoToolchainError
	if !errors.As(err, &ge) || ge.Need != need || ge.Have != "" || !strings.Contains(err.Error(), "Go "+need+" or later") {
		t.Fatalf("New without go: %v, want a GoToolchainError naming go %s", err, need)
	}
	// BuildDir needs no go command.
	if _, err := construct.New(awscdk.NewStack(app, jsii.String("other"), nil), "Limiter", construct.Props{BuildDir: fakeBuild(t)}); err != nil {
		t.Fatalf("New with BuildDir and no go: %v", err)
	}
}

// TestBundlingNeedsGoOfTheSource: a go command older than the go directive
// of the source's go.mod is refused at New, naming both.
func TestBundlingNeedsGoOfTheSource(t *testing.T) {
	t.Setenv("GOTOOLCHAIN", "local") // no download of a toolchain that does not exist
	useRoot(t, fakeRoot(t, "1.99.0", "9.8.7", "v1"))
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	_, err := construct.New(awscdk.NewStack(app, jsii.String(cfneval.StackName), nil), "Limiter", construct.Props{})
	var ge *construct.GoToolchainError
	if !errors.As(err, &ge) || ge.Need != "1.99.0" || !strings.HasPrefix(ge.Have, "go1.") || !strings.Contains(err.Error(), "Go 1.99.0 or later") {
		t.Fatalf("New with an old go: %v, want a GoToolchainError naming go 1.99.0", err)
	}
}

func TestCheckGoVersion(t *testing.T) {
	for have, ok := range map[string]bool{
		"go1.26.8": true, "go1.26.9": true, "go1.27rc1": true, "go1.30.0": true, "devel go1.27-0123abcd Tue": true,
		"go1.26.7": false, "go1.26": false, "go1.26rc2": false, "go1.9.9": false, "": false,
	} {
		err := construct.CheckGoVersion(have, "1.26.8")
		if (err == nil) != ok {
			t.Errorf("go %q for 1.26.8: %v", have, err)
		}
	}
}

// TestReadBuildVersion: the constant as the source declares it, test files
// aside; a source without it, or with a computed one, is an error.
func TestReadBuildVersion(t *testing.T) {
	if v, err := construct.ReadBuildVersion(repoRoot()); err != nil || v != config.BuildVersion {
		t.Errorf("this checkout: %q, %v; want %q", v, err, config.BuildVersion)
	}
	if v, err := construct.ReadBuildVersion(fakeRoot(t, "1.26.0", "1.2.3-rc.1", "v1")); err != nil || v != "1.2.3-rc.1" {
		t.Errorf("stand-in: %q, %v", v, err)
	}
	computed := t.TempDir()
	writeFiles(t, computed, map[string]string{"core/config/v.go": "package config\n\nconst BuildVersion = \"1\" + \".0.0\"\n"})
	for name, dir := range map[string]string{"computed": computed, "absent": t.TempDir()} {
		if v, err := construct.ReadBuildVersion(dir); err == nil {
			t.Errorf("%s: %q, want an error", name, v)
		}
	}
}

// TestBundlingFailureFailsNew: a source that does not compile fails New
// (the CDK bundles an asset as it is created) with the compiler's message;
// the CDK never turns to Docker.
func TestBundlingFailureFailsNew(t *testing.T) {
	root := fakeRoot(t, "1.26.0", "9.8.7", "v1")
	writeFiles(t, root, map[string]string{"functions/aggregator/main.go": "package main\n\nfunc main() { undefinedCall() }\n"})
	useRoot(t, root)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), AnalyticsReporting: jsii.Bool(false)})
	_, err := construct.New(awscdk.NewStack(app, jsii.String(cfneval.StackName), nil), "Limiter", construct.Props{})
	if err == nil {
		t.Fatal("New built a source that does not compile")
	}
	for _, want := range []string{"construct: building the aggregator", "undefined: undefinedCall"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New of a source that does not compile: %v, want it to name %q", err, want)
		}
	}
	if strings.Contains(strings.ToLower(err.Error()), "docker") {
		t.Errorf("the CDK turned to Docker: %v", err)
	}
}
