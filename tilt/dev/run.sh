#!/bin/sh
# run.sh COMMAND [ARGS...]: the development containers' entry (the chart's
# commandPrefix in tilt/values-dev.yaml). Runs the command and starts it again
# when restart.sh asks (after Tilt synced a new binary) or when it exits;
# SIGTERM stops it for good.
set -u
child=0
stop() {
  [ "$child" -ne 0 ] && kill -TERM "$child" 2>/dev/null
  wait "$child" 2>/dev/null
  exit 0
}
trap stop TERM INT
while :; do
  "$@" &
  child=$!
  echo "$child" >/tmp/tilt-child.pid
  wait "$child"
  code=$?
  if [ -f /tmp/tilt-restart ]; then
    rm -f /tmp/tilt-restart
    echo "run.sh: restarting $1 with the new binary" >&2
    continue
  fi
  echo "run.sh: $1 exited with status $code; starting it again in 2s" >&2
  sleep 2
done
