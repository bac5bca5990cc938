#!/usr/bin/env bash
# Container test: the real Dockerfile and compose.yaml, run with podman and podman-compose on
# stand-ins for the public base images (deploy/test/base-images.sh; no registry is reachable).
# Checks: four healthy containers; a guest joins, uploads a photo and sees its thumbnail; a
# platform admin logs in and a hello route answers; the bridge lists its tools; every container
# stops within 10 s with exit 0 and the last acknowledged write survives; a second `up` on the same
# volumes serves the same data. Needs root, podman, podman-compose, runc, the CNI dnsname plugin
# (containers find each other by service name), mmdebstrap, ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)
stamp() { echo "[container +$(($(date +%s) - started))s] $*"; }

work=$(mktemp -d /tmp/container-test.XXXXXX)
# What podman needs on these machines (crun fails on their hybrid cgroups), without touching
# the machine's own configuration.
export CONTAINERS_CONF="$work/containers.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF

project="triotest$$"
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
export TRIO_IMAGE="localhost/trio:ci"
export GALLERY_PORT=$(free_port) PLATFORM_PORT=$(free_port) BRIDGE_PORT=$(free_port) BIND_ADDRESS=127.0.0.1
export POSTGRES_PASSWORD=$(secret) GALLERY_ADMIN_PASSWORD=$(secret) PLATFORM_ADMIN_USERNAME=admin
export PLATFORM_ADMIN_PASSWORD=$(secret) PLATFORM_SECRET_KEY=$(secret) MCP_AUTH_TOKEN=$(secret)
compose() { podman-compose --project-name "$project" -f compose.yaml "$@" >>"$work/compose.log" 2>&1; }
containers() { podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}}'; }

cleanup() {
  status=$?
  if [ $status -ne 0 ]; then
    echo "--- compose log"; tail -n 40 "$work/compose.log" || true
    for c in $(containers); do echo "--- $c"; podman logs --tail 30 "$c" 2>&1 || true; done
  fi
  compose down -v || true
  for v in $(podman volume ls -q --filter "label=io.podman.compose.project=$project"); do podman volume rm -f "$v" >/dev/null || true; done
  podman network rm -f "${project}_default" >/dev/null 2>&1 || true
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT

stamp "stand-in base images"
bash deploy/test/base-images.sh
stamp "podman build (the real Dockerfile)"
podman build --quiet --format docker -t "$TRIO_IMAGE" . >/dev/null
stamp "image size: $(podman image inspect --format '{{.Size}}' "$TRIO_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"

# Every container healthy: podman runs the HEALTHCHECKs through systemd timers, which these
# machines lack, so the test runs each one itself until it passes.
wait_healthy() {
  local deadline=$(($(date +%s) + 150))
  for c in $(containers); do
    until podman healthcheck run "$c" >/dev/null 2>&1; do
      [ "$(date +%s)" -lt "$deadline" ] || { echo "$c not healthy" >&2; return 1; }
      sleep 1
    done
  done
  [ "$(containers | wc -l)" -eq 4 ] || { echo "expected 4 containers" >&2; return 1; }
}

stamp "compose up"
compose up -d
wait_healthy
stamp "four containers healthy"
node deploy/test/container-checks.mjs first "$work/state.json"

stamp "stop"
for c in $(containers); do
  (
    t0=$(date +%s%N)
    podman stop -t 15 "$c" >/dev/null
    ms=$((($(date +%s%N) - t0) / 1000000))
    code=$(podman inspect --format '{{.State.ExitCode}}' "$c")
    echo "$c stopped in ${ms} ms, exit $code"
    [ "$code" = 0 ] && [ "$ms" -le 10000 ]
  ) &
done
failed=0
for job in $(jobs -p); do wait "$job" || failed=1; done
[ $failed = 0 ] || { echo "a container did not stop within 10 s with exit 0" >&2; exit 1; }

stamp "down (the volumes stay), then a second up on them"
compose down
compose up -d
wait_healthy
node deploy/test/container-checks.mjs again "$work/state.json"
stamp "passed"
