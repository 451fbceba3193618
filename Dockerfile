# The production image of flashsale: the worker, the api and the starter
# CLI (for operators and the reconcile Schedule job of docker-compose.yml).
# The starter is built with the "nodemo" tag: without `starter demo` and
# `starter bench`, which embed a Redis (miniredis), a MySQL-compatible server
# (go-mysql-server) and start Temporal dev servers, none of which belongs in
# production.
#
# golang 1.26.7-bookworm is the newest 1.26 tag in docker-library's list
# (official-images library/golang at 37079fb, 2026-08-21); go.mod asks for
# go 1.26.8, which GOTOOLCHAIN fetches from the Go module proxy, so the
# image builds with the toolchain the tests run on.
FROM golang:1.26.7-bookworm AS build
ENV GOTOOLCHAIN=go1.26.8 CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -o /out/ ./worker ./api && \
    go build -trimpath -tags nodemo -o /out/starter ./starter

# Static binaries on distroless: no shell, no package manager; nonroot.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot
