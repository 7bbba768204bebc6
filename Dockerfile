# The distribution as an image with a Docker daemon: make otelcol builds
# bin/otelcol-k8sevents (statically linked, CGO_ENABLED=0), then:
#   docker build -t otelcol-k8sevents:0.1.0 .
# Without a daemon, make image writes the same layout (binary, ready
# configurations, user, entrypoint) on an empty base: bin/otelcol-k8sevents-image.tar.
FROM gcr.io/distroless/static-debian12:nonroot
COPY bin/otelcol-k8sevents /otelcol-k8sevents
COPY testdata/config/*.yaml /etc/otelcol-k8sevents/
USER 65532:65532
ENTRYPOINT ["/otelcol-k8sevents"]
CMD ["--config", "/etc/otelcol/config.yaml"]
