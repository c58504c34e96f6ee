# reagent: multi-stage build. The builder compiles a release binary; the runtime image holds
# only the binary (the UI is compiled into it) and the default configuration, and runs as a
# non-root user.
FROM rust:1-bookworm AS builder
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY crates ./crates
COPY migrations ./migrations
COPY benches ./benches
COPY static ./static
RUN cargo build --release --locked --bin reagent

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin reagent \
    && mkdir -p /app /data \
    && chown reagent:reagent /data
WORKDIR /app
COPY --from=builder /src/target/release/reagent /usr/local/bin/reagent
COPY config.toml ./config.toml
ENV REAGENT_BIND=0.0.0.0:8080 \
    DATABASE_URL=sqlite:///data/reagent.db \
    RUST_LOG=info
VOLUME ["/data"]
EXPOSE 8080
USER reagent
CMD ["reagent", "serve"]
