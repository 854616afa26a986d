// Command zipbootstrap packs a Lambda `bootstrap` binary into a zip whose
// bytes depend only on the binary: fixed timestamp, fixed mode, one entry.
//
//	go run ./scripts/zipbootstrap -o build/aggregator.zip build/aggregator/bootstrap
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	out := flag.String("o", "", "zip file to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zipbootstrap -o OUT.zip BOOTSTRAP")
		os.Exit(2)
	}
	if err := pack(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "zipbootstrap:", err)
		os.Exit(1)
	}
}

// epoch is the earliest time a zip header can carry; using it everywhere
// makes the archive reproducible.
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func pack(out, bin string) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: epoch}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, src)
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
