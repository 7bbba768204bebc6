package childproc

import (
	"net"
	"os"
	"path/filepath"
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
