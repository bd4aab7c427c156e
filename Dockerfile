# probegate in a container: a static binary on an empty base, run as a
# non-root user. The version is the VERSION file's unless VERSION is given:
#   docker build --build-arg REVISION=$(git rev-parse HEAD) -t probegate:v$(cat VERSION) .
# There is no HEALTHCHECK: orchestrators and balancers probe /ready (and
# /health for liveness) themselves, on --web.health-listen-address.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Empty: the binary reports the VERSION file it was built from.
ARG VERSION=
ARG REVISION=unknown
ARG BRANCH=unknown
RUN CGO_ENABLED=0 go build -trimpath -o /out/probegate \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=docker \
        -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)" \
      ./cmd/probegate

FROM scratch
# Backends behind HTTPS need the CA certificates; nothing else is in the
# image but the binary.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/probegate /bin/probegate
# A numeric user, so that runAsNonRoot can check it without /etc/passwd.
USER 65532:65532
WORKDIR /var/lib/probegate
# 9797: metrics, fan-out, status pages; 9798: /health and /ready only.
# The admin API and /-/reload listen on the container's loopback,
# 127.0.0.1:9799 (--web.admin-listen-address), and are not exposed:
#   docker exec CONTAINER /bin/probegate maintenance list
EXPOSE 9797 9798
ENTRYPOINT ["/bin/probegate"]
CMD ["--config.file=/etc/probegate/probegate.yml", "--web.health-listen-address=:9798"]
