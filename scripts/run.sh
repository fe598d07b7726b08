#!/usr/bin/env bash
# make run: the whole suite on one machine with demo data.
#
# Uses DATABASE_URL / REDIS_URL / TEMPORAL_ADDRESS / SMTP_URL when set;
# otherwise the local PostgreSQL and Redis (started or installed by deps.sh),
# a Temporal dev server and a local mail catcher that this script starts.
# Temporal comes up beside the services, not before them: nothing waits for it
# (the outbox relays keep what they owe, the workers retry until it answers),
# so on a first run its CLI builds in the background while the suite serves.
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
# Background builds while they run: the Temporal CLI, the demo tools, the workers.
temporal_pid="" tools_pid="" workers_pid=""
cleanup() {
  trap - EXIT INT TERM
  for b in $temporal_pid $tools_pid $workers_pid; do kill -TERM "$b" 2>/dev/null || true; done
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

# Temporal's state: external (TEMPORAL_ADDRESS given), building (the CLI, first
# run only), starting, ready, or failed (the services go on without it).
temporal_state=external
start_temporal() {
  start temporal "$TEMPORAL" server start-dev --ip 127.0.0.1 --port 7233 --ui-port 8233 \
    --db-filename "$RUN/temporal.db" --log-level error
  temporal_state=starting
}
temporal_step() { # advances the state without blocking; say()s each change
  case $temporal_state in
    building)
      kill -0 "$temporal_pid" 2>/dev/null && return 0
      if wait "$temporal_pid" && [ -x "$TEMPORAL" ]; then
        temporal_pid=""
        say "Temporal CLI built; starting a Temporal dev server"
        start_temporal
      else
        temporal_pid="" temporal_state=failed
        printf 'run: building the Temporal CLI failed (see %s); the suite runs without workflows\n' \
          "$RUN/logs/temporal-install.log" >&2
      fi ;;
    starting)
      if (exec 3<>/dev/tcp/127.0.0.1/7233) 2>/dev/null; then
        temporal_state=ready
        say "Temporal ready at 127.0.0.1:7233 (UI http://localhost:8233); the workers connect within 30 s"
      fi ;;
  esac
}
workers_step() { # starts the workers once they are built, without blocking
  [ -n "$workers_pid" ] && ! kill -0 "$workers_pid" 2>/dev/null || return 0
  wait "$workers_pid" || die "building the workers failed (see .run/logs/build-workers.log)"
  workers_pid=""
  say "starting the workers (they connect to Temporal once it answers)"
  ADMIN_ADDR=127.0.0.1:9085 start jobs-worker "$BIN/jobs-worker"
  ADMIN_ADDR=127.0.0.1:9086 start community-worker "$BIN/community-worker"
}
preparing() { # what is still coming up, for the user
  local p=()
  [ -z "$tools_pid" ] || p+=("demo data")
  [ -z "$workers_pid" ] || p+=("workers (building)")
  case $temporal_state in
    building) p+=("Temporal CLI (building in the background, first run only; .run/logs/temporal-install.log)") ;;
    starting) p+=("Temporal dev server (starting)") ;;
  esac
  local out="" x
  for x in "${p[@]}"; do out+="${out:+; }$x"; done
  echo "$out"
}

for p in 8080 8081 8082 8083 8084 9080 9081 9082 9083 9084 9085 9086; do
  port_free "$p" || die "port $p is in use: stop what holds it (another make run?) and retry"
done
# Prometheus (scripts/prometheus.sh) on 9099: 9090, its usual port, is the services' default admin port.
if [ "${PROMETHEUS:-on}" != off ]; then port_free 9099 || die "port 9099 is in use: stop what holds it, or PROMETHEUS=off"; fi

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
# Webhooks may reach a receiver on this machine over plain http (the README's walkthrough).
export WEBHOOKS_ALLOW_HTTP=${WEBHOOKS_ALLOW_HTTP:-true}
export WEBHOOKS_ALLOW_ADDRESSES=${WEBHOOKS_ALLOW_ADDRESSES:-loopback}

if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  port_free 7233 || die "port 7233 is in use; set TEMPORAL_ADDRESS to use that server"
  export TEMPORAL_ADDRESS=127.0.0.1:7233
  TEMPORAL=$(command -v temporal || echo "$BIN/temporal")
  if [ -x "$TEMPORAL" ]; then
    say "starting a Temporal dev server (UI on http://localhost:8233)"
    start_temporal
  else
    # Niced: on a shared or small machine the services' own build goes first.
    say "building the Temporal CLI in the background (first run only, a few minutes)"
    nice -n 15 bash scripts/temporal.sh >>"$RUN/logs/temporal-install.log" 2>&1 &
    temporal_pid=$! temporal_state=building
  fi
fi

say "building the services and the API reference page"
make --no-print-directory docs >/dev/null
# The APIs first, so that the gateway answers while the rest builds: the
# workers add the Temporal SDK and its generated API, a quarter of a cold
# build's compiled output, which nothing else needs; the demo tools (seeds,
# keys) only link what the APIs compiled. (-tags: GO_TAGS in the Makefile.)
S=github.com/coworkjobs/coworkjobs/services
GOBIN="$BIN" go install -tags grpcnotrace $S/gateway/cmd/gateway $S/directory/cmd/directory $S/jobs/cmd/jobs \
  $S/content/cmd/content $S/community/cmd/community $S/community/cmd/mailcatcher
GOBIN="$BIN" go install -tags grpcnotrace $S/gateway/cmd/gateway-keys $S/directory/cmd/directory-seed \
  $S/jobs/cmd/jobs-seed $S/jobs/cmd/jobs-admin $S/content/cmd/content-seed $S/community/cmd/community-seed >"$RUN/logs/build-tools.log" 2>&1 &
tools_pid=$!
GOBIN="$BIN" go install -tags grpcnotrace $S/jobs/cmd/jobs-worker $S/community/cmd/community-worker \
  >"$RUN/logs/build-workers.log" 2>&1 &
workers_pid=$!
temporal_step

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
HTTP_ADDR=127.0.0.1:8083 ADMIN_ADDR=127.0.0.1:9083 start content "$BIN/content"
HTTP_ADDR=127.0.0.1:8084 ADMIN_ADDR=127.0.0.1:9084 start community "$BIN/community"
# The gateway's response cache is on, shared in Redis as the chart has it
# (RESPONSE_CACHE_STORE=memory keeps it per process; RESPONSE_CACHE_MB=0 make run turns it
# off): every backend, worker, seed and jobs-admin run here gets the exported
# REDIS_URL, so each write bumps the change versions the cache is keyed by.
RESPONSE_CACHE_MB=${RESPONSE_CACHE_MB:-16} RESPONSE_CACHE_STORE=${RESPONSE_CACHE_STORE:-redis} HTTP_ADDR=127.0.0.1:8080 ADMIN_ADDR=127.0.0.1:9080 start gateway "$BIN/gateway"
for s in jobs:8081 content:8083 community:8084 gateway:8080; do wait_ready "${s#*:}" "${s%%:*}"; done
temporal_step
still=$(preparing)
say "gateway answering at http://localhost:8080/v2${still:+; still preparing: $still}"
workers_step

if [ "${PROMETHEUS:-on}" != off ]; then
  say "starting Prometheus on http://localhost:9099 (scrapes every admin port, the chart's alert rules)"
  start prometheus bash scripts/prometheus.sh "$RUN/prometheus" 127.0.0.1:9099 gateway=127.0.0.1:9080 jobs=127.0.0.1:9081 \
    directory=127.0.0.1:9082 content=127.0.0.1:9083 community=127.0.0.1:9084 jobs-worker=127.0.0.1:9085 community-worker=127.0.0.1:9086
fi

wait "$tools_pid" || die "building the demo tools failed (see .run/logs/build-tools.log)"
tools_pid=""
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
  Space dashboard           http://localhost:8080/dashboard (sign in as owner+spreeufer-coworking-berlin@coworkjobs.example,
                            space 1's owner; the sign-in link lands in $RUN/mail)
  Logs                      $RUN/logs
  Prometheus                $([ "${PROMETHEUS:-on}" = off ] && echo "off (PROMETHEUS=off)" || echo "http://localhost:9099 (Debian's classic UI: /classic/alerts, /classic/targets)")

  Demo API keys (new on every run; shown only here):
$(sed 's/^/    /' <<<"$KEYS")

  Try:
    curl -s http://localhost:8080/v2 | head -c 300; echo
    curl -s -H "X-API-Key: $LIVE" 'http://localhost:8080/v2/jobs?city=berlin'
    curl -s -H "X-API-Key: $LIVE" 'http://localhost:8080/v2/cities?search=zur'

  Press Ctrl-C to stop everything.
EOF
still=$(preparing)
[ -z "$still" ] || say "still preparing: $still; this says when it is ready"

# Stay up until Ctrl-C or until a service exits on its own, bringing the
# workers and Temporal up meanwhile (polled: `wait -n` cannot also watch a
# port).
while :; do
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || die "a process exited; see $RUN/logs"; done
  workers_step
  temporal_step
  sleep 1
done
