# The distribution as an image: make otelcol builds bin/otelcol-k8sevents
# (statically linked), then: docker build -t otelcol-k8sevents:0.1.0 .
FROM gcr.io/distroless/static-debian12:nonroot
COPY bin/otelcol-k8sevents /otelcol-k8sevents
USER 65532:65532
ENTRYPOINT ["/otelcol-k8sevents"]
CMD ["--config", "/etc/otelcol/config.yaml"]
