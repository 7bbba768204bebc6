{{/*
The collector's image: repository:tag@digest. Without a digest the chart
refuses to render while image.requireDigest is true; a digest that is not
sha256:<64 hex> is refused always.
*/}}
{{- define "otel-k8sevents.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $image.digest) -}}
{{- fail (printf "image.digest %q is not sha256:<64 hex digits>" $image.digest) -}}
{{- end -}}
{{- else if $image.requireDigest -}}
{{- fail "image.digest is required: the image's sha256: digest (make image prints it; docs/deploy.md \"Images by digest\"), or image.requireDigest=false to run by tag" -}}
{{- end -}}
{{ $image.repository }}:{{ $image.tag }}{{ with $image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/*
The tier-2 collectors tier 1 routes to, by the stable names of the
StatefulSet's pods: [otelcol-tier2-0.otelcol-tier2:4317, ...], one per
replica but the otlp.tier2.draining last ones.
*/}}
{{- define "otel-k8sevents.tier2Endpoints" -}}
{{- $tier2 := .Values.otlp.tier2 -}}
{{- $routed := sub $tier2.replicas $tier2.draining | int -}}
{{- if lt $routed 1 -}}
{{- fail (printf "otlp.tier2.draining (%v) must be less than otlp.tier2.replicas (%v)" $tier2.draining $tier2.replicas) -}}
{{- end -}}
[{{ range $i, $_ := until $routed }}{{ if $i }}, {{ end }}otelcol-tier2-{{ $i }}.otelcol-tier2:4317{{ end }}]
{{- end -}}
