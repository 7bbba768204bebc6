# helm test of OTLP ingestion (templates/tests/otlp-writes.yaml): send an
# Event record about this pod to tier 1 over OTLP/HTTP with the pod's
# token, then wait until tier 2 has written the Event. bash (its /dev/tcp)
# and kubectl only; the pod's ServiceAccount may create and list Events in
# its namespace, which is what tier 1 asks the API server before it passes
# the record on.
set -euo pipefail
reason="HelmTest${RANDOM}${RANDOM}"
now=$(printf '%(%s)T' -1)
attr() { printf '{"key":"%s","value":{"stringValue":"%s"}}' "$1" "$2"; }
body=$(printf '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"%s000000000","severityText":"Normal","body":{"stringValue":"helm test of otel-k8sevents OTLP ingestion"},"attributes":[%s,%s,%s,%s,%s]}]}]}]}' \
  "${now}" "$(attr k8s.event.reason "${reason}")" "$(attr k8s.namespace.name "${POD_NAMESPACE}")" \
  "$(attr k8s.object.kind Pod)" "$(attr k8s.object.name "${POD_NAME}")" "$(attr k8s.object.uid "${POD_UID}")")
host=${OTLP_HTTP_ADDRESS%:*}
port=${OTLP_HTTP_ADDRESS##*:}
exec 3<>"/dev/tcp/${host}/${port}"
printf 'POST /v1/logs HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
  "${OTLP_HTTP_ADDRESS}" "$(<"${TOKEN_FILE}")" "${#body}" "${body}" >&3
response=""
while IFS= read -r line <&3 || [[ -n "${line}" ]]; do response+="${line}"$'\n'; done
exec 3<&-
status=${response%%$'\r'*}
if [[ "${status}" != "HTTP/1.1 200"* || "${response}" == *rejectedLogRecords* ]]; then
  echo "tier 1 did not take the record: ${response}" >&2
  exit 1
fi
echo "sent an Event record with reason ${reason}; waiting for tier 2's Event (${REPORTING_CONTROLLER})"
await_event "tier 2" "${reason}"
