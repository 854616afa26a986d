package ddbtest

import (
	"context"
	"os"
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

// TestNewOwnTableIsOnItsOwnEmulator checks NewOwnTable's table lives on an
// emulator other than the binary's, holds only itself, has no stream when
// asked for none, and that the emulator is gone once the test ends.
func TestNewOwnTableIsOnItsOwnEmulator(t *testing.T) {
	if os.Getenv(EndpointEnv) != "" {
		t.Logf("%s is set: OwnEndpoint returns it, checked as such", EndpointEnv)
	}
	shared := NewTable(t)
	var own *Table
	t.Run("own", func(t *testing.T) {
		own = NewOwnTable(t, schema.WithoutStream())
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
