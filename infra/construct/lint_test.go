package construct_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/infra/construct"
)

// TestCfnLint: cfn-lint passes, warnings included, on template.yaml and on
// the template the construct synthesizes in every scenario (and with a
// limits resource).
func TestCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is needed (it comes with the machine's Python packages): %v", err)
	}
	dir := t.TempDir()
	files := []string{filepath.Join(repoRoot(), "template.yaml")}
	scs := scenarios()
	scs = append(scs, scenario{name: "limits", props: construct.Props{
		Limits: &construct.Limits{ManifestFile: filepath.Join("..", "limits.example.yaml")}}})
	for _, sc := range scs {
		_, tpl := synth(t, sc.props)
		raw, err := json.Marshal(tpl)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, strings.ReplaceAll(sc.name, " ", "-")+".json")
		if err := os.WriteFile(f, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out, err := exec.Command(lint, files...).CombinedOutput()
	if err != nil {
		t.Fatalf("cfn-lint %d templates: %v\n%s", len(files), err, out)
	}
}
