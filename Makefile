# coworkjobs: one Go workspace, one module per service plus libs and api.
SHELL := /usr/bin/env bash
MODULE := github.com/coworkjobs/coworkjobs
# Every module listed in go.work, so nothing is written twice.
MODULE_DIRS := $(shell go list -m -f '{{.Dir}}' 2>/dev/null)
BIN := $(CURDIR)/bin
GOTEST_FLAGS ?= -count=1 -timeout 20m

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
build: ## Build every command into ./bin
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install $(MODULE)/services/...

.PHONY: tidy
tidy: ## go mod tidy in every module
	@for d in $(MODULE_DIRS); do (cd $$d && go mod tidy) || exit 1; done

##@ Test

.PHONY: test
test: ## Every module's tests, against the local PostgreSQL and Redis
	@bash scripts/deps.sh
	go test $(GOTEST_FLAGS) $(MODULE)/...

.PHONY: test-race
test-race: ## The tests with the race detector
	@bash scripts/deps.sh
	go test -race $(GOTEST_FLAGS) $(MODULE)/...

##@ Lint

.PHONY: lint
lint: ## gofmt and go vet on every module
	@out=$$(gofmt -l $(MODULE_DIRS)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(MODULE)/...

##@ Help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*##"} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z_-]+:.*##/ {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
