package kubelocal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

func tail(path string) string { return childproc.Tail(path, 4096) }

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
