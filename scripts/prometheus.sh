#!/usr/bin/env bash
# A Prometheus for the suite on this machine (make run, and the e2e test in
# tests/e2e/prometheus, which runs this same script so that both scrape with
# one configuration). It scrapes /metrics on the admin port of every target
# given and evaluates the alert rules the Helm chart ships, from the same file.
#
#   scripts/prometheus.sh DIR LISTEN NAME=HOST:PORT...
#     e.g. scripts/prometheus.sh .run/prometheus 127.0.0.1:9099 gateway=127.0.0.1:9080 jobs-worker=127.0.0.1:9085
#
# Writes DIR/prometheus.yml (checked with promtool), keeps its TSDB in DIR/data,
# then execs prometheus in the foreground: the caller owns its pid and stops it.
#
#   PROMETHEUS_SCRAPE_INTERVAL   default 5s (the test uses 1s)
#   PROMETHEUS_EVAL_INTERVAL     default: the scrape interval
#   PROMETHEUS_NAMESPACE         the namespace label of every target, default "local"
#   PROMETHEUS_RULES             rules file, default the chart's (see RULES below)
#   PROMETHEUS_CONFIG_ONLY=1     write and check the configuration, do not start
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

die() { printf 'prometheus.sh: %s\n' "$*" >&2; exit 1; }
[ $# -ge 3 ] || die "usage: $0 DIR LISTEN NAME=HOST:PORT..."
DIR=$1 LISTEN=$2
shift 2
command -v prometheus >/dev/null && command -v promtool >/dev/null \
  || die "prometheus/promtool not found: run scripts/deps.sh (Debian package prometheus), or PROMETHEUS=off"

# The one rules file: the chart's PrometheusRule embeds it, this server loads it.
RULES=${PROMETHEUS_RULES:-$ROOT/charts/coworkjobs/files/prometheus/rules.yaml}
[ -f "$RULES" ] || die "no rules file at $RULES"
INTERVAL=${PROMETHEUS_SCRAPE_INTERVAL:-5s}
EVAL=${PROMETHEUS_EVAL_INTERVAL:-$INTERVAL}
NAMESPACE=${PROMETHEUS_NAMESPACE:-local}
# The release name the chart would have: Kubernetes Services are named
# <release>-<component>, and the rules select targets by that "service" label.
RELEASE=coworkjobs

mkdir -p "$DIR/data"
DIR=$(cd "$DIR" && pwd)
CONFIG="$DIR/prometheus.yml"
{
  cat <<EOF
# Written by scripts/prometheus.sh; rewritten on every start.
global:
  scrape_interval: $INTERVAL
  scrape_timeout: $INTERVAL
  evaluation_interval: $EVAL
rule_files:
  - $RULES
scrape_configs:
  # Itself: its own counters of scrape errors (duplicate or out-of-order
  # samples, sample limits) are what the e2e test reads to prove clean scrapes.
  - job_name: prometheus
    static_configs:
      - targets: ['$LISTEN']
  - job_name: coworkjobs
    metrics_path: /metrics
    static_configs:
EOF
  # The labels the rules file's header asks for (job="coworkjobs", service
  # ending in the component, namespace) and the dashboards use (pod), as a
  # ServiceMonitor gives them to the chart's pods: rules and queries apply unchanged.
  for t in "$@"; do
    name=${t%%=*} addr=${t#*=}
    [ -n "$name" ] && [ "$name" != "$t" ] && [ -n "$addr" ] || die "target $t is not NAME=HOST:PORT"
    cat <<EOF
      - targets: ['$addr']
        labels: {service: '$RELEASE-$name', namespace: '$NAMESPACE', pod: '$name'}
EOF
  done
} >"$CONFIG.tmp"
mv "$CONFIG.tmp" "$CONFIG"
# Checks the rules file too.
out=$(promtool check config "$CONFIG" 2>&1) || { printf '%s\n' "$out" >&2; die "invalid configuration $CONFIG"; }
[ "${PROMETHEUS_CONFIG_ONLY:-}" = 1 ] && exit 0

exec prometheus --config.file="$CONFIG" --storage.tsdb.path="$DIR/data" \
  --storage.tsdb.retention.time=2d --web.listen-address="$LISTEN" \
  --web.console.templates=/etc/prometheus/consoles --web.console.libraries=/etc/prometheus/console_libraries \
  --log.level=warn
