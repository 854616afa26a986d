package output_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
)

type item struct {
	Name  string   `json:"name"`
	Count *int64   `json:"count,omitempty"`
	Tags  []string `json:"tags"`
	Note  string   `json:"note"`
}

// TestListWriterIsRender: a list written item by item is byte for byte
// what Render writes for the whole list, in JSON and YAML, empty or not;
// CSV is WriteCSV's; a table is written at Close with its caption.
func TestListWriterIsRender(t *testing.T) {
	three := int64(3)
	lists := [][]item{
		nil,
		{{Name: "a", Tags: []string{}, Note: "<b> & \"c\""}},
		{{Name: "a", Count: &three, Tags: []string{"x", "y"}, Note: "a: b"}, {Name: "true", Tags: []string{}}, {Name: "z\nz"}},
	}
	tbl := output.Table{Title: "Items", Columns: []string{"NAME", "COUNT"}, Keys: []string{"name", "count#n"}}
	for _, list := range lists {
		for _, f := range []output.Format{output.FormatJSON, output.FormatYAML, output.FormatCSV, output.FormatTable} {
			var streamed, whole bytes.Buffer
			lw := output.NewListWriter(&streamed, f, tbl)
			want := tbl
			for _, it := range list {
				row := []string{it.Name, strings.Repeat("3", len(it.Tags))}
				if err := lw.Add(it, row); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				want.Rows = append(want.Rows, row)
			}
			if err := lw.Close("caption"); err != nil {
				t.Fatalf("%s close: %v", f, err)
			}
			var err error
			switch f {
			case output.FormatJSON, output.FormatYAML:
				v := list
				if v == nil {
					v = []item{}
				}
				err = output.Render(&whole, f, v)
			case output.FormatCSV:
				err = output.WriteCSV(&whole, want)
			case output.FormatTable:
				want.Caption = "caption"
				err = output.Render(&whole, f, want)
			}
			if err != nil {
				t.Fatal(err)
			}
			if streamed.String() != whole.String() {
				t.Errorf("%s of %d items:\nstreamed\n%s\nwhole\n%s", f, len(list), streamed.String(), whole.String())
			}
		}
	}
}

// TestCSV: a header of the keys (Keys, else the snake_case columns), rows
// as wide as the header, quoting as RFC 4180 wants; a value whose tables
// are several needs a CSVTable, or CSV is refused as a format it lacks.
func TestCSV(t *testing.T) {
	var b bytes.Buffer
	tbl := output.Table{Title: "T", Columns: []string{"Window start", "tpm"}, Rows: [][]string{{"2026-02-01T00:00:00Z", "1,5"}, {"x"}, {"a\"b", "c\nd", "extra"}}, Caption: "c"}
	if err := output.Render(&b, output.FormatCSV, tbl); err != nil {
		t.Fatal(err)
	}
	want := "window_start,tpm\n2026-02-01T00:00:00Z,\"1,5\"\nx,\n\"a\"\"b\",\"c\nd\"\n"
	if b.String() != want {
		t.Errorf("csv:\n%q\nwant\n%q", b.String(), want)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(recs) != 4 || recs[3][1] != "c\nd" {
		t.Errorf("does not read back: %v %q", err, recs)
	}
	b.Reset()
	tbl.Keys = []string{"window_start", "tpm#od"}
	if err := output.Render(&b, output.FormatCSV, tbl); err != nil || !strings.HasPrefix(b.String(), "window_start,tpm#od\n") {
		t.Errorf("keys: %q %v", b.String(), err)
	}
	var fe *output.FormatError
	if err := output.Render(&b, output.FormatCSV, 42); !errors.As(err, &fe) {
		t.Errorf("a value without tables written as csv: %v", err)
	}
	if err := output.Render(&b, output.FormatCSV, twoTables{}); !errors.As(err, &fe) || fe.Given != "csv" {
		t.Errorf("two tables: %v", err)
	}
	b.Reset()
	if err := output.Render(&b, output.FormatCSV, flat{}); err != nil || b.String() != "k\nv\n" {
		t.Errorf("CSVTabler: %q %v", b.String(), err)
	}
}

type twoTables struct{}

func (twoTables) Tables() []output.Table { return []output.Table{{}, {}} }

type flat struct{ twoTables }

func (flat) CSVTable() output.Table {
	return output.Table{Columns: []string{"k"}, Rows: [][]string{{"v"}}}
}

// TestFormatErrorAccepted: the message lists what the command takes.
func TestFormatErrorAccepted(t *testing.T) {
	if got := (&output.FormatError{Given: "xml"}).Error(); got != `output format "xml" is not one of table, json, yaml: pass --output table, json or yaml` {
		t.Errorf("default: %s", got)
	}
	if got := (&output.FormatError{Given: "xml", Accepted: output.CSVFormats()}).Error(); got != `output format "xml" is not one of table, json, yaml, csv: pass --output table, json, yaml or csv` {
		t.Errorf("with csv: %s", got)
	}
	if f, err := output.ParseFormat(" CSV", output.FormatJSON); err != nil || f != output.FormatCSV {
		t.Errorf("csv: %q %v", f, err)
	}
	if !slices.Equal(output.Formats(), []string{"table", "json", "yaml"}) {
		t.Errorf("Formats() = %v: every command takes these", output.Formats())
	}
}
