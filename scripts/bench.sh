#!/usr/bin/env bash
# make bench: makes sure PostgreSQL, Redis, wrk and pgbench are here (wrk from
# Debian's packages when it is missing), then runs the benchmark harness
# (tests/bench) with the given arguments. Loopback only, bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'bench: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

bash scripts/deps.sh
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-client)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Many connections at once in the overload runs.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
log "machine load before: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min); figures are steadier on a quiet machine"
exec go run github.com/coworkjobs/coworkjobs/tests/bench "$@"
