{{/*
Each workload's environment: what its ready configuration reads through
${env:...}, from the values (POD_IP is every pod's, in podSpec).
*/}}
{{- define "otel-k8sevents.mirrorEnv" -}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: STORAGE_DIR
  value: /var/lib/otelcol
# The Events' reporting controller and the receiver's field selector
# (mirror.yaml), the admission policy's too.
- name: REPORTING_CONTROLLER
  value: {{ .root.Values.mirror.reportingController | quote }}
# The leader election's Lease, the one the Role names.
- name: LEASE_NAME
  value: {{ .name | quote }}
- name: GOMEMLIMIT
  value: {{ .root.Values.mirror.goMemLimit | quote }}
{{- end -}}

{{- define "otel-k8sevents.tier1Env" -}}
{{- $tier1 := .Values.otlp.tier1 -}}
# One entry per tier-2 replica but the draining ones (the ring sorts
# them): otlp.tier2.replicas and otlp.tier2.draining.
- name: TIER2_ENDPOINTS
  value: {{ include "otel-k8sevents.tier2Endpoints" . | quote }}
- name: OTLP_AUDIENCE
  value: {{ .Values.otlp.audience | quote }}
# Tier 1's token for tier 2 (the projected volume, tier2/).
- name: TIER2_TOKEN_FILE
  value: /etc/otelcol/tier2/token
# k8s.cluster.name stamped on every record (the Event's source cluster,
# whatever an app claims); empty: none.
- name: CLUSTER_NAME
  value: {{ .Values.otlp.clusterName | quote }}
# Each app's budget (per_client).
- name: CLIENT_RECORDS_PER_SECOND
  value: {{ $tier1.recordsPerSecond | quote }}
- name: CLIENT_BURST
  value: {{ $tier1.burst | quote }}
- name: GOMEMLIMIT
  value: {{ $tier1.goMemLimit | quote }}
{{- end -}}

{{- define "otel-k8sevents.tier2Env" -}}
- name: STORAGE_DIR
  value: /var/lib/otelcol
# Who may send: tier 1's ServiceAccount, with a token for this audience.
- name: TIER2_AUDIENCE
  value: {{ .Values.otlp.tier2Audience | quote }}
- name: TIER1_USER
  value: {{ printf "system:serviceaccount:%s:%s" .Release.Namespace (include "otel-k8sevents.tier1Name" .) | quote }}
- name: REPORTING_CONTROLLER
  value: {{ .Values.otlp.reportingController | quote }}
- name: GOMEMLIMIT
  value: {{ .Values.otlp.tier2.goMemLimit | quote }}
{{- end -}}

{{/*
What the chart adds to the mirror's configuration. With OTLP ingestion
installed too, the receiver also leaves out tier 2's Events: they are
series already, and mirroring them would write each app's Event twice.
*/}}
{{- define "otel-k8sevents.mirrorConfig" -}}
{{- if .Values.otlp.enabled }}
receivers:
  k8sevents:
    field_selector: reportingController!=${env:REPORTING_CONTROLLER},reportingController!={{ .Values.otlp.reportingController }}
{{- end }}
{{- end -}}

{{/*
What the chart adds to tier 1's configuration: TLS on the OTLP listeners
(otlp.tier1.tls), with the certificate where the pod mounts it.
*/}}
{{- define "otel-k8sevents.tier1Config" -}}
{{- if .Values.otlp.tier1.tls.enabled }}
{{- $dir := "/etc/otelcol/listener-tls" }}
receivers:
  k8seventsotlp:
    protocols:
      {{- range list "grpc" "http" }}
      {{ . }}:
        tls:
          cert_file: {{ $dir }}/tls.crt
          key_file: {{ $dir }}/tls.key
          # cert-manager renews the Secret, kubelet updates the files.
          reload_interval: 1h
      {{- end }}
{{- end }}
{{- end -}}

{{/*
A projected volume's source: the keys of a kubernetes.io/tls Secret under
dir/. dict: secret, dir, ca (ca.crt too).
*/}}
{{- define "otel-k8sevents.tlsSource" -}}
secret:
  name: {{ .secret }}
  items:
    {{- if .ca }}
    - {key: ca.crt, path: {{ .dir }}/ca.crt}
    {{- end }}
    - {key: tls.crt, path: {{ .dir }}/tls.crt}
    - {key: tls.key, path: {{ .dir }}/tls.key}
{{- end -}}
