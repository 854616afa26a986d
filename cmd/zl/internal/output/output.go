// Package output renders what a zl command returns, in the format the
// operator asked for: a table for a person, JSON or YAML for a script.
// A command hands Render a typed value whose JSON field names are stable
// snake_case (the JSON and YAML forms are the same document) and which
// says how it reads as tables (Tabler); a plain list of rows with column
// names is a Table. A command whose result is one table may also offer
// CSV; a long list is written item by item with a ListWriter.
package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"go.yaml.in/yaml/v3"
)

// Format is an output format.
type Format string

// The formats.
const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
	// FormatCSV is comma-separated values under a header row (RFC 4180):
	// only for commands whose result is one table, which say so.
	FormatCSV Format = "csv"
)

// Formats lists the formats every command takes, as --output takes them.
func Formats() []string {
	return []string{string(FormatTable), string(FormatJSON), string(FormatYAML)}
}

// CSVFormats lists the formats of a command that offers CSV.
func CSVFormats() []string { return append(Formats(), string(FormatCSV)) }

// FormatError refuses an unknown output format, or one the command does
// not offer.
type FormatError struct {
	// Given is the format asked for.
	Given string
	// Accepted are the formats the command takes (default Formats()).
	Accepted []string
}

// Error implements error.
func (e *FormatError) Error() string {
	acc := e.Accepted
	if len(acc) == 0 {
		acc = Formats()
	}
	last := len(acc) - 1
	return fmt.Sprintf("output format %q is not one of %s: pass --output %s or %s", e.Given, strings.Join(acc, ", "), strings.Join(acc[:last], ", "), acc[last])
}

// ParseFormat reads a format's name; "" is def. It takes csv too: a
// command that does not offer it refuses it with a *FormatError.
func ParseFormat(s string, def Format) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "":
		return def, nil
	case FormatTable, FormatJSON, FormatYAML, FormatCSV:
		return f, nil
	}
	return "", &FormatError{Given: s}
}

// Table is rows under column names, with an optional title above and a
// caption below. As JSON it is the list of its rows, each an object keyed
// by the snake_case form of the column names (or by Keys); as CSV the
// same keys head its rows.
type Table struct {
	Title   string
	Columns []string
	// Keys, when set, are the field names of the JSON and CSV forms, one
	// per column, used as given.
	Keys    []string
	Rows    [][]string
	Caption string
}

// keys are the field names of t's JSON and CSV forms.
func (t Table) keys() []string {
	if len(t.Keys) == len(t.Columns) {
		return t.Keys
	}
	keys := make([]string, len(t.Columns))
	seen := make(map[string]bool, len(t.Columns))
	for i, c := range t.Columns {
		k := SnakeCase(c)
		for n := 2; seen[k]; n++ { // two columns of one name stay two fields
			k = SnakeCase(c) + "_" + strconv.Itoa(n)
		}
		seen[k] = true
		keys[i] = k
	}
	return keys
}

// Tabler is a value that reads as one or more tables.
type Tabler interface {
	Tables() []Table
}

// Tables implements Tabler.
func (t Table) Tables() []Table { return []Table{t} }

// CSVTabler is a value whose CSV form is not its one table: several
// tables flattened into one, or columns of their own.
type CSVTabler interface {
	CSVTable() Table
}

// MarshalJSON writes the rows as objects keyed by the column names in
// snake_case (a repeated name gets _2, _3…) or by Keys, in column order.
func (t Table) MarshalJSON() ([]byte, error) {
	keys := t.keys()
	var b bytes.Buffer
	b.WriteByte('[')
	for r, row := range t.Rows {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			var cell string
			if i < len(row) {
				cell = row[i]
			}
			vb, _ := json.Marshal(cell)
			b.Write(kb)
			b.WriteByte(':')
			b.Write(vb)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// SnakeCase turns a column name ("Client min version") into a field name
// ("client_min_version").
func SnakeCase(s string) string {
	var b strings.Builder
	underscore := false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
			underscore = false
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			underscore = false
		default:
			if !underscore && b.Len() > 0 {
				b.WriteByte('_')
				underscore = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// Render writes v to w in format f. JSON is indented by two spaces and ends
// with a newline; YAML is the same document; a table needs v to be a
// Tabler.
func Render(w io.Writer, f Format, v any) error {
	switch f {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case FormatYAML:
		return writeYAML(w, v)
	case FormatTable:
		tb, ok := v.(Tabler)
		if !ok {
			return fmt.Errorf("output: %T has no table form: pass --output json or yaml", v)
		}
		return WriteTables(w, tb.Tables())
	case FormatCSV:
		if ct, ok := v.(CSVTabler); ok {
			return WriteCSV(w, ct.CSVTable())
		}
		tb, ok := v.(Tabler)
		var ts []Table
		if ok {
			ts = tb.Tables()
		}
		if len(ts) != 1 {
			return &FormatError{Given: string(f)}
		}
		return WriteCSV(w, ts[0])
	}
	return &FormatError{Given: string(f)}
}

// WriteCSV writes t as CSV: a header row of its keys (Keys, else the
// snake_case column names), then its rows, every row as wide as the
// header. Title and caption are left out.
func WriteCSV(w io.Writer, t Table) error {
	cw := csv.NewWriter(w)
	keys := t.keys()
	if err := cw.Write(keys); err != nil {
		return err
	}
	for _, r := range t.Rows {
		if err := cw.Write(fitRow(r, len(keys))); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// fitRow returns r cut or padded with empty cells to n cells.
func fitRow(r []string, n int) []string {
	if len(r) == n {
		return r
	}
	out := make([]string, n)
	copy(out, r)
	return out
}

// WriteTables writes tables one after another, a blank line between them.
func WriteTables(w io.Writer, ts []Table) error {
	for i, t := range ts {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := writeTable(w, t); err != nil {
			return err
		}
	}
	return nil
}

// writeTable writes the title on a line of its own, then the rows in a
// box under the column names, then the caption. A table without rows is
// its title and caption alone.
func writeTable(w io.Writer, t Table) error {
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	if len(t.Rows) > 0 {
		tw := table.NewWriter()
		tw.SetStyle(table.StyleLight)
		tw.Style().Format.Header = 0 // column names as written
		header := make(table.Row, len(t.Columns))
		for i, c := range t.Columns {
			header[i] = c
		}
		tw.AppendHeader(header)
		for _, r := range t.Rows {
			row := make(table.Row, len(t.Columns))
			for i := range row {
				if i < len(r) {
					row[i] = r[i]
				}
			}
			tw.AppendRow(row)
		}
		b.WriteString(tw.Render() + "\n")
	}
	if t.Caption != "" {
		b.WriteString(t.Caption + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeYAML writes the JSON document of v as block-style YAML, keys in
// the JSON order.
func writeYAML(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	doc, err := yamlNode(dec)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// yamlString is the node of a string key or value. The encoder writes a
// string with line breaks as a literal block, and when the block's first
// line starts with a tab its own parser rejects what it wrote ("found a
// tab character where an indentation space is expected"); such a string,
// and any other multi-line string holding a tab, is written double-quoted
// with escapes instead, which reads back as the same string.
func YAMLString(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") && strings.Contains(s, "\t") {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yamlNode reads the next JSON value of dec as a YAML node: mappings keep
// their key order, strings stay strings whatever they hold (the encoder
// quotes or escapes as needed), numbers keep their digits.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, YAMLString(k.(string)))
			}
			c, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return YAMLString(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("output: unexpected JSON token %v", tok)
}
