#!/usr/bin/env bash
# Runs every fuzz target in the root module for FUZZTIME each (default
# 20000x: a count of executions, not a duration, so a loaded machine runs the
# same work more slowly instead of hitting the fuzzer's deadline mid-input).
# Corpora under testdata/fuzz are replayed by the ordinary `go test` run too.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20000x}"
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while IFS= read -r file; do
	dir="./$(dirname "$file")"
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		echo "fuzz $dir $target ($fuzztime)"
		if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$dir" >"$log" 2>&1; then
			cat "$log"
			status=1
		fi
	done
done < <(grep -rlE '^func Fuzz' --include='*_test.go' . | grep -v '^./infra/' | grep -v '/_' | sort)
exit $status
