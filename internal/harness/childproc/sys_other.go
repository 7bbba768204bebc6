//go:build !linux

package childproc

import (
	"os"
	"syscall"
)

// sysProcAttr returns nil: Pdeathsig exists only on Linux. Elsewhere the
// children are stopped only by their parent stopping them.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func onSpawnThread(f func()) (release func()) { f(); return func() {} }

// lockFile locks nothing: only the process-wide reservation of ports holds.
func lockFile(string) (*os.File, bool) { return nil, true }
