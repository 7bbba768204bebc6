package childproc

import (
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr makes the kernel SIGKILL a child when the thread that started it
// exits, so that no child outlives its parent; and puts the child in its own
// process group, so that a terminal's Ctrl-C reaches the parent only, which
// then stops its children in order (kube-apiserver before etcd).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

var spawner struct {
	once sync.Once
	reqs chan func()
}

// onSpawnThread runs f on one OS thread that lives as long as the process.
// Pdeathsig fires when the parent *thread* exits, and the Go runtime may end a
// thread (when a goroutine exits while locked to it), which would kill a
// child started from it early.
func onSpawnThread(f func()) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread is not reused or ended
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
}
