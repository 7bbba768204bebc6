//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package k8seventsreceiver watches Kubernetes Events and emits one log
// record per occurrence, per the project's log-record contract.
package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"
