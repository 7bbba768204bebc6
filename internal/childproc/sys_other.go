//go:build !linux

package childproc

import "syscall"

// sysProcAttr returns nil: Pdeathsig exists only on Linux. Elsewhere the
// processes are stopped by t.Cleanup only.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func onSpawnThread(f func()) { f() }
