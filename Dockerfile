# The capt worker image: workflows and the provider activities, run with `capt worker`.
FROM node:20-bookworm-slim AS build
WORKDIR /capt
COPY package.json package-lock.json ./
RUN npm install --ignore-scripts
COPY tsconfig.json ./
COPY src src
COPY workflows workflows
COPY activities activities
COPY providers providers
COPY test test
COPY bench bench
RUN npx tsc -p tsconfig.json

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends openssl bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /capt
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts
COPY --from=build /capt/dist dist
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["worker"]
