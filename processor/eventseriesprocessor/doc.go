//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package eventseriesprocessor folds Kubernetes Event records into what
// client-go's recorders would write (events.k8s.io/v1 series, or core/v1
// compressed and aggregated events, behind a spam filter), for every source
// in the pipeline.
package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"
