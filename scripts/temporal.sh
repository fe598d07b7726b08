#!/usr/bin/env bash
# Installs the pinned Temporal CLI (its dev server runs the reliability
# tests' Temporal) into ./bin when it is not there yet. `go install` reuses
# Go's module and build caches; a cold build takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v1.5.1
# A go-installed CLI reports version 0.0.0-DEV, so presence is the check.
[ -x bin/temporal ] && exit 0
echo "temporal: installing the Temporal CLI $VERSION into ./bin (first run only, a few minutes)" >&2
# exec: whoever started this script (make run, in the background) stops the
# build by signalling this pid.
GOBIN="$(pwd)/bin" exec go install "github.com/temporalio/cli/cmd/temporal@$VERSION"
