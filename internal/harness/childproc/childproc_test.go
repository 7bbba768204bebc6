//go:build linux

package childproc

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopDumpsTheGoroutinesOfAChildThatHangs: a child that ignores
// SIGTERM is sent SIGQUIT after the grace, and Stop's error carries its
// goroutines, the hanging function among them.
func TestStopDumpsTheGoroutinesOfAChildThatHangs(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "child.log")
	p, err := Start(os.Args[0], []string{"-test.run=^TestHelperHangingChild$"}, []string{"CHILDPROC_HANG=1"}, logPath)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(Tail(logPath, 1<<10), "ignoring SIGTERM") },
		time.Minute, 10*time.Millisecond, "the child ignores SIGTERM")
	err = p.Stop(100 * time.Millisecond)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not stop within 100ms after SIGTERM")
	assert.Contains(t, err.Error(), "goroutines on SIGQUIT")
	assert.Contains(t, err.Error(), "hangIgnoringSIGTERM", "the hanging function's stack")
}

// TestHelperHangingChild is the child of the test above, run as its own
// process; it does nothing in a normal test run.
func TestHelperHangingChild(t *testing.T) {
	if os.Getenv("CHILDPROC_HANG") != "1" {
		t.Skip("the child of TestStopDumpsTheGoroutinesOfAChildThatHangs")
	}
	hangIgnoringSIGTERM()
}

func hangIgnoringSIGTERM() {
	signal.Ignore(syscall.SIGTERM)
	_, _ = os.Stderr.WriteString("ignoring SIGTERM\n")
	time.Sleep(time.Hour)
}
