package ddbtest

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
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
// and carry a stream each when asked (WithStream).
func TestNewTableIsFreshAndIsolated(t *testing.T) {
	a, b := NewTable(t, WithStream()), NewTable(t, WithStream())
	if a.Name == b.Name {
		t.Fatalf("two tables share the name %s", a.Name)
	}
	if a.StreamARN == "" || b.StreamARN == "" || a.StreamARN == b.StreamARN {
		t.Fatalf("stream ARNs %q, %q", a.StreamARN, b.StreamARN)
	}
	if a.Def.StreamView != schema.Definition().StreamView {
		t.Errorf("with WithStream the definition's stream is %q, want the schema's %q", a.Def.StreamView, schema.Definition().StreamView)
	}
}

// A harness table has no stream unless asked (WithStream), and is
// otherwise the schema's definition.
func TestNewTableHasNoStreamUnlessAsked(t *testing.T) {
	tbl := NewTable(t)
	if tbl.StreamARN != "" || tbl.Def.StreamView != "" {
		t.Errorf("stream ARN %q, view %q; want none", tbl.StreamARN, tbl.Def.StreamView)
	}
	want := schema.Definition(schema.WithoutStream())
	if !reflect.DeepEqual(tbl.Def, want) {
		t.Errorf("definition %+v, want the schema's without its stream %+v", tbl.Def, want)
	}
	desc, err := tbl.DB.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &tbl.Name})
	if err != nil {
		t.Fatal(err)
	}
	if ss := desc.Table.StreamSpecification; ss != nil && ss.StreamEnabled != nil && *ss.StreamEnabled {
		t.Errorf("DynamoDB Local describes a stream: %+v", ss)
	}
}

// TestNewOwnTableIsOnItsOwnEmulator checks NewOwnTable's table lives on an
// emulator other than the binary's, holds only itself, has no stream
// unless asked, and that the emulator is gone once the test ends.
func TestNewOwnTableIsOnItsOwnEmulator(t *testing.T) {
	if os.Getenv(EndpointEnv) != "" {
		t.Logf("%s is set: OwnEndpoint returns it, checked as such", EndpointEnv)
	}
	shared := NewTable(t)
	var own *Table
	t.Run("own", func(t *testing.T) {
		own = NewOwnTable(t)
		if own.StreamARN != "" {
			t.Errorf("stream ARN %q, want none", own.StreamARN)
		}
		if os.Getenv(EndpointEnv) != "" {
			return
		}
		if own.Endpoint == shared.Endpoint {
			t.Fatalf("own table on the shared emulator %s", own.Endpoint)
		}
		out, err := own.DB.ListTables(context.Background(), &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.TableNames) != 1 || out.TableNames[0] != own.Name {
			t.Fatalf("own emulator holds %v, want only %s", out.TableNames, own.Name)
		}
	})
	if os.Getenv(EndpointEnv) != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dynamodblocal.Ping(ctx, own.Endpoint); err == nil {
		t.Fatalf("the own emulator %s still answers after its test ended", own.Endpoint)
	}
}
