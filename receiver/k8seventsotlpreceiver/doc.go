//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package k8seventsotlpreceiver receives Kubernetes Event records over OTLP
// (gRPC and HTTP) from authenticated clients and passes on only those the
// client could have written itself: each record's Event namespace is one
// where the client's identity may create Events (SubjectAccessReview).
// Refused records are answered with OTLP partial success.
package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"
