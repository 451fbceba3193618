# The production image of flashsale: the worker, the api and the starter
# CLI (for operators and the reconcile Schedule job of docker-compose.yml).
# The lab (lab/) and the demo's embedded MySQL (internal/devstack/mysqld) are
# modules of their own and not in the build context; GOWORK=off builds the
# product's module alone.
#
# golang 1.26.7-bookworm is the newest 1.26 tag in docker-library's list
# (official-images library/golang at 37079fb, 2026-08-21); go.mod asks for
# go 1.26.8, which GOTOOLCHAIN fetches from the Go module proxy, so the
# image builds with the toolchain the tests run on.
#
# The build has no .git (COPY . . is the tree, not the repository), so the
# toolchain stamps no VCS revision: pass it, and the version, as build
# arguments; they reach `--version` through -ldflags -X
# (internal/buildinfo) and the image's OCI labels:
#
#   docker build --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
ARG REVISION=unknown
ARG VERSION=(devel)
ARG CREATED=
FROM golang:1.26.7-bookworm AS build
ARG REVISION
ARG VERSION
ENV GOTOOLCHAIN=go1.26.8 CGO_ENABLED=0 GOWORK=off
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN ldflags="-X github.com/flashsale/flashsale/internal/buildinfo.Revision=${REVISION} -X github.com/flashsale/flashsale/internal/buildinfo.Version=${VERSION}" && \
    go build -trimpath -ldflags "$ldflags" -o /out/ ./worker ./api ./starter

# Static binaries on distroless: no shell, no package manager; nonroot.
FROM gcr.io/distroless/static-debian12:nonroot
ARG REVISION
ARG VERSION
ARG CREATED
LABEL org.opencontainers.image.title="flashsale" \
      org.opencontainers.image.description="flash sales on Temporal: worker, api and starter" \
      org.opencontainers.image.source="https://github.com/flashsale/flashsale" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/ /usr/local/bin/
USER nonroot
