# zae-limiter-go: make run | make test | make bench | make soak | make lambdas
SHELL := /bin/bash
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export GOFLAGS ?=
FUZZTIME ?= 20000x
BENCHTIME ?= 2s
BENCHCOUNT ?= 1
SOAK_DURATION ?= 2m
SOAK_SEED ?= 0

.PHONY: all run test tidy unit vet lint fuzz infra-test bench soak lambdas ddb-install ddb-start ddb-stop clean

all: test

## run: start DynamoDB Local, create the table and show what the product does; stops the emulator on exit
run: ddb-install
	go run ./cmd/zl-local

## test: tidy modules, vet, lint, every test under -race, a short run of every fuzz target, the infra module's tests
test: ddb-install tidy vet lint unit fuzz infra-test

ddb-install:
	go run ./scripts/ddblocal install

## tidy: go.mod and go.sum are what go mod tidy makes of them (both modules)
tidy:
	go mod tidy -diff
	cd infra && go mod tidy -diff

vet:
	go vet ./...
	cd infra && go vet ./...

lint:
	@unformatted=$$(gofmt -l . ); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go tool staticcheck ./...

unit:
	go test -race -count=1 ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-short.sh

infra-test:
	cd infra && go test -count=1 ./...

## bench: benchmarks against DynamoDB Local, floors first, side by side
bench: ddb-install
	go test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./... | tee bench.txt

## soak: the end-to-end conservation harness under faults (SOAK_DURATION, SOAK_SEED; 0 = from the clock); exits non-zero on a failed check
soak: ddb-install
	go run ./cmd/zl-soak -duration $(SOAK_DURATION) -seed $(SOAK_SEED)

## lambdas: reproducible provided.al2023 arm64 bootstrap binaries and zips in build/
lambdas:
	./scripts/build-lambdas.sh

ddb-start: ddb-install
	go run ./scripts/ddblocal start

ddb-stop:
	go run ./scripts/ddblocal stop

clean:
	rm -rf build bench.txt
