#!/usr/bin/env bash
# make run: the whole suite on one machine with demo data.
#
# Uses DATABASE_URL / REDIS_URL / TEMPORAL_ADDRESS / SMTP_URL when set;
# otherwise the local PostgreSQL and Redis (started or installed by deps.sh),
# a Temporal dev server and a local mail catcher that this script starts.
# Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
RUN="$ROOT/.run"
BIN="$ROOT/bin"
mkdir -p "$RUN/logs" "$RUN/mail" "$BIN"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'run: %s\n' "$*" >&2; exit 1; }

pids=()
cleanup() {
  trap - EXIT INT TERM
  if [ "${#pids[@]}" -gt 0 ]; then
    say "stopping ${#pids[@]} processes"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 "${3:-120}"); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.5; done; die "$2 did not open port $1 (see $RUN/logs)"; }
wait_ready() { for _ in $(seq 1 120); do curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.5; done; die "$2 is not ready (see $RUN/logs/$2.log)"; }

start() { # name, command...
  local name=$1; shift
  "$@" >>"$RUN/logs/$name.log" 2>&1 &
  pids+=($!)
}

for p in 8080 8081 8082 8083 8084 9080 9081 9082 9083 9084 9085 9086; do
  port_free "$p" || die "port $p is in use: stop what holds it (another make run?) and retry"
done

# Dependencies ---------------------------------------------------------------
bash scripts/deps.sh
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable}
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
if [[ "$DATABASE_URL" == postgres://postgres@127.0.0.1:5432/coworkjobs* ]]; then
  psql -h 127.0.0.1 -U postgres -Atc "select 1 from pg_database where datname='coworkjobs'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "create database coworkjobs" \
    || die "cannot create database coworkjobs"
fi
# One secret for this run: the gateway signs identities, backends verify them.
export INTERNAL_IDENTITY_SECRET=${INTERNAL_IDENTITY_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export NEWSLETTER_TOKEN_SECRET=${NEWSLETTER_TOKEN_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://localhost:8080}
export DIRECTORY_URL=http://127.0.0.1:8082

say "building the services and the API reference page"
make --no-print-directory docs >/dev/null
GOBIN="$BIN" go install -tags grpcnotrace github.com/coworkjobs/coworkjobs/services/...  # why: Makefile, GO_TAGS

if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  TEMPORAL=$(command -v temporal || true)
  [ -n "$TEMPORAL" ] || { [ -x "$BIN/temporal" ] && TEMPORAL="$BIN/temporal"; } || true
  if [ -z "$TEMPORAL" ]; then
    say "installing the Temporal CLI (first run only, a few minutes)"
    GOBIN="$BIN" go install github.com/temporalio/cli/cmd/temporal@v1.5.1
    TEMPORAL="$BIN/temporal"
  fi
  port_free 7233 || die "port 7233 is in use; set TEMPORAL_ADDRESS to use that server"
  say "starting a Temporal dev server (UI on http://localhost:8233)"
  start temporal "$TEMPORAL" server start-dev --ip 127.0.0.1 --port 7233 --ui-port 8233 \
    --db-filename "$RUN/temporal.db" --log-level error
  export TEMPORAL_ADDRESS=127.0.0.1:7233
  wait_port 7233 temporal 120
fi

if [ -z "${SMTP_URL:-}" ]; then
  say "starting the mail catcher (mails land in .run/mail)"
  MAILCATCHER_ADDR=127.0.0.1:1025 MAILCATCHER_DIR="$RUN/mail" start mailcatcher "$BIN/mailcatcher"
  export SMTP_URL=smtp://127.0.0.1:1025
  wait_port 1025 mailcatcher 20
fi

# Services -------------------------------------------------------------------
say "starting the services (logs in .run/logs)"
HTTP_ADDR=127.0.0.1:8082 ADMIN_ADDR=127.0.0.1:9082 start directory "$BIN/directory"
wait_ready 8082 directory
HTTP_ADDR=127.0.0.1:8081 ADMIN_ADDR=127.0.0.1:9081 start jobs "$BIN/jobs"
ADMIN_ADDR=127.0.0.1:9085 start jobs-worker "$BIN/jobs-worker"
HTTP_ADDR=127.0.0.1:8083 ADMIN_ADDR=127.0.0.1:9083 start content "$BIN/content"
HTTP_ADDR=127.0.0.1:8084 ADMIN_ADDR=127.0.0.1:9084 start community "$BIN/community"
ADMIN_ADDR=127.0.0.1:9086 start community-worker "$BIN/community-worker"
HTTP_ADDR=127.0.0.1:8080 ADMIN_ADDR=127.0.0.1:9080 start gateway "$BIN/gateway"
for s in jobs:8081 content:8083 community:8084 gateway:8080; do wait_ready "${s#*:}" "${s%%:*}"; done

say "loading demo data"
"$BIN/directory-seed" demo >>"$RUN/logs/seed.log" 2>&1 || die "directory seed failed (see .run/logs/seed.log)"
"$BIN/jobs-seed" demo >>"$RUN/logs/seed.log" 2>&1 || die "jobs seed failed (see .run/logs/seed.log)"
"$BIN/content-seed" demo >>"$RUN/logs/seed.log" 2>&1 || die "content seed failed (see .run/logs/seed.log)"
"$BIN/community-seed" demo >>"$RUN/logs/seed.log" 2>&1 || die "community seed failed (see .run/logs/seed.log)"
KEYS=$("$BIN/gateway-keys" demo) || die "could not create the demo keys"
LIVE=$(awk '/^live platform key/ {print $NF}' <<<"$KEYS")

cat <<EOF

  coworkjobs is running at  http://localhost:8080/v2
  OpenAPI document          http://localhost:8080/v2/openapi.json
  Temporal UI               http://localhost:8233 (when started here)
  Mails (confirmations)     $RUN/mail
  Logs                      $RUN/logs

  Demo API keys (new on every run; shown only here):
$(sed 's/^/    /' <<<"$KEYS")

  Try:
    curl -s http://localhost:8080/v2 | head -c 300; echo
    curl -s -H "X-API-Key: $LIVE" 'http://localhost:8080/v2/jobs?city=berlin'
    curl -s -H "X-API-Key: $LIVE" 'http://localhost:8080/v2/cities?search=zur'

  Press Ctrl-C to stop everything.
EOF

# Stay up until Ctrl-C or until a service exits on its own.
wait -n "${pids[@]}" || true
die "a process exited; see $RUN/logs"
