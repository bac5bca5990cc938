#!/bin/sh
# The image's command: gallery | platform | bridge | all (see the Dockerfile). tini (PID 1)
# passes SIGTERM/SIGINT on; `exec` leaves no shell in between.
set -eu
mode=${1:-all}
[ $# -gt 0 ] && shift
case "$mode" in
  gallery) svc=event-gallery ;;
  platform) svc=script-platform ;;
  bridge) svc=portal-bridge ;;
  all)
    # start-all gives each service DATA_DIR/<service>.
    export DATA_DIR="${DATA_DIR:-/data}"
    exec node /app/scripts/start-all.mjs "$@"
    ;;
  *)
    echo "unknown command '$mode': use gallery, platform, bridge or all (then that service's arguments)" >&2
    exit 2
    ;;
esac
export DATA_DIR="${DATA_DIR:-/data/$svc}"
exec node "/app/services/$svc/dist/main.js" "$@"
