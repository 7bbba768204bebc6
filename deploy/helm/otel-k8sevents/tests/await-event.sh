# await_event WHO REASON: waits up to TIMEOUT_SECONDS until an Event of
# REPORTING_CONTROLLER with REASON is in POD_NAMESPACE, then says that WHO
# wrote it; exits 1 when none came. Sourced before each helm test script.
await_event() {
  local who=$1 reason=$2 written waited
  for ((waited = 0; waited < TIMEOUT_SECONDS; waited += 2)); do
    written=$(kubectl get events -n "${POD_NAMESPACE}" -o name \
      --field-selector "reportingComponent=${REPORTING_CONTROLLER},reason=${reason}")
    if [[ -n "${written}" ]]; then
      echo "${who} wrote ${written}"
      exit 0
    fi
    sleep 2
  done
  echo "no Event of ${REPORTING_CONTROLLER} with reason ${reason} after ${TIMEOUT_SECONDS}s" >&2
  exit 1
}
