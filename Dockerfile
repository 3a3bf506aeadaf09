# syntax=docker/dockerfile:1
#
# The flink-operator image: one static binary on an empty base.
#
#   docker build -t flink-operator:0.1.0 .
#
# Stage 1 builds a fully static x86_64 musl binary (ring's C and assembly parts need the
# musl C toolchain); stage 2 holds only that binary and the CA bundle, running as the
# unprivileged user 65532 that the Helm chart's securityContext expects.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-alpine AS build
RUN apk add --no-cache musl-dev gcc ca-certificates
WORKDIR /src
COPY . .
# The registry and target directories are build caches, not image layers; the binary is
# copied out of the cached target directory before the step ends.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl --bin flink-operator \
    && cp target/x86_64-unknown-linux-musl/release/flink-operator /flink-operator

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /flink-operator /flink-operator
USER 65532:65532
# Webhook (HTTPS) and probes/metrics (HTTP).
EXPOSE 9443 8080
ENTRYPOINT ["/flink-operator"]
CMD ["run"]
