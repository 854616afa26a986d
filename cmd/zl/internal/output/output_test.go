package output_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
)

type sample struct {
	Name    string   `json:"name"`
	Count   int      `json:"count"`
	Crons   []string `json:"crons"`
	Flag    string   `json:"flag"`
	Comment string   `json:"comment"`
}

func (s sample) Tables() []output.Table {
	return []output.Table{{Title: "Sample", Columns: []string{"NAME", "COUNT"}, Rows: [][]string{{s.Name, "3"}}, Caption: "one row"}}
}

// TestRenderFormats: one value, three formats; JSON and YAML carry the
// same snake_case fields in the same order, YAML quotes what would read as
// another type, a table has its title, header and caption.
func TestRenderFormats(t *testing.T) {
	v := sample{Name: "gpt-4", Count: 3, Crons: []string{"0 0 1 * *"}, Flag: "true", Comment: "a: b"}
	var j, y, tb bytes.Buffer
	for f, w := range map[output.Format]*bytes.Buffer{output.FormatJSON: &j, output.FormatYAML: &y, output.FormatTable: &tb} {
		if err := output.Render(w, f, v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	wantJSON := "{\n  \"name\": \"gpt-4\",\n  \"count\": 3,\n  \"crons\": [\n    \"0 0 1 * *\"\n  ],\n  \"flag\": \"true\",\n  \"comment\": \"a: b\"\n}\n"
	if j.String() != wantJSON {
		t.Errorf("json:\n%s", j.String())
	}
	wantYAML := "name: gpt-4\ncount: 3\ncrons:\n  - 0 0 1 * *\nflag: \"true\"\ncomment: 'a: b'\n"
	if y.String() != wantYAML {
		t.Errorf("yaml:\n%s", y.String())
	}
	var m map[string]any
	if err := yaml.Unmarshal(y.Bytes(), &m); err != nil || m["flag"] != "true" || m["count"] != 3 || m["comment"] != "a: b" {
		t.Errorf("yaml does not read back: %v %v", m, err)
	}
	wantTable := "Sample\n┌───────┬───────┐\n│ NAME  │ COUNT │\n├───────┼───────┤\n│ gpt-4 │ 3     │\n└───────┴───────┘\none row\n"
	if tb.String() != wantTable {
		t.Errorf("table:\n%s", tb.String())
	}
}

// TestTableAsData: a plain list of rows renders as objects keyed by the
// column names in snake_case; a table without rows is its title and
// caption alone.
func TestTableAsData(t *testing.T) {
	tbl := output.Table{Columns: []string{"Name", "Client min version"}, Rows: [][]string{{"a", "0.17.0"}, {"b"}}}
	var j bytes.Buffer
	if err := output.Render(&j, output.FormatJSON, tbl); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]string
	if err := json.Unmarshal(j.Bytes(), &rows); err != nil || len(rows) != 2 || rows[0]["client_min_version"] != "0.17.0" || rows[1]["client_min_version"] != "" {
		t.Fatalf("rows %v (%v) from\n%s", rows, err, j.String())
	}
	var e bytes.Buffer
	if err := output.Render(&e, output.FormatTable, output.Table{Title: "Nothing", Columns: []string{"A"}, Caption: "No rows."}); err != nil || e.String() != "Nothing\nNo rows.\n" {
		t.Fatalf("empty table %q %v", e.String(), err)
	}
	var n bytes.Buffer
	if err := output.Render(&n, output.FormatTable, 42); err == nil || !strings.Contains(err.Error(), "--output json") {
		t.Fatalf("a value with no table form: %v", err)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]output.Format{"": output.FormatJSON, "table": output.FormatTable, " YAML ": output.FormatYAML, "json": output.FormatJSON} {
		if got, err := output.ParseFormat(in, output.FormatJSON); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	var fe *output.FormatError
	if _, err := output.ParseFormat("xml", output.FormatJSON); !errors.As(err, &fe) || !strings.Contains(err.Error(), "pass --output table, json or yaml") {
		t.Fatalf("xml: %v", err)
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"NAME": "name", "Client min version": "client_min_version", "PARTITION KEY": "partition_key", "a--b ": "a_b", "LIMITS AFTER": "limits_after"} {
		if got := output.SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzTableJSON: whatever the cells hold (quotes, newlines, invalid UTF-8
// from outside input), a table's JSON form parses, row for row.
func FuzzTableJSON(f *testing.F) {
	f.Add("NAME", "a\"b", "x\ny")
	f.Add("", "\xff", "<script>")
	f.Add("Second", "a", "b")
	f.Fuzz(func(t *testing.T, col, a, b string) {
		tbl := output.Table{Columns: []string{col, "second"}, Rows: [][]string{{a, b}, {b}}}
		raw, err := tbl.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]string
		if err := json.Unmarshal(raw, &rows); err != nil || len(rows) != 2 {
			t.Fatalf("%q: %v", raw, err)
		}
		var y bytes.Buffer
		if err := output.Render(&y, output.FormatYAML, tbl); err != nil {
			t.Fatal(err)
		}
		var back []map[string]string
		if err := yaml.Unmarshal(y.Bytes(), &back); err != nil || len(back) != 2 {
			t.Fatalf("yaml %q: %v", y.String(), err)
		}
		// The YAML form is the JSON form: the same strings (invalid UTF-8
		// turned into U+FFFD by both).
		for i := range rows {
			for k, v := range rows[i] {
				if back[i][k] != v {
					t.Fatalf("row %d %q: yaml %q, json %q", i, k, back[i][k], v)
				}
			}
		}
	})
}

// TestYAMLStringReadsBack: a string YAMLString gives, as a key or a value,
// reads back as itself, the multi-line strings whose first line starts
// with a tab among them (the encoder's literal block of those does not
// parse: the fuzz input testdata/fuzz/FuzzTableJSON/315e7e74cce1228e).
func TestYAMLStringReadsBack(t *testing.T) {
	for _, s := range []string{"\t\n", "\tx\ny", "\t\t\n\t", "a\n\tb", "\n\tx", "a\nb", " a\nb", "plain", "\t", ""} {
		doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			output.YAMLString("k"), output.YAMLString(s),
			output.YAMLString(s), output.YAMLString("v"),
		}}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var back map[string]string
		if err := yaml.Unmarshal(raw, &back); err != nil {
			t.Errorf("%q: %q does not parse: %v", s, raw, err)
			continue
		}
		if back["k"] != s || back[s] != "v" {
			t.Errorf("%q: %q reads back as %q", s, raw, back)
		}
	}
}
