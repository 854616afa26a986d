package layering

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleTools lists the tools a module's go.mod declares (its tool
// directives), read by the go command.
func moduleTools(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var mod struct{ Tool []struct{ Path string } }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var tools []string
	for _, tl := range mod.Tool {
		tools = append(tools, tl.Path)
	}
	return tools
}

// toolModules lists the modules, at their versions, whose packages a
// module's build of tool compiles: what decides whether two modules'
// builds of the tool are one entry of the build cache.
func toolModules(t *testing.T, dir, tool string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}@{{.Version}}{{end}}", tool)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s in %s: %v", tool, dir, err)
	}
	var mods []string
	for _, m := range strings.Fields(string(out)) {
		if !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	return mods
}

// TestToolsBuiltOnce: a tool both modules declare (staticcheck) is built
// from the same module versions in both, so that `make test` compiles it
// once and infra's `go tool` finds it in the build cache. Versions apart,
// each module compiles its own copy: on an empty build cache, infra's
// staticcheck took 25 s of the run and 46 s of CPU after the main
// module's (docs/design.md §1, "make test on a 2-core machine").
func TestToolsBuiltOnce(t *testing.T) {
	root, infra := filepath.Join("..", ".."), filepath.Join("..", "..", "infra")
	mainTools := moduleTools(t, root)
	shared := 0
	for _, tool := range moduleTools(t, infra) {
		if !slices.Contains(mainTools, tool) {
			continue
		}
		shared++
		m, i := toolModules(t, root, tool), toolModules(t, infra, tool)
		if !slices.Equal(m, i) {
			t.Errorf("%s is built from other module versions in infra:\n  main:  %s\n  infra: %s\n"+
				"align them (go get in one module) so that one build serves both",
				tool, strings.Join(m, " "), strings.Join(i, " "))
		}
	}
	if shared == 0 {
		t.Fatal("no tool declared by both modules: this test checks nothing (was staticcheck's tool directive moved?)")
	}
}
