// Command filewalk follows acquires of core/limiter from file to file and
// counts, for each file of the package, how many times a call enters it
// from another file (docs/design.md §5, "Where it lives"):
//
//	go run ./scripts/filewalk [-max 2]
//
// It changes nothing in the tree. Every function of the package's
// non-test files is given a first statement that notes its file and its
// caller's, in copies the go command reads through an overlay (go help
// build, -overlay), beside a recorder and the walks of walk.go.txt; then
// the package's tests are run with the overlay, the walks only. Each walk
// is one Acquire on a limiter that has already served the pair, but for
// "cold": a warm admission (on a canned answer and on DynamoDB Local), a
// 429 DynamoDB decides, a local 429, and the first acquire of a pair.
// Calls into other packages are not counted; calls from them (the SDK
// running the package's options and middleware) are. filewalk prints each
// walk's files by entries, and fails when a walk other than cold enters a
// file more than -max times.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// walks is the test file of the walks and the recorder, added to the
// package through the overlay.
//
//go:embed walk.go.txt
var walks string

// recorder is the package file that counts the entries.
//
//go:embed record.go.txt
var recorder string

const pkg = "./core/limiter"

func main() {
	max := flag.Int("max", 2, "the most entries into one file a warm walk may make")
	flag.Parse()
	if err := run(*max); err != nil {
		fmt.Fprintln(os.Stderr, "filewalk:", err)
		os.Exit(1)
	}
}

func run(max int) error {
	dir, err := packageDir()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "filewalk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	overlay, err := instrument(dir, tmp)
	if err != nil {
		return err
	}
	for name, text := range map[string]string{"zz_filewalk_record.go": recorder, "zz_filewalk_test.go": walks} {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
		overlay[filepath.Join(dir, name)] = p
	}
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		return err
	}
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", "test", "-overlay="+ovPath, "-count=1", "-run=^TestFileWalk$", "-v", pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return report(&out, max)
}

// packageDir is the folder of core/limiter.
func packageDir() (string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// instrument writes to tmp a copy of every non-test file of dir whose
// functions each begin with filewalkEnter(), and returns the overlay's
// replacements.
func instrument(dir, tmp string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	overlay := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				enter := &ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent("filewalkEnter")}}
				fn.Body.List = append([]ast.Stmt{enter}, fn.Body.List...)
			}
		}
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		copyPath := filepath.Join(tmp, filepath.Base(path))
		if err := os.WriteFile(copyPath, buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		overlay[path] = copyPath
	}
	if len(overlay) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return overlay, nil
}

// report prints the walks the test printed ("FILEWALK walk file entries"
// lines) and fails when a warm walk enters a file more than max times.
func report(out *bytes.Buffer, max int) error {
	counts := map[string]map[string]int{}
	var order []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "FILEWALK" {
			continue
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return fmt.Errorf("line %q: %w", sc.Text(), err)
		}
		if counts[f[1]] == nil {
			counts[f[1]] = map[string]int{}
			order = append(order, f[1])
		}
		counts[f[1]][f[2]] = n
	}
	if len(order) == 0 {
		return fmt.Errorf("the walks printed nothing:\n%s", out.String())
	}
	var over []string
	for _, walk := range order {
		files := make([]string, 0, len(counts[walk]))
		for f := range counts[walk] {
			files = append(files, f)
		}
		sort.Slice(files, func(i, j int) bool {
			a, b := counts[walk][files[i]], counts[walk][files[j]]
			return a > b || a == b && files[i] < files[j]
		})
		fmt.Printf("%s:", walk)
		for _, f := range files {
			fmt.Printf(" %s %d", f, counts[walk][f])
			if counts[walk][f] > max && walk != "cold" {
				over = append(over, fmt.Sprintf("%s enters %s %d times", walk, f, counts[walk][f]))
			}
		}
		fmt.Println()
	}
	if len(over) > 0 {
		return fmt.Errorf("more than %d entries: %s", max, strings.Join(over, "; "))
	}
	return nil
}
