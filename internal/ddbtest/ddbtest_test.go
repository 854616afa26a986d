package ddbtest

import (
	"regexp"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

var validTableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func TestTableNameIsValidAndUnique(t *testing.T) {
	for _, name := range []string{"TestX", "TestA/sub case #1", strings.Repeat("Long", 40), "T/ü/世界"} {
		a, b := TableName(name), TableName(name)
		if !validTableName.MatchString(a) {
			t.Errorf("TableName(%q) = %q, not a valid DynamoDB table name", name, a)
		}
		if a == b {
			t.Errorf("TableName(%q) gave %q twice", name, a)
		}
	}
}

// TestNewTableIsFreshAndIsolated checks two tables of one test are distinct
// and empty, and carry a stream.
func TestNewTableIsFreshAndIsolated(t *testing.T) {
	a, b := NewTable(t), NewTable(t)
	if a.Name == b.Name {
		t.Fatalf("two tables share the name %s", a.Name)
	}
	if a.StreamARN == "" || b.StreamARN == "" || a.StreamARN == b.StreamARN {
		t.Fatalf("stream ARNs %q, %q", a.StreamARN, b.StreamARN)
	}
}
