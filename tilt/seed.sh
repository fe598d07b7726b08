#!/bin/sh
# Loads the demo data into the Tilt deployment and prints new demo API keys:
# the same steps as `make run`, run inside the service pods (their images
# ship the seed commands; the jobs seed reads the directory over the cluster
# network, which the NetworkPolicy allows from the jobs pods).
set -eu
NS=${NAMESPACE:-coworkjobs}
ex() { kubectl -n "$NS" exec "deploy/coworkjobs-$1" -- "/app/$2" "${3:-demo}"; }
ex directory directory-seed
ex jobs jobs-seed
ex content content-seed
ex community community-seed
echo
echo "Demo API keys (new on every seed; shown only here):"
ex gateway gateway-keys demo
echo
echo "Try: curl -s -H \"X-API-Key: <live key>\" 'http://localhost:8080/v2/jobs?city=berlin'"
