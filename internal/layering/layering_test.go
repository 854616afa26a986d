package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the path of the repository's main module; infra/ is a module of
// its own under it.
const module = "github.com/zae-limiter/zae-limiter-go"

// coreLayers places every package of core: a package may import only
// packages of lower layers. A new package of core goes here, in the layer
// its imports give it.
var coreLayers = [][]string{
	{"core/internal/ddbjson", "core/limiter/internal/lru"},
	{"core/condwrite", "core/schema", "core/streamimage", "core/limiter/internal/itemsize", "core/internal/ulid", "core/internal/wait", "core/internal/capability", "core/dynamodblocal"},
	{"core/internal/expr", "core/internal/query", "core/bucket", "core/version", "core/streampoll"},
	{"core/schedule"},
	{"core/limit", "core/bucketitem"},
	{"core/internal/schedsync", "core/internal/grant", "core/usage", "core/limiter/internal/answer"},
	{"core/config", "core/aggregator/maintenance", "core/limiter/internal/bucketwrite", "core/internal/shard"},
	{"core/aggregator"},
	{"core/limiter", "core/manifest"},
	{"core/control", "core/httplimit"},
	{"core/provision"},
}

// part names the part of the house a package (a path relative to the
// repository root) belongs to.
func part(pkg string) string {
	for _, p := range []string{"core", "functions", "cmd", "infra", "internal", "scripts"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return p
		}
	}
	return ""
}

// allowed is the rule: whether non-test code of package from may import
// package to (both relative to the repository root). It says why not.
func allowed(from, to string) error {
	pf, pt := part(from), part(to)
	switch {
	case pf == "core" && pt == "core":
		lf, lt := layerOf(from), layerOf(to)
		switch {
		case lf < 0:
			return fmt.Errorf("%s has no layer: declare it in coreLayers", from)
		case lt < 0:
			return fmt.Errorf("%s has no layer: declare it in coreLayers", to)
		case lt >= lf:
			return fmt.Errorf("%s (layer %d) may import only lower layers, not %s (layer %d)", from, lf, to, lt)
		}
		return nil
	case pf == "core":
		return fmt.Errorf("core imports only core, not %s", to)
	case pf == "functions":
		if pt == "core" || pt == "functions" {
			return nil
		}
		return fmt.Errorf("functions import only core and functions, not %s", to)
	case pf == "infra":
		if pt == "core" || pt == "functions" || pt == "infra" {
			return nil
		}
		return fmt.Errorf("infra imports only core, functions and infra, not %s", to)
	case pf == "cmd", pf == "internal", pf == "scripts":
		if pt == "cmd" || pt == "scripts" {
			// A command may import its own subpackages (cmd/zl →
			// cmd/zl/internal/...), never another command or its parts.
			if pf == "cmd" && pt == "cmd" && command(from) != "" && command(from) == command(to) && to != command(to) {
				return nil
			}
			return fmt.Errorf("nothing imports a command, yet %s imports %s", from, to)
		}
		if pt == "internal" && shipped(command(from)) {
			return fmt.Errorf("%s is a shipped tool: it imports no dev tooling of internal/, yet imports %s", from, to)
		}
		return nil
	}
	return fmt.Errorf("%s is in no part of the house", from)
}

// shippedCommands are the commands users install (`go install
// .../cmd/zl`): like the product, they and their subpackages import no dev
// or test tooling of internal/. The other commands (zl-local, zl-soak) are
// that tooling's front ends.
func shippedCommands() []string { return []string{"cmd/zl"} }

func shipped(cmd string) bool { return slices.Contains(shippedCommands(), cmd) }

// command is the command a package of cmd/ belongs to (cmd/zl for
// cmd/zl/internal/cli), "" for a package outside cmd/.
func command(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) < 2 || parts[0] != "cmd" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

func layerOf(pkg string) int {
	for i, l := range coreLayers {
		if slices.Contains(l, pkg) {
			return i
		}
	}
	return -1
}

// TestRule pins the rule on arrows of each kind, so that a rule that lets
// everything pass fails here.
func TestRule(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"core/limiter", "core/config", true},
		{"core/config", "core/limiter", false},    // back up inside core
		{"core/bucket", "core/bucket", false},     // same layer
		{"core/limiter", "internal/clock", false}, // runtime on tooling
		{"core/provision", "functions/provisioner", false},
		{"core/newpkg", "core/schema", false}, // undeclared
		{"functions/provisioner/handler", "core/provision", true},
		{"functions/aggregator/handler", "core/aggregator", true},
		{"core/aggregator", "functions/aggregator/handler", false},
		{"infra/construct", "functions/aggregator/handler", true},
		{"functions/aggregator", "internal/ddblocal", false},
		{"functions/aggregator", "cmd/zl-local", false},
		{"infra/construct", "core/manifest", true},
		{"infra/construct", "internal/iamcalls", false},
		{"cmd/zl-local", "internal/showcase", true},
		{"internal/showcase", "core/limiter", true},
		{"internal/soak", "cmd/zl-soak", false},
		{"cmd/zl", "cmd/zl/internal/cli", true},                 // a command's own subpackage
		{"cmd/zl/internal/cli", "cmd/zl/internal/output", true}, // between its subpackages
		{"cmd/zl/internal/cli", "core/control", true},           // the library's operator door
		{"cmd/zl-soak", "cmd/zl/internal/cli", false},           // another command's parts
		{"cmd/zl/internal/cli", "cmd/zl-local", false},          // another command
		{"cmd/zl/internal/cli", "cmd/zl", false},                // its own command
		{"internal/showcase", "cmd/zl/internal/output", false},  // tooling on a command's parts
		{"cmd/zl", "internal/ddbtest", false},                   // a shipped tool on dev tooling
		{"cmd/zl/internal/awsconf", "internal/ddblocal", false}, // … from a subpackage too
		{"cmd/zl/internal/cli", "internal/ddblocal", false},     // zl local's launcher is core's (P51)
		{"cmd/zl/internal/cli", "core/dynamodblocal", true},
		{"internal/ddblocal", "core/dynamodblocal", true},
		{"cmd/zl-soak", "internal/soak", true}, // tooling's own front end
	} {
		if err := allowed(c.from, c.to); (err == nil) != c.ok {
			t.Errorf("%s → %s: %v, want allowed=%v", c.from, c.to, err, c.ok)
		}
	}
}

// TestLayering reads the imports of every non-test Go file of the
// repository (both modules) and holds each arrow to the rule.
func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var arrows int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		from := filepath.ToSlash(rel)
		if part(from) == "" {
			t.Errorf("%s: a Go package outside core, functions, cmd, infra, internal and scripts", from)
			return nil
		}
		if part(from) == "core" && layerOf(from) < 0 && !seen[from] {
			t.Errorf("%s has no layer: declare it in coreLayers", from)
		}
		seen[from] = true
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			arrows++
			to := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if err := allowed(from, to); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %v", filepath.ToSlash(rel), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if arrows < 50 || !seen["core/limiter"] || !seen["infra/construct"] {
		t.Fatalf("read %d arrows from %d packages: the walk missed the tree", arrows, len(seen))
	}
	for _, l := range coreLayers {
		for _, pkg := range l {
			if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
				t.Errorf("coreLayers names %s, which is gone", pkg)
			}
		}
	}
}
