//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package k8seventexporter writes Event log records to a Kubernetes API
// server as Event objects: create, then patch; idempotent names; a
// client-side rate limit and backoff on 429.
package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"
