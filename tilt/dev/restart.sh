#!/bin/sh
# Asks run.sh to start the command again (Tilt's live update runs this after
# syncing a new binary into /app).
touch /tmp/tilt-restart
[ -f /tmp/tilt-child.pid ] && kill -TERM "$(cat /tmp/tilt-child.pid)" 2>/dev/null
exit 0
