//go:build unix

package kubepool

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on path (creating it) without waiting; nil
// if another process or lease holds it. The lock lasts until the file is
// closed, or the process ends.
func tryLock(path string) *os.File {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
}

// pause stops the processes (SIGSTOP), the last first; resume continues
// them (SIGCONT), the first first: etcd is listed before the API server
// that uses it. A process that is gone is no error: the lease's reset
// then fails on the server, with a clearer message.
func pause(pids []int) {
	for i := len(pids) - 1; i >= 0; i-- {
		_ = syscall.Kill(pids[i], syscall.SIGSTOP)
	}
}

func resume(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}
