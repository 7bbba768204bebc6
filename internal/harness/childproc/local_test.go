package childproc

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModuleRootIsTheRepository(t *testing.T) {
	root, err := ModuleRoot()
	require.NoError(t, err)
	// go test runs in internal/harness/childproc.
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "internal", "harness", "childproc"), wd)
	assert.FileExists(t, filepath.Join(root, "go.mod"))
}

func TestFreePortIsFreeAndNotExcluded(t *testing.T) {
	first, err := FreePort()
	require.NoError(t, err)
	for range 20 {
		p, err := FreePort(first)
		require.NoError(t, err)
		assert.NotEqual(t, first, p)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d", p)
		l.Close()
	}
}

// A port found free is bound later by a child; in between no other FreePort
// of this process may hand it out again. 500 draws from 12,000 ports repeat
// one almost surely if nothing prevents it.
func TestFreePortNeverHandsOutAPortTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p, err := FreePort()
		require.NoError(t, err)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
}

// The lock file keeps a port from the FreePort of another test binary: a
// second open file description of the same file is refused the lock while
// the first holds it (as another process's would be).
func TestPortLockFileIsExclusive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ports are locked across processes on Linux only")
	}
	path := filepath.Join(t.TempDir(), "port")
	first, locked := lockFile(path)
	require.True(t, locked)
	require.NotNil(t, first)
	_, locked = lockFile(path)
	assert.False(t, locked, "a second lock of a held port file")
	require.NoError(t, first.Close())
	again, locked := lockFile(path)
	assert.True(t, locked, "the lock after its holder closed the file")
	require.NotNil(t, again)
	again.Close()
}
