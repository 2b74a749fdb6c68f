# lockctl's images, built from a checkout (or a tag: docker build accepts
# https://github.com/lockctl/lockctl.git#v1.2.3 as the context):
#   docker build --target static -t lockctl:static .
#   docker build --target shell -t lockctl:shell .
# static: distroless static (no shell; CA certificates; a nonroot user);
# shell: busybox, for jobs that are shell scripts or use run -c. A job's
# image starts FROM one of them (docs/kubernetes.md). Both run lockctl as
# user 65532, which a runAsNonRoot pod accepts.
FROM golang:1.26 AS build
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 make build

FROM busybox:1.37 AS shell
COPY --from=build /src/bin/lockctl /usr/local/bin/lockctl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lockctl"]

FROM gcr.io/distroless/static-debian12:nonroot AS static
COPY --from=build /src/bin/lockctl /usr/local/bin/lockctl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lockctl"]
