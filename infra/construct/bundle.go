package construct

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/jsii-runtime-go"
)

// ModulePath is the limiter's root module, whose source the construct
// builds the Lambdas from when no code and no BuildDir is given
// (docs/design.md §13, docs/decisions.md P52).
const ModulePath = "github.com/zae-limiter/zae-limiter-go"

// goDirective is the go directive of the root module's go.mod at this
// construct's version: the version the error names when there is no go
// command to ask (a test keeps it equal to go.mod's). With a go command,
// the go.mod of the source actually found decides.
const goDirective = "1.26.8"

// GoToolchainError is the construct's refusal to bundle the Lambdas: no go
// command on PATH, or one older than the root module's go directive.
type GoToolchainError struct {
	// Need is the go directive of the root module's go.mod.
	Need string
	// Have is the version the go command reports ("" when there is none).
	Have string
	// Err is the failure behind it, if any (the go command not found, or
	// its answer).
	Err error
}

// Error implements error.
func (e *GoToolchainError) Error() string {
	need := fmt.Sprintf("building the Lambdas at synth needs Go %s or later (the go directive of %s's go.mod)", e.Need, ModulePath)
	switch {
	case e.Have == "" && e.Err != nil:
		return fmt.Sprintf("%s on PATH: %v", need, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s; the go command is %s: %v", need, e.Have, e.Err)
	}
	return fmt.Sprintf("%s; the go command is %s (or pass BuildDir with the zips of `make lambdas`)", need, e.Have)
}

// Unwrap returns Err.
func (e *GoToolchainError) Unwrap() error { return e.Err }

// source is the root module's source where Go has it for the synth's
// working directory: the module cache, or the directory a replace names.
type source struct {
	// Dir holds the module's files; go.mod there decides the versions of
	// the Lambdas' dependencies.
	Dir string
	// GoMod is the module's go.mod file (in the module cache, its copy
	// under cache/download).
	GoMod string
	// Version is the module's version as Go resolved it ("v0.0.0" under
	// a replace).
	Version string
	// BuildVersion is config.BuildVersion as the source at Dir declares
	// it: the version of the code bundled.
	BuildVersion string
}

// locateSource asks `go list -m` in the working directory where Go has
// the root module, and checks that the go command can build it.
func locateSource(ctx context.Context) (source, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return source{}, &GoToolchainError{Need: goDirective, Err: err}
	}
	out, err := runGo(ctx, "", nil, "list", "-m", "-json", ModulePath)
	if err != nil {
		return source{}, fmt.Errorf("locating %s's source: %w", ModulePath, err)
	}
	var src source
	if err := json.Unmarshal(out, &src); err != nil {
		return source{}, fmt.Errorf("locating %s's source: go list -m: %w", ModulePath, err)
	}
	if src.Dir == "" {
		return source{}, fmt.Errorf("%s %s is not in the module cache (run `go mod download %s`)", ModulePath, src.Version, ModulePath)
	}
	if src.GoMod == "" {
		src.GoMod = filepath.Join(src.Dir, "go.mod")
	}
	need, err := goDirectiveOf(src.GoMod)
	if err != nil {
		return source{}, err
	}
	// In the source's directory, as the build runs: there a go command
	// that switches toolchains (GOTOOLCHAIN=auto) reports the one it
	// would build with.
	have, err := runGo(ctx, src.Dir, buildEnv(), "env", "GOVERSION")
	if err != nil {
		return source{}, &GoToolchainError{Need: need, Have: "unknown", Err: err}
	}
	if err := checkGoVersion(strings.TrimSpace(string(have)), need); err != nil {
		return source{}, err
	}
	src.BuildVersion, err = readBuildVersion(src.Dir)
	return src, err
}

// checkGoVersion refuses a go command (`go env GOVERSION`) older than the
// go directive need. A development toolchain ("devel go1.27-…") passes.
func checkGoVersion(have, need string) error {
	v, _, _ := strings.Cut(have, " ")
	if v == "devel" || version.Compare(v, "go"+need) >= 0 {
		return nil
	}
	return &GoToolchainError{Need: need, Have: have}
}

// goDirectiveOf reads the go directive of a go.mod file.
func goDirectiveOf(goMod string) (string, error) {
	raw, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("%s's go.mod: %w", ModulePath, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s has no go directive", goMod)
}

// readBuildVersion is the value of the constant config.BuildVersion in the
// source at dir: the lambda_version the bundled code stands for, read from
// the code rather than from the build of this construct, which may differ
// (docs/decisions.md P52).
func readBuildVersion(dir string) (string, error) {
	pkg := filepath.Join(dir, "core", "config")
	files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", fmt.Errorf("reading config.BuildVersion: %w", err)
		}
		if v, ok, err := buildVersionIn(file); ok || err != nil {
			if err != nil {
				err = fmt.Errorf("%s: %w", f, err)
			}
			return v, err
		}
	}
	return "", fmt.Errorf("no constant BuildVersion in %s", pkg)
}

// buildVersionIn finds `const BuildVersion = "…"` in a file.
func buildVersionIn(file *ast.File) (v string, found bool, err error) {
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name != "BuildVersion" {
					continue
				}
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						return v, true, err
					}
				}
				return "", true, errors.New("BuildVersion is not a string literal")
			}
		}
	}
	return "", false, nil
}

// buildEnv is the environment of the go commands run in the source's
// directory: the target of scripts/build-lambdas.sh, no workspace and no
// GOFLAGS of the user's, so that the root module's go.mod alone decides
// what is built.
func buildEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOFLAGS=", "GOWORK=off")
}

// runGo runs the go command in dir (the working directory when "") with
// env (the process's when nil) and returns its standard output.
func runGo(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// bundleFailure keeps the error of a build that failed, for New to return:
// the CDK bundles an asset when the asset is created, inside New, and the
// failure reaches New as a panic of the jsii runtime.
type bundleFailure struct{ err error }

// bundledCode is the function's code built from src at synth: a directory
// asset holding `bootstrap`, hashed by its output (docs/decisions.md P52).
// A build that fails is recorded in failure.
func bundledCode(src source, function string, failure *bundleFailure) awslambda.Code {
	return awslambda.Code_FromAsset(jsii.String(filepath.Join(src.Dir, "functions", function)), &awss3assets.AssetOptions{
		AssetHashType: awscdk.AssetHashType_OUTPUT,
		Bundling: &awscdk.BundlingOptions{
			// Required by the type, never run: the local bundler builds or
			// fails, and never hands over to Docker.
			Image:      awscdk.DockerImage_FromRegistry(jsii.String("scratch")),
			Local:      &goBundler{dir: src.Dir, function: function, failure: failure},
			OutputType: awscdk.BundlingOutput_NOT_ARCHIVED,
		},
	})
}

// goBundler builds one function's bootstrap with the go command, as
// scripts/build-lambdas.sh does.
type goBundler struct {
	dir, function string
	failure       *bundleFailure
}

// TryBundle builds the bootstrap into outputDir. It reports success or
// panics: the jsii runtime hands the panic to the CDK as the bundling's
// error, where false would make the CDK try Docker.
func (b *goBundler) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	if err := buildBootstrap(context.Background(), b.dir, b.function, filepath.Join(*outputDir, "bootstrap")); err != nil {
		err = fmt.Errorf("construct: building the %s: %w", b.function, err)
		if b.failure.err == nil {
			b.failure.err = err
		}
		panic(err)
	}
	return jsii.Bool(true)
}

// buildBootstrap builds ./functions/{function} of the module at dir into
// out: provided.al2023 arm64 with exactly the flags of
// scripts/build-lambdas.sh, so the bytes are those of `make lambdas`.
func buildBootstrap(ctx context.Context, dir, function, out string) error {
	_, err := runGo(ctx, dir, buildEnv(), "build", "-tags", "lambda.norpc", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid=", "-o", out, "./functions/"+function)
	return err
}
