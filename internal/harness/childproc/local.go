package childproc

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
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
// than those excluded, and reserves it for the rest of this process. It
// prefers ports below the usual ephemeral ranges (Linux 32768-60999, macOS
// 49152-65535), so that client connections made while a server is stopped
// cannot take its port before it binds it again (kube-apiserver across
// StopAPIServer and StartAPIServer).
//
// A port is found free, then bound later by a child: in between, another
// FreePort could hand out the same port, in this process (a parallel test,
// or the next port of the same configuration) or in another test binary
// running beside it. So a port is handed out once per process, and only
// once this process holds its lock file (see reservePort); the lock goes
// with the process.
func FreePort(exclude ...int) (int, error) {
	for range 200 {
		b := make([]byte, 2)
		if _, err := rand.Read(b); err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		if slices.Contains(exclude, port) || !reservePort(port) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("free port: no port of 20000-31999 free and unreserved after 200 tries")
}

// reserved is every port this process has reserved (handed out or found
// busy): none is tried twice.
var reserved struct {
	mu    sync.Mutex
	ports map[int]bool
	locks []*os.File // kept open: a lock lasts as long as its file
}

// reservePort reports whether port is now this process's: never tried by it
// before, and its lock file (one per port, in the temporary directory shared
// by the test binaries of one machine) locked by it. Where files cannot be
// locked, the process-wide part still holds.
func reservePort(port int) bool {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	if reserved.ports[port] {
		return false
	}
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
	}
	reserved.ports[port] = true
	f, locked := lockFile(filepath.Join(os.TempDir(), "k8sevents-test-ports", strconv.Itoa(port)))
	if f != nil {
		reserved.locks = append(reserved.locks, f)
	}
	return locked
}
