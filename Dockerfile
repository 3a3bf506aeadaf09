# syntax=docker/dockerfile:1
#
# The flink-operator image: one static binary on an empty base, for amd64 and arm64.
#
#   docker build -t flink-operator:0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 -t registry.example.com/flink-operator:0.1.0 --push .
#
# Stage 1 builds a fully static musl binary for the platform it runs on (Rust's musl targets
# link statically; ring's C and assembly parts need the musl C toolchain): x86_64 on amd64,
# aarch64 on arm64 (under emulation when it is not the build machine's). Stage 2 holds only
# that binary and the CA bundle, running as the unprivileged user 65532 that the Helm chart's
# securityContext expects.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-alpine AS build
ARG TARGETARCH
RUN apk add --no-cache musl-dev gcc ca-certificates
WORKDIR /src
COPY . .
# The registry and target directories are build caches, not image layers; the binary is
# copied out of the cached target directory before the step ends. The target is the build
# stage's own (x86_64- or aarch64-unknown-linux-musl), so one file serves both platforms.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target,id=flink-operator-target-$TARGETARCH \
    target="$(rustc -vV | sed -n 's/^host: //p')" \
    && case "$target" in *-musl) ;; *) echo "not a musl toolchain: $target" >&2; exit 1 ;; esac \
    && cargo build --release --locked --target "$target" --bin flink-operator \
    && cp "target/$target/release/flink-operator" /flink-operator

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /flink-operator /flink-operator
USER 65532:65532
# Webhook (HTTPS) and probes/metrics (HTTP).
EXPOSE 9443 8080
ENTRYPOINT ["/flink-operator"]
CMD ["run"]
