package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCitedRecordIsExplained: every upstream record (ADR-NNN) that a
// comment or a doc of the repository cites has its entry in the glossary
// of docs/compatibility.md ("- **ADR-NNN: ..."), so that the repository
// explains itself.
func TestEveryCitedRecordIsExplained(t *testing.T) {
	root := filepath.Join("..", "..")
	glossary, err := os.ReadFile(filepath.Join(root, "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	cite := regexp.MustCompile(`ADR-\d{3}`)
	cited := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "cdk.out", ".cache", "build":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, id := range cite.FindAllString(string(b), -1) {
			if _, ok := cited[id]; !ok {
				cited[id] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cited) == 0 {
		t.Fatal("no record cited anywhere: the walk read nothing")
	}
	for id, where := range cited {
		if !strings.Contains(string(glossary), "- **"+id+":") {
			t.Errorf("%s cites %s, which docs/compatibility.md does not explain", where, id)
		}
	}
}
