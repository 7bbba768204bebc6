package childproc

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ModuleRoot is the directory of the nearest go.mod at or above the working
// directory: the repository root when run by go test or from the
// repository. The binaries the children run are in its bin/.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("module root: no go.mod at or above %s", wd)
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that is free right now, other
// than those excluded. It prefers ports below the usual ephemeral ranges
// (Linux 32768-60999, macOS 49152-65535), so that client connections made
// while a server is stopped cannot take its port before it binds it again
// (kube-apiserver across StopAPIServer and StartAPIServer).
func FreePort(exclude ...int) (int, error) {
	for range 100 {
		b := make([]byte, 2)
		if _, err := rand.Read(b); err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		if slices.Contains(exclude, port) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
