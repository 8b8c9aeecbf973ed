# insights-sync: the CLI in a container (the `schedule` and `serve` services of docker-compose.yml).
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first: this layer is rebuilt only when the lock file changes. tsx runs the
# TypeScript sources directly, so no build step and no dev dependencies.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY jobs ./jobs
COPY migrations ./migrations

USER node
# The container's PID 1 is node itself: SIGTERM from `docker stop` reaches the CLI, which stops
# taking new work and exits within INSIGHTS_SHUTDOWN_GRACE_MS.
ENTRYPOINT ["node", "bin/insights-sync.js"]
CMD ["schedule", "--run-now"]
