# The capt worker image: workflows, core activities and the local provider's activities, run with `capt worker`.
# Kubernetes and etcd binaries are mounted from the host's tool cache (docker-compose.yml, README).
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
# The local provider signs certificates with openssl and confines machines with unshare, setpriv, nsenter, mount(8) and nft.
RUN apt-get update && apt-get install -y --no-install-recommends openssl util-linux mount nftables && rm -rf /var/lib/apt/lists/*
WORKDIR /capt
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts
COPY --from=build /capt/dist dist
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["worker"]
