#!/usr/bin/env bash
# Builds stand-ins for the public base images the Dockerfile and compose.yaml name, from Debian
# packages, because no image registry is reachable on our machines:
#   node:20-bookworm-slim  Debian bookworm (mmdebstrap, minbase) + this machine's Node 20 and npm
#                          under /usr/local, user `node` (uid 1000), as the official image has
#   postgres:15-bookworm   Debian bookworm + Debian's postgresql-15, with an entrypoint that
#                          honours POSTGRES_USER/POSTGRES_PASSWORD/POSTGRES_DB/PGDATA and runs
#                          /docker-entrypoint-initdb.d/*.sh|*.sql on first start, like the official one
# An image is rebuilt only when its part of this script, its entrypoint or the machine's Node
# changed (label `standin`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
node_bin=$(command -v node)
node_prefix=$(dirname "$(dirname "$(readlink -f "$node_bin")")")
# One stamp per image, from what goes into it: a change to one stand-in leaves the other (and the
# build cache on top of it) in place.
node_stamp=$( (sed -n '/^# node-begin/,/^# node-end/p' "$0"; "$node_bin" --version; npm --version) | sha256sum | cut -c1-16)
pg_stamp=$( (sed -n '/^# pg-begin/,/^# pg-end/p' "$0"; cat "$here/postgres-entrypoint.sh") | sha256sum | cut -c1-16)

have() { [ "$(podman image inspect --format '{{index .Labels "standin"}}' "$1" 2>/dev/null || true)" = "$2" ]; }

tmp=$(mktemp -d /tmp/standin.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# node-begin
if ! have node:20-bookworm-slim "$node_stamp"; then
  echo "building stand-in node:20-bookworm-slim"
  # npm here reaches the registry only through this machine's TLS proxy: the stand-in's npm gets
  # the machine's CA bundle (npm's own config file, not the runtime's) and, as no prebuilt native
  # addon can be downloaded, the Node headers to compile them.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$tmp/node.tar" \
    --customize-hook="mkdir -p \"\$1/usr/local/bin\" \"\$1/usr/local/lib/node_modules\" \"\$1/usr/local/include\" \"\$1/usr/local/etc\"" \
    --customize-hook="copy-in $node_bin /usr/local/bin" \
    --customize-hook="copy-in $node_prefix/lib/node_modules/npm /usr/local/lib/node_modules" \
    --customize-hook="copy-in $node_prefix/include/node /usr/local/include" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\"" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
    --customize-hook="cp /etc/ssl/certs/ca-certificates.crt \"\$1/usr/local/etc/npm-ca.pem\"" \
    --customize-hook="printf 'nodedir=/usr/local\ncafile=/usr/local/etc/npm-ca.pem\nupdate-notifier=false\n' > \"\$1/usr/local/etc/npmrc\"" \
    --customize-hook="chroot \"\$1\" groupadd --gid 1000 node" \
    --customize-hook="chroot \"\$1\" useradd --uid 1000 --gid node --shell /bin/bash --create-home node" \
    --customize-hook="rm -rf \"\$1\"/var/lib/apt/lists/* \"\$1\"/var/cache/apt/*"
  podman import --change 'CMD ["node"]' --change 'ENV NODE_VERSION=20' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL standin=$node_stamp" "$tmp/node.tar" node:20-bookworm-slim >/dev/null
  rm -f "$tmp/node.tar"
fi
# node-end

# pg-begin
if ! have postgres:15-bookworm "$pg_stamp"; then
  echo "building stand-in postgres:15-bookworm"
  mmdebstrap --quiet --variant=minbase --include=postgresql-15,locales bookworm "$tmp/pg.tar" \
    --customize-hook="copy-in $here/postgres-entrypoint.sh /usr/local/bin" \
    --customize-hook="chmod 755 \"\$1/usr/local/bin/postgres-entrypoint.sh\"" \
    --customize-hook="mkdir -p \"\$1/docker-entrypoint-initdb.d\" \"\$1/var/run/postgresql\"" \
    --customize-hook="chroot \"\$1\" chown postgres:postgres /var/run/postgresql" \
    --customize-hook="rm -rf \"\$1\"/var/lib/apt/lists/* \"\$1\"/var/cache/apt/*"
  podman import \
    --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV PGDATA=/var/lib/postgresql/data' \
    --change 'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]' --change 'CMD ["postgres"]' \
    --change 'STOPSIGNAL SIGINT' --change 'VOLUME /var/lib/postgresql/data' \
    --change "LABEL standin=$pg_stamp" "$tmp/pg.tar" postgres:15-bookworm >/dev/null
fi
# pg-end
