# One image for the three services (docs/deploy.md). The command picks what runs:
#   gallery | platform | bridge | all      (default: all; extra arguments go to the service,
#   e.g. `gallery --help` or `platform backup --to /data/backup.tar.gz`)
# Data lives under /data/<service> (DATA_DIR overrides it); ports 3001 gallery, 3002 platform,
# 3003 bridge.

# --- dependencies: changes only when a package.json or the lockfile does --------------------
FROM node:20-bookworm-slim AS deps
# Compilers only for native addons without a prebuilt binary for this platform (better-sqlite3
# falls back to building from source); they never reach the final stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages/kit/package.json packages/kit/
COPY services/portal-bridge/package.json services/portal-bridge/
COPY services/event-gallery/package.json services/event-gallery/
COPY services/script-platform/package.json services/script-platform/
COPY bench/package.json bench/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild --no-audit --no-fund

# --- build: server code to dist/, both web apps with Vite, then production dependencies only --
FROM deps AS build
COPY . .
RUN npm run build \
 && node -e 'const fs=require("fs");const p=JSON.parse(fs.readFileSync("package.json","utf8"));p.workspaces=p.workspaces.filter((w)=>w!=="bench");fs.writeFileSync("package.json",JSON.stringify(p,null,2))' \
 && npm prune --omit=dev --no-audit --no-fund \
 && mkdir -p /out/scripts /out/deploy \
 && cp -a package.json node_modules /out/ \
 && cp scripts/start-all.mjs /out/scripts/ \
 && cp -a deploy/image /out/deploy/ \
 && for p in packages/kit services/portal-bridge services/event-gallery services/script-platform; do \
      mkdir -p "/out/$p" && cp -a "$p/package.json" "$p/dist" "/out/$p/" \
      && if [ -d "$p/node_modules" ]; then cp -a "$p/node_modules" "/out/$p/"; fi; \
    done \
 && mkdir -p /out/services/event-gallery/web /out/services/script-platform/dashboard \
 && cp -a services/event-gallery/web/dist /out/services/event-gallery/web/ \
 && cp -a services/script-platform/dashboard/dist /out/services/script-platform/dashboard/

# --- final: Node, ffmpeg and tini, the built services, no compilers or dev dependencies --------
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tini \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown node:node /data
COPY --from=build /out /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    FFMPEG_PATH=/usr/bin/ffmpeg
WORKDIR /app
USER node
VOLUME /data
EXPOSE 3001 3002 3003
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/app/deploy/image/healthcheck.mjs"]
ENTRYPOINT ["/usr/bin/tini", "--", "/app/deploy/image/entry.sh"]
CMD ["all"]
