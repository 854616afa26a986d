#!/usr/bin/env bash
# Runs every fuzz target in the root module for FUZZTIME each (default
# 20000x: a count of executions, not a duration, so a loaded machine runs the
# same work more slowly instead of hitting the fuzzer's deadline mid-input).
# Each package's fuzzing binary is built once (`go test -c -fuzz`, which
# instruments it as `go test -fuzz` does) and run once per target, in the
# package's folder, with the go command's fuzz cache, so testdata/fuzz
# corpora and the cache's interesting inputs are used as `go test -fuzz`
# would. Corpora under testdata/fuzz are replayed by the ordinary `go test`
# run too.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzztime="${FUZZTIME:-20000x}"
fuzzcache="$(go env GOCACHE)/fuzz"
status=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
while IFS= read -r dir; do
	targets=$(grep -ohE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort)
	[[ -z "$targets" ]] && continue
	bin="$work/$(echo "$dir" | tr '/.' '__').test"
	pattern="^($(echo "$targets" | paste -sd'|'))\$"
	built=$SECONDS
	if ! go test -c -fuzz="$pattern" -o "$bin" "./$dir" >"$work/log" 2>&1; then
		echo "fuzz ./$dir: build failed"
		cat "$work/log"
		status=1
		continue
	fi
	echo "fuzz ./$dir: built in $((SECONDS - built)) s"
	for target in $targets; do
		ran=$SECONDS
		echo "fuzz ./$dir $target ($fuzztime)"
		if ! (cd "$root/$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" \
			-test.fuzzcachedir="$fuzzcache" >"$work/log" 2>&1); then
			cat "$work/log"
			status=1
		fi
		echo "fuzz ./$dir $target: $((SECONDS - ran)) s"
	done
done < <(grep -rlE '^func Fuzz' --include='*_test.go' . | grep -v '^./infra/' | grep -v '/_' | xargs -n1 dirname | sed 's|^\./||' | sort -u)
exit $status
