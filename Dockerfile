# syntax=docker/dockerfile:1
#
# The `dragoman` image: one binary, every role. The command picks what a
# container runs (`serve` with DRAGOMAN_ROLES, `migrate`, `admin …`), see
# docs/deploy.md.
#
#   docker build -t dragoman:local .
#   docker build -t dragoman:local --build-arg WITH_EPUBCHECK=true .   # + epubcheck (Java)
#
# Build stage: the Rust toolchain and the whole workspace. The cache mounts
# keep the registry and target/ between builds (BuildKit, the default
# builder of Docker 23 and later).

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --package dragoman --bin dragoman \
    && install -D -m 0755 target/release/dragoman /out/dragoman

# Runtime stage: Debian slim rather than distroless, so that epubcheck (a
# Java program from Debian) can be added with one build argument; tini
# forwards SIGTERM and reaps the validator's processes.
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
ARG WITH_EPUBCHECK=false
# Versions follow the Debian release's security updates rather than pins;
# the package list is split into words on purpose.
# hadolint ignore=DL3008,SC2086
RUN set -eux; \
    packages="ca-certificates tini"; \
    if [ "$WITH_EPUBCHECK" = "true" ]; then packages="$packages epubcheck"; fi; \
    apt-get update; \
    apt-get install -y --no-install-recommends $packages; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd --system --gid 10001 dragoman; \
    useradd --system --uid 10001 --gid dragoman --home-dir /var/lib/dragoman \
        --no-create-home --shell /usr/sbin/nologin dragoman; \
    install -d -o 10001 -g 10001 -m 0750 /var/lib/dragoman /var/lib/dragoman/blobs

COPY --from=build /out/dragoman /usr/local/bin/dragoman

# Every address on the container's interfaces; the data folder is the one
# a single-container install keeps on a volume (SQLite, blobs, secret key).
ENV DRAGOMAN_DATA_DIR=/var/lib/dragoman \
    DRAGOMAN_LISTEN=0.0.0.0:8080 \
    DRAGOMAN_GRPC_LISTEN=0.0.0.0:8081 \
    RUST_LOG=info

LABEL org.opencontainers.image.title="dragoman" \
      org.opencontainers.image.description="Self-hosted whole-book translation with language models" \
      org.opencontainers.image.licenses="AGPL-3.0-only"

USER 10001:10001
WORKDIR /var/lib/dragoman
EXPOSE 8080 8081

# `dragoman healthcheck` probes what DRAGOMAN_ROLES runs: /health for a
# gateway, the gRPC health service for the other roles.
HEALTHCHECK --interval=15s --timeout=6s --start-period=60s --retries=3 \
    CMD ["dragoman", "healthcheck", "--timeout", "5"]

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/dragoman"]
CMD ["serve"]
