{{/*
The collectors' jobs in Prometheus: the ServiceMonitor's job is each
Service's name, the PodMonitor's each pod's app.kubernetes.io/name (its
jobLabel), both the workload's name. A regular expression of those the
release installs, for the alerts' job matcher.
*/}}
{{- define "otel-k8sevents.jobs" -}}
{{- $jobs := list -}}
{{- if .Values.mirror.enabled -}}
{{- $jobs = append $jobs (include "otel-k8sevents.mirrorName" .) -}}
{{- end -}}
{{- if .Values.otlp.enabled -}}
{{- $jobs = append $jobs (include "otel-k8sevents.tier1Name" .) -}}
{{- $jobs = append $jobs (include "otel-k8sevents.tier2Name" .) -}}
{{- end -}}
{{- join "|" $jobs -}}
{{- end -}}

{{/*
A monitor needs the metrics ports.
*/}}
{{- define "otel-k8sevents.needsMetrics" -}}
{{- if not .root.Values.metrics.enabled -}}
{{- fail (printf "%s.enabled needs metrics.enabled (the ports it scrapes)" .what) -}}
{{- end -}}
{{- end -}}
