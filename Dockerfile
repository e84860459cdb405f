# Build stage: dev dependencies and the TypeScript compiler stay here.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies only (no dev dependencies, and not the optional embedded PostgreSQL of
# `demo`: a container is given DATABASE_URL), run as the image's non-root `node` user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/bin ./dist/bin
COPY migrations ./migrations
USER node
# Logs are pino JSON on stderr (not a terminal); the one-line run summary is on stdout; the exit code is documented.
ENTRYPOINT ["node", "dist/bin/main.js"]
CMD ["--help"]
