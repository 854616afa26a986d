#!/usr/bin/env bash
# Builds reproducible provided.al2023 arm64 bootstrap binaries and zips:
#   build/<function>/bootstrap and build/<function>.zip
# With --check, builds everything twice into fresh folders and fails unless
# the two builds are byte-identical. With --bootstrap FUNCTION DIR, builds
# only DIR/bootstrap of one function (what `sam build` asks the Makefile for).
set -euo pipefail
dest="${3:-}"
if [[ -n "$dest" && "$dest" != /* ]]; then dest="$PWD/$dest"; fi
cd "$(dirname "$0")/.."
functions=(aggregator provisioner)

bootstrap() { # bootstrap FUNCTION OUTFILE
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -buildvcs=false \
		-ldflags='-s -w -buildid=' -o "$2" "./functions/$1"
}

build() { # build OUTDIR
	local out="$1"
	mkdir -p "$out"
	for fn in "${functions[@]}"; do
		mkdir -p "$out/$fn"
		bootstrap "$fn" "$out/$fn/bootstrap"
		go run ./scripts/zipbootstrap -o "$out/$fn.zip" "$out/$fn/bootstrap"
	done
}

if [[ "${1:-}" == "--bootstrap" ]]; then
	mkdir -p "$dest"
	bootstrap "$2" "$dest/bootstrap"
	exit 0
fi

if [[ "${1:-}" == "--check" ]]; then
	a=$(mktemp -d) b=$(mktemp -d)
	trap 'rm -rf "$a" "$b"' EXIT
	build "$a"
	GOFLAGS="${GOFLAGS:-} -a" build "$b"
	for fn in "${functions[@]}"; do
		if ! cmp -s "$a/$fn.zip" "$b/$fn.zip"; then
			echo "lambdas: $fn.zip differs between two builds" >&2
			exit 1
		fi
		printf '%s.zip reproducible: sha256 %s, bootstrap %s bytes\n' "$fn" \
			"$(sha256sum "$a/$fn.zip" | cut -d' ' -f1)" "$(stat -c %s "$a/$fn/bootstrap")"
	done
	exit 0
fi

build build
for fn in "${functions[@]}"; do
	printf 'build/%s.zip  sha256 %s  bootstrap %s bytes\n' "$fn" \
		"$(sha256sum "build/$fn.zip" | cut -d' ' -f1)" "$(stat -c %s "build/$fn/bootstrap")"
done
