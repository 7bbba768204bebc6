# helm test of the mirror (templates/tests/mirror-writes.yaml): write an
# Event about this pod, wait until the mirror has written its own with the
# same reason. bash and kubectl only; the pod's ServiceAccount may create
# and list Events in its namespace.
set -euo pipefail
reason="HelmTest${RANDOM}${RANDOM}"
now=$(printf '%(%Y-%m-%dT%H:%M:%SZ)T' -1)
kubectl create -f - <<EVENT
apiVersion: v1
kind: Event
metadata: {generateName: helm-test-, namespace: "${POD_NAMESPACE}"}
involvedObject: {apiVersion: v1, kind: Pod, namespace: "${POD_NAMESPACE}", name: "${POD_NAME}", uid: "${POD_UID}"}
reason: "${reason}"
message: helm test of the otel-k8sevents mirror
type: Normal
source: {component: helm-test}
count: 1
firstTimestamp: "${now}"
lastTimestamp: "${now}"
EVENT
echo "wrote an Event with reason ${reason}; waiting for the mirror's (${REPORTING_CONTROLLER})"
await_event "the mirror" "${reason}"
