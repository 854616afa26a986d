package ddblocal

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
)

// childEnv marks this test binary run as RunShared's command: it lists
// the tables of the endpoint it was given, prints the endpoint and exits
// with the code the variable names.
const childEnv = "DDBLOCAL_SHARED_TEST_CHILD"

func TestMain(m *testing.M) {
	if code := os.Getenv(childEnv); code != "" {
		ep := os.Getenv(EndpointEnv)
		if _, err := DynamoDB(ep).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(99)
		}
		fmt.Print(ep)
		var c int
		fmt.Sscan(code, &c)
		os.Exit(c)
	}
	os.Exit(m.Run())
}

// TestRunShared: the command runs against an emulator that answers, gets
// its exit code back, and the emulator is stopped when it ends; with
// the endpoint set already, nothing is started.
func TestRunShared(t *testing.T) {
	dir, err := InstallDefault(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 3} {
		t.Setenv(EndpointEnv, "")
		t.Setenv(childEnv, fmt.Sprint(code))
		var out, errOut bytes.Buffer
		got, err := RunShared(context.Background(), dir, os.Args[0], []string{"-test.run=^$"}, &out, &errOut)
		if err != nil || got != code {
			t.Fatalf("exit %d, %v; want %d (stderr %q)", got, err, code, errOut.String())
		}
		u, err := url.Parse(out.String())
		if err != nil || u.Hostname() != "127.0.0.1" {
			t.Fatalf("the command was given %q", out.String())
		}
		if c, err := net.Dial("tcp", u.Host); err == nil {
			c.Close()
			t.Fatalf("%s still answers after the command ended", u.Host)
		}
	}

	// An endpoint given is used as is: the child reaches this one.
	srv, err := dynamodblocal.Start(context.Background(), dynamodblocal.Options{Dir: dir, QuickJIT: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	t.Setenv(EndpointEnv, srv.Endpoint)
	t.Setenv(childEnv, "0")
	var out bytes.Buffer
	if got, err := RunShared(context.Background(), dir, os.Args[0], []string{"-test.run=^$"}, &out, os.Stderr); err != nil || got != 0 {
		t.Fatalf("exit %d, %v", got, err)
	}
	if out.String() != srv.Endpoint {
		t.Fatalf("the command was given %q, want the endpoint set: %s", out.String(), srv.Endpoint)
	}
	if !strings.HasPrefix(srv.Endpoint, "http://") || !dynamodblocal.PortTaken(srv.Port) {
		t.Fatalf("the emulator given was stopped: %s", srv.Endpoint)
	}
}
