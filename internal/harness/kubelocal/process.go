package kubelocal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"

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

// freePort returns a port on 127.0.0.1 that is free right now. It prefers
// ports below the usual ephemeral ranges (Linux 32768-60999, macOS
// 49152-65535), so that client connections made while the API server is
// stopped cannot take its port before StartAPIServer binds it again.
func freePort(exclude ...int) (int, error) {
	for range 100 {
		b := make([]byte, 2)
		if _, err := rand.Read(b); err != nil {
			return 0, err
		}
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		if slices.Contains(exclude, port) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
