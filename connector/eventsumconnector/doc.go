//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package eventsumconnector sums a numeric attribute of log records into
// cumulative counters per attribute set: with the eventseries processor's
// k8s.event.occurrences.new, the exact occurrences of Kubernetes Events per
// namespace, kind and reason. Its configuration has the shape of contrib's
// sum connector (logs only, no conditions), so that either can replace the
// other.
package eventsumconnector // import "github.com/k8sevents/otel-k8sevents/connector/eventsumconnector"
