# syntax=docker/dockerfile:1
#
# Container image of bragerone_exporter: a static binary on distroless, run as
# an unprivileged user. Build with
#
#   docker build -t bragerone_exporter \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg BRANCH="$(git rev-parse --abbrev-ref HEAD)" \
#     --build-arg BUILD_DATE="$(date -u +%Y%m%d-%H:%M:%S)" .
#
# Multi-arch (the Go compiler cross-builds; no emulation runs the build):
#
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 \
#     -t ghcr.io/bragerone/bragerone_exporter:latest --push .
#
# The go build line uses the same flags as scripts/build.sh: the build args
# are stamped into github.com/prometheus/common/version, which --version and
# bragerone_exporter_build_info read.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
# arm/v7 and arm/v6 (docker buildx --platform linux/arm/v7): GOARM=7 or 6.
ARG TARGETVARIANT
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_USER=docker
ARG BUILD_DATE=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    v=github.com/prometheus/common/version && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOARM=${TARGETVARIANT#v} \
    go build -trimpath \
      -ldflags "-s -w -X ${v}.Version=${VERSION} -X ${v}.Revision=${REVISION} -X ${v}.Branch=${BRANCH} -X ${v}.BuildUser=${BUILD_USER} -X ${v}.BuildDate=${BUILD_DATE}" \
      -o /out/bragerone_exporter .

# static-debian12 carries CA certificates, tzdata and /etc/passwd; the nonroot
# tag runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="bragerone_exporter" \
      org.opencontainers.image.description="Prometheus exporter and health monitor for the BragerOne device cloud" \
      org.opencontainers.image.url="https://github.com/bragerone/bragerone_exporter" \
      org.opencontainers.image.source="https://github.com/bragerone/bragerone_exporter" \
      org.opencontainers.image.documentation="https://github.com/bragerone/bragerone_exporter/blob/main/README.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /out/bragerone_exporter /bin/bragerone_exporter
USER nonroot:nonroot
EXPOSE 9826
ENTRYPOINT ["/bin/bragerone_exporter"]
