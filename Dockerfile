# syntax=docker/dockerfile:1
# The image of one service, named by SERVICE (gateway, jobs, directory,
# content or community): every command of services/$SERVICE, one static
# binary each in /app, the service's API server as the entrypoint.
# Build from the repository root:
#   docker build --build-arg SERVICE=jobs -t coworkjobs/jobs:dev .
# The module builds on its own (GOWORK=off): its go.mod replaces libs and api
# with ../../libs and ../../api.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
ARG SERVICE
RUN test -n "$SERVICE" || { echo "SERVICE is required: --build-arg SERVICE=jobs" >&2; exit 1; }
# grpcnotrace: see GO_TAGS in the Makefile (a third smaller binary and resident set).
ENV CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -tags=grpcnotrace"
WORKDIR /src
# Module files first: the download layer is reused until a go.mod/go.sum changes.
COPY libs/go.mod libs/go.sum libs/
COPY api/go.mod api/go.sum api/
COPY services/${SERVICE}/go.mod services/${SERVICE}/go.sum services/${SERVICE}/
RUN --mount=type=cache,target=/go/pkg/mod cd services/${SERVICE} && go mod download
COPY libs/ libs/
COPY api/ api/
COPY services/${SERVICE}/ services/${SERVICE}/
ARG VERSION=dev
# An exec-form ENTRYPOINT cannot expand SERVICE, so a fixed link names the
# service's main binary: one build argument picks the whole image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    cd services/${SERVICE} && go build -ldflags="-s -w -X main.version=${VERSION}" -o /out/ ./cmd/... && \
    test -x /out/${SERVICE} && ln -s ${SERVICE} /out/entrypoint

# distroless static: no shell, no package manager, CA certificates and tzdata only.
FROM gcr.io/distroless/static-debian12:nonroot
ARG SERVICE
LABEL org.opencontainers.image.source="https://github.com/coworkjobs/coworkjobs" \
      org.opencontainers.image.title="coworkjobs-${SERVICE}"
COPY --from=build /out/ /app/
# 65532 is distroless's nonroot user; the chart runs it with a read-only root
# filesystem (the binaries write nothing to disk) and names each container's
# binary (/app/<command>) itself.
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/app/entrypoint"]
