# Multi-stage build: compile in the Rust image, ship a small non-root image.
# The runtime keeps a POSIX shell on purpose: string commands run through
# /bin/sh, so a shell-less (distroless) base would break most configs.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin cronstable

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin cronstable
COPY --from=build /src/target/release/cronstable /usr/local/bin/cronstable
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/cronstable"]
CMD ["-c", "/etc/cronstable.d"]
