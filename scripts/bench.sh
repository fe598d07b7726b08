#!/usr/bin/env bash
# make bench: makes sure PostgreSQL, Redis, wrk, pgbench and nginx are here
# (from Debian's packages when missing), then runs the benchmark harness
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
# nginx (Debian's package) is row a's peer in the interleaved rounds; the
# harness runs its own instance from a temporary prefix. Installing must not
# start the package's system service: invoke-rc.d is told no (a policy-rc.d
# exiting 101, Debian's mechanism) while it installs. Without nginx the bench
# still runs, and its report says why the nginx rows are missing.
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  log "installing nginx (its service stays stopped; the bench runs its own)"
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod 755 "$policy" && own_policy=1
  fi
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; } ||
    log "nginx could not be installed; row a's rounds go without it"
  if [ "$own_policy" = 1 ]; then as_root rm -f "$policy"; fi
fi
# Many connections at once in the overload runs.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
log "machine load before: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min); figures are steadier on a quiet machine"
exec go run github.com/coworkjobs/coworkjobs/tests/bench "$@"
