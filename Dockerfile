# insights-sync: the CLI in a container (the `schedule` and `serve` services of docker-compose.yml).

# Build stage: every dependency (TypeScript and esbuild among them); `npm ci` runs `prepare`,
# which compiles src/, migrations/ and jobs/ into dist/ and bundles the CLI (scripts/bundle-cli.mjs).
# Node 24, the active LTS line (engines admits 22.12 and later).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY jobs ./jobs
COPY migrations ./migrations
COPY scripts/build.mjs scripts/bundle-cli.mjs ./scripts/
RUN npm ci --no-audit --no-fund

# Runtime stage: the runtime dependencies and the compiled JavaScript only; no tsx, no TypeScript.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# Dependencies first: this layer is rebuilt only when the lock file changes. `prepare` (the build)
# is removed here: dist/ comes from the build stage, and its compiler is a dev dependency.
# Optional dependencies stay out: the embedded PostgreSQL (`demo`, `--embedded`) is for a machine
# without a server, and a container is given DATABASE_URL (docker-compose.yml's postgres service).
COPY package.json package-lock.json ./
RUN npm pkg delete scripts.prepare && npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY --from=build /app/dist ./dist

USER node
# node is PID 1: SIGTERM from `docker stop` reaches bin/insights-sync.js, which forwards it to the
# CLI (for schedule and serve a child with the heap limit, INSIGHTS_MAX_HEAP_MB); the CLI stops
# taking new work and exits within INSIGHTS_SHUTDOWN_GRACE_MS.
ENTRYPOINT ["node", "bin/insights-sync.js"]
CMD ["schedule", "--run-now"]
