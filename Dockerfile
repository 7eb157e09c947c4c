# deskbot: multi-stage build of a static binary into a small non-root image.
# The runtime needs bash (every desk's terminal), bubblewrap (the sandbox;
# it needs user namespaces, else SANDBOX=auto gives desks no terminal),
# slirp4netns (the desks' network without the host's loopback; it needs
# /dev/net/tun), iproute2 and util-linux (ip and nsenter fence the host's
# other addresses off that network) and tzdata (India time is also embedded in the binary).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# e2e/harness_test.go builds the drills' binary the same way: keep them alike.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/deskbot ./cmd/deskbot

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash bubblewrap slirp4netns iproute2 util-linux tzdata ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /home/deskbot deskbot \
 && mkdir -p /data && chown deskbot:deskbot /data
COPY --from=build /out/deskbot /usr/local/bin/deskbot
USER deskbot
WORKDIR /home/deskbot
ENV DATA_DIR=/data HTTP_ADDR=0.0.0.0:8080 TZ=Asia/Kolkata
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/deskbot"]
