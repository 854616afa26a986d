package construct_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestMain runs the tests on the harness's emulator, then ends the jsii
// kernel the CDK calls started: it removes the runtime it unpacked into
// the temp folder, which a test binary that just exits leaves behind.
func TestMain(m *testing.M) {
	code := ddbtest.Run(m)
	jsii.Close()
	os.Exit(code)
}

// fataler is the part of testing.TB must needs (a test of must passes a
// recorder).
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// must runs f, a CDK assertion: the assertions package panics on a failed
// assertion, and must turns the panic into a test failure.
func must(t fataler, f func()) {
	t.Helper()
	failed := true
	defer func() {
		if r := recover(); r != nil || failed {
			t.Fatalf("CDK assertion: %v", r)
		}
	}()
	f()
	failed = false
}

// fakeBuild is a BuildDir with both zips: the construct only fingerprints
// them, so their bytes do not matter here (the app test uses the real ones).
func fakeBuild(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range []string{"aggregator", "provisioner"} {
		if err := os.WriteFile(filepath.Join(dir, fn+".zip"), []byte("zip of "+fn), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// synth builds the stack "zl-test" for p (with fake zips unless p names
// its code) and returns its template, for the assertions package and as
// decoded JSON.
func synth(t *testing.T, p construct.Props) (assertions.Template, map[string]any) {
	t.Helper()
	if p.BuildDir == "" && p.AggregatorCode == nil {
		p.BuildDir = fakeBuild(t)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), AnalyticsReporting: jsii.Bool(false)})
	stack := awscdk.NewStack(app, jsii.String(cfneval.StackName), nil)
	if _, err := construct.New(stack, "Limiter", p); err != nil {
		t.Fatal(err)
	}
	var tpl assertions.Template
	must(t, func() { tpl = assertions.Template_FromStack(stack, nil) })
	return tpl, *tpl.ToJSON()
}

// evaluate evaluates a template with parameter values (none for a CDK one).
func evaluate(t *testing.T, tpl map[string]any, params map[string]string) *cfneval.Stack {
	t.Helper()
	s, err := cfneval.Evaluate(tpl, params)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder is a fataler that keeps what it was told.
type recorder struct{ msg string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestMustReportsAFailedAssertion(t *testing.T) {
	tpl, _ := synth(t, construct.Props{})
	var r recorder
	must(&r, func() { tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1)) })
	if r.msg == "" {
		t.Fatal("a failed assertion went unreported")
	}
	r = recorder{}
	must(&r, func() { tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(0)) })
	if r.msg != "" {
		t.Fatalf("a passing assertion reported: %s", r.msg)
	}
}
