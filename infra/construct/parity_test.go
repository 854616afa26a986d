package construct_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
)

// repoRoot is the repository, from this package's directory.
func repoRoot() string { return filepath.Join("..", "..") }

// translateSAM renders template.yaml with the AWS SAM translator (Python
// package samtranslator, installed with cfn-lint) once per parameter set,
// in one process.
func translateSAM(t *testing.T, params []map[string]string) []map[string]any {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 with samtranslator is needed (it comes with cfn-lint): %v", err)
	}
	arg, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join(repoRoot(), "scripts", "sam-translate.py"), filepath.Join(repoRoot(), "template.yaml"), string(arg))
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("sam-translate.py: %v\n%s", err, msg)
	}
	var tpls []map[string]any
	if err := json.Unmarshal(out, &tpls); err != nil {
		t.Fatal(err)
	}
	if len(tpls) != len(params) {
		t.Fatalf("%d translations for %d parameter sets", len(tpls), len(params))
	}
	return tpls
}

// translatedScenarios returns the scenarios and template.yaml translated
// with each one's parameters.
func translatedScenarios(t *testing.T) ([]scenario, []map[string]any) {
	t.Helper()
	scs := scenarios()
	var params []map[string]string
	for _, sc := range scs {
		params = append(params, sc.params)
	}
	return scs, translateSAM(t, params)
}

// comparable strips what legitimately differs between the two renderings
// of one stack: where the Lambda code lives (a CDK asset or a SAM build)
// and the tag SAM adds to its functions. Dashboard bodies are compared as
// the JSON they are.
func comparable(t *testing.T, s *cfneval.Stack) {
	t.Helper()
	for id, r := range s.Resources {
		switch r.Type {
		case "AWS::Lambda::Function":
			if _, ok := r.Properties["Code"].(map[string]any)["S3Key"]; !ok {
				t.Errorf("%s: no S3 code", id)
			}
			delete(r.Properties, "Code")
			if tags, ok := r.Properties["Tags"].([]any); ok {
				var kept []any
				for _, tg := range tags {
					if tg.(map[string]any)["Key"] != "lambda:createdBy" {
						kept = append(kept, tg)
					}
				}
				if kept == nil {
					delete(r.Properties, "Tags")
				} else {
					r.Properties["Tags"] = kept
				}
			}
		case "AWS::CloudWatch::Dashboard":
			var body any
			if err := json.Unmarshal([]byte(r.Properties["DashboardBody"].(string)), &body); err != nil {
				t.Fatalf("%s: body: %v", id, err)
			}
			r.Properties["DashboardBody"] = body
		case "AWS::Lambda::EventSourceMapping":
			for _, f := range r.Properties["FilterCriteria"].(map[string]any)["Filters"].([]any) {
				var p any
				fm := f.(map[string]any)
				if err := json.Unmarshal([]byte(fm["Pattern"].(string)), &p); err != nil {
					t.Fatalf("%s: filter: %v", id, err)
				}
				fm["Pattern"] = p
			}
		}
	}
}

func resourceIDs(s *cfneval.Stack) []string {
	var out []string
	for id := range s.Resources {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// TestSAMIsTheCDKStack: for every scenario, template.yaml translated by SAM
// and evaluated with the scenario's parameters holds exactly the resources
// and outputs the construct synthesizes for the same props, property for
// property: the table, both functions and their environments, the mapping,
// the stamp, every alarm, the dashboard, every IAM statement and name.
func TestSAMIsTheCDKStack(t *testing.T) {
	scs, sams := translatedScenarios(t)
	for i, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			_, cdkTpl := synth(t, sc.props)
			cdk := evaluate(t, cdkTpl, nil)
			sam := evaluate(t, sams[i], sc.params)
			if got := resourceIDs(cdk); !reflect.DeepEqual(got, sc.want) {
				t.Errorf("CDK resources:\n got %v\nwant %v", got, sc.want)
			}
			if got := resourceIDs(sam); !reflect.DeepEqual(got, sc.want) {
				t.Errorf("SAM resources:\n got %v\nwant %v", got, sc.want)
			}
			comparable(t, cdk)
			comparable(t, sam)
			for id, c := range cdk.Resources {
				s, ok := sam.Resources[id]
				if !ok {
					continue
				}
				if !reflect.DeepEqual(c, s) {
					t.Errorf("%s differs:\n%s", id, diff(c, s))
				}
			}
			if !reflect.DeepEqual(cdk.Outputs, sam.Outputs) {
				t.Errorf("outputs differ:\n%s", diff(cdk.Outputs, sam.Outputs))
			}
		})
	}
}

// diff shows two values as indented JSON, CDK first, with the first
// differing line marked.
func diff(cdk, sam any) string {
	a, _ := json.MarshalIndent(cdk, "", " ")
	b, _ := json.MarshalIndent(sam, "", " ")
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			lo := max(0, i-8)
			return fmt.Sprintf("line %d\nCDK: %s\nSAM: %s\nCDK context:\n%s", i, x, y, strings.Join(al[lo:min(len(al), i+4)], "\n"))
		}
	}
	return "(equal as JSON)"
}
