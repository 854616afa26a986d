#!/usr/bin/env bash
# Runs every fuzz target in the root module for FUZZTIME each (default
# 20000x: a count of executions, not a duration, so a loaded machine runs the
# same work more slowly instead of hitting the fuzzer's deadline mid-input).
# Each package's fuzzing binary is built once (`go test -c -fuzz`, which
# instruments it as `go test -fuzz` does), all of them before the first
# target runs, and run once per target, in the package's folder, with the
# go command's fuzz cache, so testdata/fuzz corpora and the cache's
# interesting inputs are used as `go test -fuzz` would. Corpora under
# testdata/fuzz are replayed by the ordinary `go test` run too.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzztime="${FUZZTIME:-20000x}"
fuzzcache="$(go env GOCACHE)/fuzz"
status=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t dirs < <(grep -rlE '^func Fuzz' --include='*_test.go' . | grep -v '^./infra/' | grep -v '/_' | xargs -n1 dirname | sed 's|^\./||' | sort -u)

targets_of() { grep -ohE '^func (Fuzz[A-Za-z0-9_]+)\(' "$1"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort; }
bin_of() { echo "$work/$(echo "$1" | tr '/.' '__').test"; }

# build DIR: the package's fuzzing binary, its log in $work, "ok" in its
# .ok file when it built.
build() {
	local dir=$1 bin targets pattern built=$SECONDS
	bin=$(bin_of "$dir")
	targets=$(targets_of "$dir")
	pattern="^($(echo "$targets" | paste -sd'|'))\$"
	if go test -c -fuzz="$pattern" -o "$bin" "./$dir" >"$bin.log" 2>&1; then
		echo "fuzz ./$dir: built in $((SECONDS - built)) s"
		touch "$bin.ok"
	fi
}

# The binaries are built before any target runs, two at a time (a link is
# one core's work), after the first alone: it compiles the instrumented
# standard library and dependencies the others then share, and two go
# commands compiling the same package at once would each compile it. The
# first is the package with the most dependencies (its test binary's), so
# that the others find nearly all of theirs compiled: ordered by name,
# the first was a command's whose dependencies (the AWS SDK's credential
# chain, cobra) no other fuzz target needs.
mapfile -t order < <(go list -test -f '{{if eq .Name "main"}}{{len .Deps}} {{.ImportPath}}{{end}}' "${dirs[@]/#/./}" |
	grep . | sort -k1,1nr -k2 | sed -E 's/^[0-9]+ //; s/\.test$//' | sed "s|^$(go list -m)/||")
if [[ ${#order[@]} -ne ${#dirs[@]} ]]; then
	echo "fuzz: go list named ${#order[@]} test binaries for ${#dirs[@]} packages" >&2
	exit 1
fi
build "${order[0]}"
running=0
for dir in "${order[@]:1}"; do
	build "$dir" &
	running=$((running + 1))
	if ((running >= 2)); then
		wait -n || true
		running=$((running - 1))
	fi
done
wait

for dir in "${dirs[@]}"; do
	bin=$(bin_of "$dir")
	if [[ ! -e "$bin.ok" ]]; then
		echo "fuzz ./$dir: build failed"
		cat "$bin.log"
		status=1
		continue
	fi
	for target in $(targets_of "$dir"); do
		ran=$SECONDS
		echo "fuzz ./$dir $target ($fuzztime)"
		if ! (cd "$root/$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" \
			-test.fuzzcachedir="$fuzzcache" >"$work/log" 2>&1); then
			cat "$work/log"
			status=1
		fi
		echo "fuzz ./$dir $target: $((SECONDS - ran)) s"
	done
done
exit $status
