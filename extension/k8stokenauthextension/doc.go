//go:generate go tool -modfile=../../tools/mdatagen/go.mod mdatagen metadata.yaml

// Package k8stokenauthextension is a server authenticator: every request
// carries a Kubernetes ServiceAccount token issued for this collector's
// audience, which the API server verifies (TokenReview); the identity it
// answers goes into client.Info.Auth for the receiver to authorize.
package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"
