#!/usr/bin/env bash
# Ensures the local PostgreSQL and Redis that tests and `make run` use are
# installed and running. `deps.sh test` also installs what the tests drive
# (Chromium, and the bench harness's wrk, pgbench and nginx, whose own tests run
# in make test); `deps.sh bench` installs the bench's tools only. Does nothing
# when DATABASE_URL / REDIS_URL point elsewhere and answer. Needs root (or
# sudo) only when it has to install.
set -euo pipefail

log() { printf 'deps: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

# PostgreSQL
if [ -z "${DATABASE_URL:-}" ]; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    log "installing postgresql"
    apt_install postgresql postgresql-contrib
  fi
  if ! pg_up; then
    log "starting postgresql"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  pg_up || { log "postgresql does not answer on 127.0.0.1:5432"; exit 1; }
  # Tests and make run connect as postgres without a password on loopback.
  if ! psql -h 127.0.0.1 -U postgres -Atc 'select 1' >/dev/null 2>&1; then
    log "allowing trust auth for postgres on loopback"
    if [ "$(id -u)" = 0 ]; then hba=$(su postgres -s /bin/sh -c "psql -Atc 'show hba_file'"); else hba=$(sudo -u postgres psql -Atc 'show hba_file'); fi
    as_root sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main reload
  fi
fi

# Redis
if [ -z "${REDIS_URL:-}" ]; then
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis"
    apt_install redis-server
  fi
  if ! redis_up; then
    log "starting redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
    for _ in $(seq 1 30); do redis_up && break; sleep 0.5; done
  fi
  redis_up || { log "redis does not answer on 127.0.0.1:6379"; exit 1; }
fi
# Prometheus with promtool (Debian's package): make run's local server, the
# e2e test that scrapes the suite with it, the alert rules' unit tests.
# Its recommended node exporter is not needed; make run never uses the
# package's own service (scripts/prometheus.sh runs the binary).
if { [ "${1:-}" = test ] || [ "${PROMETHEUS:-on}" != off ]; } && ! { command -v prometheus && command -v promtool; } >/dev/null 2>&1; then
  log "installing prometheus"
  apt_install --no-install-recommends prometheus
fi
# The tests also drive the API reference page in headless Chromium.
if [ "${1:-}" = "test" ] && ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium (for the reference page test)"
  apt_install chromium
fi
# The bench harness (tests/bench) drives wrk and pgbench and runs nginx as row
# a's peer; its tests run in make test. Installing nginx must not start the
# package's system service: invoke-rc.d is told no (a policy-rc.d exiting 101,
# Debian's mechanism) while it installs; the harness runs its own instance.
if [ "${1:-}" = test ] || [ "${1:-}" = bench ]; then
  missing=()
  command -v wrk >/dev/null 2>&1 || missing+=(wrk)
  command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-client)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (for the bench harness)"
    apt_install "${missing[@]}"
  fi
  if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    log "installing nginx (its service stays stopped; the bench runs its own)"
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod 755 "$policy" && own_policy=1
    fi
    apt_install nginx || log "nginx could not be installed"
    if [ "$own_policy" = 1 ]; then as_root rm -f "$policy"; fi
  fi
fi
log "postgresql and redis are up"
