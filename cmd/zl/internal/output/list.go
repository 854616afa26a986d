package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
)

// ListWriter writes a list one item at a time, for a command that reads its
// result page by page: JSON, YAML and CSV are written as the items come, and
// are what Render writes for the whole list (a JSON array, a YAML sequence,
// CSV rows under a header). A table is written by Close, when every row is
// known, since its columns are as wide as their widest cell.
type ListWriter struct {
	w     io.Writer
	f     Format
	table Table
	csv   *csv.Writer
	n     int
}

// NewListWriter starts a list in format f on w. t gives the table and CSV
// forms their title, columns and keys (its rows and caption are not used).
func NewListWriter(w io.Writer, f Format, t Table) *ListWriter {
	t.Rows, t.Caption = nil, ""
	l := &ListWriter{w: w, f: f, table: t}
	if f == FormatCSV {
		l.csv = csv.NewWriter(w)
	}
	return l
}

// Add writes one item: item as JSON or YAML (it must marshal to JSON), row
// as a table or CSV row.
func (l *ListWriter) Add(item any, row []string) error {
	defer func() { l.n++ }()
	switch l.f {
	case FormatTable:
		l.table.Rows = append(l.table.Rows, row)
		return nil
	case FormatCSV:
		if l.n == 0 {
			if err := l.csv.Write(l.table.keys()); err != nil {
				return err
			}
		}
		if err := l.csv.Write(fitRow(row, len(l.table.keys()))); err != nil {
			return err
		}
		// A row is flushed as soon as it is written: a reader of the
		// pipe sees the list as it is read.
		l.csv.Flush()
		return l.csv.Error()
	case FormatJSON:
		var b bytes.Buffer
		if l.n == 0 {
			b.WriteString("[\n  ")
		} else {
			b.WriteString(",\n  ")
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("  ", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(item); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		_, err := l.w.Write(b.Bytes())
		return err
	case FormatYAML:
		return writeYAML(l.w, []any{item})
	}
	return &FormatError{Given: string(l.f)}
}

// Close ends the list: the closing bracket of JSON, "[]" for an empty JSON
// or YAML list, the header alone for empty CSV, or the whole table with
// caption below it.
func (l *ListWriter) Close(caption string) error {
	var err error
	switch l.f {
	case FormatTable:
		l.table.Caption = caption
		err = writeTable(l.w, l.table)
	case FormatCSV:
		if l.n == 0 {
			err = l.csv.Write(l.table.keys())
		}
		l.csv.Flush()
		if err == nil {
			err = l.csv.Error()
		}
	case FormatJSON:
		text := "\n]\n"
		if l.n == 0 {
			text = "[]\n"
		}
		_, err = io.WriteString(l.w, text)
	case FormatYAML:
		if l.n == 0 {
			_, err = io.WriteString(l.w, "[]\n")
		}
	}
	return err
}
