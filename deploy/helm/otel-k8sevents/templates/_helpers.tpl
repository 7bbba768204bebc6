{{/*
The fullname: fullnameOverride, or the release name when it holds the
chart's name (nameOverride), else RELEASE-NAME. At most 40 characters, so
that "<fullname>-tier2-N" and its StatefulSet's revision label stay within
Kubernetes' 63.
*/}}
{{- define "otel-k8sevents.fullname" -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- $full := .Values.fullnameOverride -}}
{{- if not $full -}}
{{- $full = ternary .Release.Name (printf "%s-%s" .Release.Name $name) (contains $name .Release.Name) -}}
{{- end -}}
{{- if gt (len $full) 40 -}}
{{- fail (printf "the fullname %q is longer than 40 characters: set fullnameOverride" $full) -}}
{{- end -}}
{{- $full -}}
{{- end -}}

{{/*
The workloads' names: the mirror is the fullname, the tiers
<fullname>-tier1 and -tier2; but the fullname otel-k8sevents (the default
release) keeps the tiers' names of deploy/ and of earlier installs,
otelcol-tier1 and otelcol-tier2 (the tier-2 certificates name them, and a
StatefulSet renamed would start on new volume claims).
*/}}
{{- define "otel-k8sevents.mirrorName" -}}
{{- include "otel-k8sevents.fullname" . -}}
{{- end -}}
{{- define "otel-k8sevents.tierPrefix" -}}
{{- $full := include "otel-k8sevents.fullname" . -}}
{{- ternary "otelcol" $full (eq $full "otel-k8sevents") -}}
{{- end -}}
{{- define "otel-k8sevents.tier1Name" -}}
{{- include "otel-k8sevents.tierPrefix" . }}-tier1
{{- end -}}
{{- define "otel-k8sevents.tier2Name" -}}
{{- include "otel-k8sevents.tierPrefix" . }}-tier2
{{- end -}}

{{/*
Tier 2's server certificate Secret: otlp.tls.secretName, or <tier prefix>-tls.
*/}}
{{- define "otel-k8sevents.tlsSecret" -}}
{{- default (printf "%s-tls" (include "otel-k8sevents.tierPrefix" .)) .Values.otlp.tls.secretName -}}
{{- end -}}

{{/*
Tier 1's client certificate Secret: otlp.tls.clientSecretName, or
<tier prefix>-tier1-client-tls.
*/}}
{{- define "otel-k8sevents.tlsClientSecret" -}}
{{- default (printf "%s-tier1-client-tls" (include "otel-k8sevents.tierPrefix" .)) .Values.otlp.tls.clientSecretName -}}
{{- end -}}

{{/*
Tier 1's listeners' certificate Secret: otlp.tier1.tls.secretName, or
<tier prefix>-tier1-tls.
*/}}
{{- define "otel-k8sevents.tier1ListenerSecret" -}}
{{- default (printf "%s-tier1-tls" (include "otel-k8sevents.tierPrefix" .)) .Values.otlp.tier1.tls.secretName -}}
{{- end -}}

{{/*
Labels of every object: the chart's, the release's, commonLabels.
*/}}
{{- define "otel-k8sevents.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: otel-k8sevents
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
A workload's labels; dict: root (the chart's context), name (the
workload's name, also its selector), component (mirror, tier1, tier2).
*/}}
{{- define "otel-k8sevents.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .component }}
{{ include "otel-k8sevents.commonLabels" .root }}
{{- end -}}

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
{{- fail "image.digest is required: the image's sha256: digest (make push-image prints it; README.md \"Image\"), or image.requireDigest=false to run by tag" -}}
{{- end -}}
{{ $image.repository }}:{{ $image.tag }}{{ with $image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/*
The tier-2 collectors tier 1 routes to, by the stable names of the
StatefulSet's pods: [<tier 2>-0.<tier 2>:4317, ...], one per replica but
the otlp.tier2.draining last ones.
*/}}
{{- define "otel-k8sevents.tier2Endpoints" -}}
{{- $tier2 := .Values.otlp.tier2 -}}
{{- $name := include "otel-k8sevents.tier2Name" . -}}
{{- $routed := sub $tier2.replicas $tier2.draining | int -}}
{{- if lt $routed 1 -}}
{{- fail (printf "otlp.tier2.draining (%v) must be less than otlp.tier2.replicas (%v)" $tier2.draining $tier2.replicas) -}}
{{- end -}}
[{{ range $i, $_ := until $routed }}{{ if $i }}, {{ end }}{{ $name }}-{{ $i }}.{{ $name }}:4317{{ end }}]
{{- end -}}

{{/*
What the chart adds to a collector's configuration, with the user's
config merged over it (maps merge, lists are replaced, as the collector
merges its --config files): the pod's config.yaml is the ready
configuration as it is, chart.yaml this; the collector reads both, this
one last. dict: root, base (the ready configuration's file under
config/), exact (add the exact counts), add (more of the chart's, a
dict), user (the user's config).
*/}}
{{- define "otel-k8sevents.chartConfig" -}}
{{- $v := .root.Values -}}
{{- $cfg := dict -}}
{{- if $v.metrics.enabled -}}
{{- $reader := dict "pull" (dict "exporter" (dict "prometheus" (dict "host" "${env:POD_IP}" "port" (int $v.metrics.port)))) -}}
{{- $_ := set $cfg "service" (dict "telemetry" (dict "metrics" (dict "level" $v.metrics.level "readers" (list $reader)))) -}}
{{- end -}}
{{- if and .exact $v.exactCounts.enabled -}}
{{- $base := .root.Files.Get .base | fromYaml -}}
{{- $exporters := concat $base.service.pipelines.logs.exporters (list "eventsum") -}}
{{- $exact := .root.Files.Get "config/exact-metrics.yaml" | fromYaml -}}
{{- $prometheus := dict "endpoint" (printf "${env:POD_IP}:%d" (int $v.exactCounts.port)) "metric_expiration" $exact.exporters.prometheus.metric_expiration -}}
{{- $_ := set $cfg "connectors" (dict "eventsum" $exact.connectors.eventsum) -}}
{{- $_ := set $cfg "exporters" (dict "prometheus" $prometheus) -}}
{{- $pipelines := dict "logs" (dict "exporters" $exporters) "metrics/exact-counts" (dict "receivers" (list "eventsum") "exporters" (list "prometheus")) -}}
{{- $service := default (dict) (get $cfg "service") -}}
{{- $_ := set $service "pipelines" $pipelines -}}
{{- $_ := set $cfg "service" $service -}}
{{- end -}}
{{- $cfg = mustMergeOverwrite $cfg (deepCopy (default (dict) .add)) -}}
{{- $cfg = mustMergeOverwrite $cfg (deepCopy .user) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
The collector container and pod parts every workload shares.
"otel-k8sevents.podSpec": dict root, name, component, env (the
workload's env vars, YAML), ports (its container ports), mounts, volumes,
spread (its topologySpreadConstraints). Renders the pod spec's keys.
*/}}
{{- define "otel-k8sevents.podSpec" -}}
{{- $v := .root.Values -}}
serviceAccountName: {{ .name }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .spread }}
{{- $selector := dict "matchLabels" (dict "app.kubernetes.io/name" $.name) }}
{{- $constraints := list }}
{{- range . }}
{{- $constraints = append $constraints (ternary . (merge (dict "labelSelector" $selector) .) (hasKey . "labelSelector")) }}
{{- end }}
topologySpreadConstraints:
  {{- toYaml $constraints | nindent 2 }}
{{- end }}
# SIGTERM: the receiver saves its checkpoint, the processor its open series;
# the queues on disk keep what they hold, tier 1's drain into tier 2.
terminationGracePeriodSeconds: 60
{{- with $v.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: otelcol
    # make image builds it; by digest (image.digest, docs/deploy.md
    # "Images by digest").
    image: {{ include "otel-k8sevents.image" .root }}
    imagePullPolicy: {{ $v.image.pullPolicy }}
    # The ready configuration, then what the chart and the values add.
    args: ["--config", "/etc/otelcol/config.yaml", "--config", "/etc/otelcol/chart.yaml"]
    env:
      - name: POD_IP
        valueFrom: {fieldRef: {fieldPath: status.podIP}}
      {{- .env | nindent 6 }}
      {{- with $v.extraEnvs }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    ports:
      {{- with .ports }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      - {name: health, containerPort: 13133}
      {{- range include "otel-k8sevents.metricsPorts" (dict "root" .root "exact" .exact) | fromYamlArray }}
      - {name: {{ .name }}, containerPort: {{ .port }}}
      {{- end }}
    {{- with $v.startupProbe }}
    startupProbe:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    readinessProbe:
      httpGet: {path: /, port: health}
    livenessProbe:
      httpGet: {path: /, port: health}
      initialDelaySeconds: 10
    resources:
      {{- toYaml .resources | nindent 6 }}
    {{- with $v.securityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      {{- toYaml .mounts | nindent 6 }}
      {{- with $v.extraVolumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- if or .volumes $v.extraVolumes }}
volumes:
  {{- with .volumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with $v.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
The pod template's metadata: the workload's labels and podLabels, the
checksum of its configuration (a new one rolls the pods), podAnnotations.
dict: root, name, component, checksum.
*/}}
{{- define "otel-k8sevents.podMetadata" -}}
labels:
  {{- /* Not the chart's version: a new chart version alone does not roll
  the StatefulSets' pods (each roll hands their state over). */}}
  app.kubernetes.io/name: {{ .name }}
  app.kubernetes.io/component: {{ .component }}
  app.kubernetes.io/instance: {{ .root.Release.Name }}
  app.kubernetes.io/part-of: otel-k8sevents
  {{- with .root.Values.commonLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  # A new configuration rolls the pods (helm upgrade).
  checksum/config: {{ .checksum }}
  {{- with .root.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
The metrics ports of a workload: metrics (metrics.enabled) and, with
exact (the mirror, tier 2), exact-counts (exactCounts.enabled); a list of
dicts name, port.
*/}}
{{- define "otel-k8sevents.metricsPorts" -}}
{{- $v := .root.Values -}}
{{- $ports := list -}}
{{- if $v.metrics.enabled -}}
{{- $ports = append $ports (dict "name" "metrics" "port" (int $v.metrics.port)) -}}
{{- end -}}
{{- if and .exact $v.exactCounts.enabled -}}
{{- $ports = append $ports (dict "name" "exact-counts" "port" (int $v.exactCounts.port)) -}}
{{- end -}}
{{- toYaml $ports -}}
{{- end -}}

{{/*
The NetworkPolicy ingress rule for the metrics ports (metrics.allowFrom).
dict: root, exact.
*/}}
{{- define "otel-k8sevents.metricsIngress" -}}
{{- $ports := include "otel-k8sevents.metricsPorts" . | fromYamlArray -}}
{{- if $ports -}}
- from:
    {{- toYaml .root.Values.metrics.allowFrom | nindent 4 }}
  ports:
    {{- range $ports }}
    - {protocol: TCP, port: {{ .port }}}
    {{- end }}
{{- end }}
{{- end -}}

{{/*
The Service ports for the metrics. dict: root, exact.
*/}}
{{- define "otel-k8sevents.metricsServicePorts" -}}
{{- range include "otel-k8sevents.metricsPorts" . | fromYamlArray }}
- {name: {{ .name }}, port: {{ .port }}, targetPort: {{ .name }}}
{{- end }}
{{- end -}}
