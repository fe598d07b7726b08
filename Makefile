# coworkjobs: one Go workspace, one module per service plus libs and api.
SHELL := /usr/bin/env bash
MODULE := github.com/coworkjobs/coworkjobs
# Every module listed in go.work, so nothing is written twice.
MODULE_DIRS := $(shell go list -m -f '{{.Dir}}' 2>/dev/null)
BIN := $(CURDIR)/bin
GOTEST_FLAGS ?= -count=1 -timeout 20m
# grpcnotrace: gRPC (pulled in by every OTLP exporter) otherwise registers
# golang.org/x/net/trace, whose HTML templates make the linker keep every
# exported method of every type: a third of each binary, and of its resident
# memory (docs/benchmarks.md). Every build of the services uses it.
GO_TAGS := grpcnotrace
export GOFLAGS += -tags=$(GO_TAGS)

.DEFAULT_GOAL := help

##@ Run

.PHONY: run
run: ## Run the whole suite locally with demo data (Ctrl-C stops everything it started)
	@bash scripts/run.sh

.PHONY: deps
deps: ## Make sure local PostgreSQL and Redis are installed and running
	@bash scripts/deps.sh

##@ Build

.PHONY: build
build: docs ## Build every command into ./bin
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install $(MODULE)/services/...

NPM_TOOLS := tools/npm
REDOC_JS := api/docs/redoc.standalone.js

$(NPM_TOOLS)/node_modules/.package-lock.json: $(NPM_TOOLS)/package.json $(NPM_TOOLS)/package-lock.json
	npm ci --prefix $(NPM_TOOLS) --no-audit --no-fund --loglevel=error

.PHONY: docs
docs: $(REDOC_JS) ## Bundle the Redoc renderer (npm) into the gateway's /v2/docs page

$(REDOC_JS): $(NPM_TOOLS)/node_modules/.package-lock.json
	cp $(NPM_TOOLS)/node_modules/redoc/bundles/redoc.standalone.js $@

# oapi-codegen, pinned: api/client is generated from api/openapi.yaml with it.
OAPI_CODEGEN := github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2

.PHONY: generate
generate: ## Regenerate the Go client (api/client) from api/openapi.yaml
	cd api/client && go run $(OAPI_CODEGEN) -config oapi-codegen.yaml -o client.gen.go ../openapi.yaml

.PHONY: check-generated
check-generated: ## Fail when api/client is not what `make generate` writes from the document
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd api/client && go run $(OAPI_CODEGEN) -config oapi-codegen.yaml -o "$$tmp/client.gen.go" ../openapi.yaml) && \
	if ! cmp -s "$$tmp/client.gen.go" api/client/client.gen.go; then \
		echo "api/client/client.gen.go is stale: run make generate and commit it"; exit 1; fi

.PHONY: tidy
tidy: ## go mod tidy in every module
	@for d in $(MODULE_DIRS); do (cd $$d && go mod tidy) || exit 1; done

##@ Test

# stripe-mock, pinned: the Stripe provider's tests start it (STRIPE_MOCK). Installed
# into ./bin under its version's name, like golangci-lint, so a bump reinstalls it.
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK := $(BIN)/stripe-mock-$(STRIPE_MOCK_VERSION)

$(STRIPE_MOCK):
	@mkdir -p $(BIN)/.stripe-mock
	GOBIN=$(BIN)/.stripe-mock go install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)
	mv $(BIN)/.stripe-mock/stripe-mock $@

# Packages with Go benchmarks: make test runs each benchmark once, so that none
# rots between benchmark runs (cheap: they are built already, none starts the suite).
BENCH_PKGS = $(shell grep -rl --include='*_test.go' '^func Benchmark' libs services api tests | xargs -r -n1 dirname | sort -u | sed 's|^|./|')

.PHONY: test
test: docs $(STRIPE_MOCK) ## Every module's tests, against the local PostgreSQL and Redis; every Go benchmark once
	@bash scripts/deps.sh test
	STRIPE_MOCK=$(STRIPE_MOCK) go test $(GOTEST_FLAGS) $(MODULE)/...
	go test -count=1 -run '^$$' -bench . -benchtime=1x $(BENCH_PKGS)
	@# The search relevance suite's figures, to compare changes (it fails above on any regression).
	@go test -count=1 -run '^TestRelevance$$' -v $(MODULE)/services/jobs/tests | grep '^relevance:'

# The TypeScript client check (api/ts-check) is a gateway test, so make test runs it; this
# runs only it. It fails in CI (CI set) when node or tools/npm are missing, and skips locally.
.PHONY: ts-check
ts-check: $(NPM_TOOLS)/node_modules/.package-lock.json ## Type-check api/ts-check (openapi-fetch) against openapi-typescript types of the served /v2/openapi.json
	@PROMETHEUS=off bash scripts/deps.sh
	go test -count=1 -run '^TestTypeScriptClientTypeChecks$$' ./services/gateway/tests

.PHONY: test-race
test-race: docs $(STRIPE_MOCK) ## The tests with the race detector
	@bash scripts/deps.sh test
	STRIPE_MOCK=$(STRIPE_MOCK) go test -race $(GOTEST_FLAGS) $(MODULE)/...

FUZZTIME ?= 10s
SOAK_DURATION ?= 5m

.PHONY: fuzz
fuzz: ## Every Go fuzz target for FUZZTIME each (default 10s); a failing input lands in its testdata/fuzz
	@FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

.PHONY: soak
soak: ## Mixed traffic with injected faults for SOAK_DURATION (default 5m), then the accounting (jobs lost must be 0)
	@bash scripts/deps.sh
	SOAK_DURATION=$(SOAK_DURATION) go test -count=1 -v -timeout 2h -run '^TestSoak$$' $(MODULE)/tests/reliability

.PHONY: test-cluster
test-cluster: ## Build and start a single-node Kubernetes here, install the chart and drive it (docs/kubernetes.md), then remove it all
	@bash scripts/cluster.sh

BENCH_JOBS ?= 100000
BENCH_ARGS ?=

PLANS_JOBS ?= 100000

.PHONY: plans
plans: ## Regenerate docs/search-plans.md: make bench's searches explained on a fresh PLANS_JOBS-job database
	@bash scripts/bench.sh -jobs $(PLANS_JOBS) -plans docs/search-plans.md

.PHONY: bench-alerts
bench-alerts: ## Instant job alerts: publishes at 10/s for 60 s through the gateway, p95 publish → mail (about 2 min; docs/benchmarks.md)
	ALERTS_BENCH_SECONDS=60 go test -count=1 -run '^$$' -bench BenchmarkInstantMail -benchtime 1x -timeout 10m ./tests/e2e/alerts/

.PHONY: bench
bench: docs ## Load the suite through the gateway with wrk against its ceilings (BENCH_JOBS, BENCH_ARGS e.g. -growth 10000,100000,1000000 -out report.md); not part of make test
	@bash scripts/bench.sh -jobs $(BENCH_JOBS) $(BENCH_ARGS)

.PHONY: bench-webhooks
bench-webhooks: ## Issue 35's webhook targets on the real stack with Temporal: commit-to-receipt latency at 100 endpoints x 50 changes/s, one endpoint answering 500, the changes feed vs GET /v2/jobs (WEBHOOKS_BENCH_ARGS e.g. -duration 20s); about 5 minutes
	go run ./tests/bench/webhooks $(WEBHOOKS_BENCH_ARGS)

##@ Lint

# golangci-lint, pinned; installed into ./bin under its version's name, so a bump
# reinstalls it and an existing binary is reused (CI keeps Go's build cache).
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

$(GOLANGCI_LINT):
	@mkdir -p $(BIN)/.golangci-lint
	GOBIN=$(BIN)/.golangci-lint go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.golangci-lint/golangci-lint $@

.PHONY: lint
lint: $(NPM_TOOLS)/node_modules/.package-lock.json $(GOLANGCI_LINT) check-generated ## gofmt, go mod tidy, go vet and golangci-lint (.golangci.yml) on every module, Redocly lint of the OpenAPI document, generated client up to date
	@out=$$(gofmt -l $(MODULE_DIRS)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for d in $(MODULE_DIRS); do (cd $$d && go mod tidy -diff >/dev/null) || { echo "$$d: go.mod or go.sum is not tidy: run make tidy"; exit 1; }; done
	go vet $(MODULE)/...
	$(GOLANGCI_LINT) run $(addsuffix /...,$(MODULE_DIRS))
	cd api && ../$(NPM_TOOLS)/node_modules/.bin/redocly lint --config redocly.yaml openapi.yaml

##@ Help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*##"} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z_-]+:.*##/ {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
