package layering

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// raceTagged reports whether a Go file's build constraint names the race
// tag, so that a build with -race holds a different set of files from a
// plain one.
func raceTagged(name string, src []byte) (bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return false, err
	}
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) && !constraint.IsPlusBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return false, err
			}
			named := false
			expr.Eval(func(tag string) bool {
				named = named || tag == "race"
				return true
			})
			if named {
				return true, nil
			}
		}
	}
	return false, nil
}

func TestRaceTagged(t *testing.T) {
	for src, want := range map[string]bool{
		"package p\n":                                         false,
		"//go:build linux\n\npackage p\n":                     false,
		"//go:build race\n\npackage p\n":                      true,
		"//go:build !race\n\npackage p\n":                     true,
		"//go:build linux && (arm64 || !race)\n\npackage p\n": true,
		"// +build race\n\npackage p\n":                       true,
		"package p\n\n//go:build race\n":                      false, // not a constraint after the clause
		"// Package p is raced.\npackage p\n":                 false,
	} {
		got, err := raceTagged("p.go", []byte(src))
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", src, got, err, want)
		}
	}
}

// TestNoRaceBuildConstraint: make test vets, lints and tests the main
// module as built with -race only (the Makefile's vet, lint and unit), so
// a file for a plain build alone (//go:build !race) would be checked by
// none of them. No file of the repository names the race tag.
func TestNoRaceBuildConstraint(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "node_modules" || name == "cdk.out") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		tagged, err := raceTagged(path, src)
		if err != nil {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s: %v", filepath.ToSlash(rel), err)
		} else if tagged {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s: a build constraint names the race tag; make test checks the race build only", filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files: the walk missed the tree", files)
	}
}
