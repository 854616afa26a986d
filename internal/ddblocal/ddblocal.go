// Package ddblocal is the repository's harness around core/dynamodblocal:
// where the emulator is installed for this checkout, the credentials every
// test client signs with, clients built for an endpoint, and the start that
// `make run` and `make soak` make when no endpoint is given.
package ddblocal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
)

// Credentials and region every local client uses. Without -sharedDb,
// DynamoDB Local keeps data per access key and region, and accepts only
// letters and digits in the key id (docs/design.md §1), so all clients of
// one emulator share these.
const (
	Region          = "us-east-1"
	AccessKeyID     = "AKIAZAELIMITERLOCAL"
	SecretAccessKey = "local"
)

// DefaultDir returns the installation folder: $ZL_DYNAMODB_LOCAL_DIR when set,
// else .cache/dynamodb-local under the root of the repository that contains
// the working directory (the folder .gitignore excludes).
func DefaultDir() (string, error) {
	if d := os.Getenv("ZL_DYNAMODB_LOCAL_DIR"); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "dynamodb-local"), nil
}

// RepoRoot walks up from the working directory to the folder holding the
// root go.mod of this project (the one next to the infra/ folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "scripts", "ddblocal")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("ddblocal: no project root above the working directory; set ZL_DYNAMODB_LOCAL_DIR")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// InstallDefault installs DynamoDB Local into DefaultDir when it is not
// there yet and returns the folder.
func InstallDefault(ctx context.Context) (string, error) {
	dir, err := DefaultDir()
	if err != nil {
		return "", err
	}
	if err := dynamodblocal.Install(ctx, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// StartDefault installs DynamoDB Local into DefaultDir when needed and
// starts it in memory on a free port: what `make run` and `make soak` do
// when no endpoint is given.
func StartDefault(ctx context.Context) (*dynamodblocal.Server, error) {
	dir, err := InstallDefault(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: dir})
}
