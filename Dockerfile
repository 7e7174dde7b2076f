# Multi-stage build of the cronstable image.
#
# Build stage: a fully static, stripped binary (scripts/static_build.sh:
# glibc with +crt-static). Static so that the same binary also runs when
# copied into any other Linux image (sidecar mode, deploy/examples/
# sidecar.yaml): the init container there copies /usr/local/bin/cronstable
# out of this image.
#
# Runtime stage: Debian slim, because jobs are shell commands: string
# commands run through /bin/sh, and users' scripts expect the usual base
# tools (a shell-less distroless base would break most configs). Time zone
# data and the CA bundle are copied from the build stage rather than
# installed, which keeps openssl and apt's package state out of the image.
# The user is UID/GID 10001, the one the chart and deploy/ run as.
#
# Expected size (Docker is not available where this was written, so this
# is computed from the stage's contents, see docs/kubernetes.md): the
# debian:bookworm-slim base (about 75 MB unpacked, 28 MB compressed) plus
# /usr/share/zoneinfo (1.5 MB), the CA bundle (0.2 MB) and the stripped
# static binary (18.2 MB, 6.8 MB gzipped): about 95 MB, 36 MB to pull.
#
# A static build never calls the C library's NSS code (it cannot load NSS
# modules safely): `user:` and `group:` resolve through /etc/passwd and
# /etc/group, read by cronstable itself (docs/kubernetes.md, "Static
# binary").
FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends tzdata ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN scripts/static_build.sh \
 && cp target/x86_64-unknown-linux-gnu/release/cronstable /cronstable

FROM debian:bookworm-slim
COPY --from=build /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN groupadd --system --gid 10001 cronstable \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent \
      --shell /usr/sbin/nologin cronstable
COPY --from=build /cronstable /usr/local/bin/cronstable
USER 10001:10001
# The daemon is PID 1 here: it reaps the orphans its jobs leave behind
# and drains running jobs on SIGTERM (no init wrapper needed).
ENTRYPOINT ["/usr/local/bin/cronstable"]
CMD ["-c", "/etc/cronstable.d"]
