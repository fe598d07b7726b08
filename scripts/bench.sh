#!/usr/bin/env bash
# make bench: makes sure PostgreSQL, Redis, wrk, pgbench and nginx are here
# (from Debian's packages when missing), then runs the benchmark harness
# (tests/bench) with the given arguments. Loopback only, bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'bench: %s\n' "$*" >&2; }
# wrk, pgbench and nginx come with the bench mode of deps.sh.
bash scripts/deps.sh bench
# Many connections at once in the overload runs.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
log "machine load before: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min); figures are steadier on a quiet machine"
exec go run github.com/coworkjobs/coworkjobs/tests/bench "$@"
