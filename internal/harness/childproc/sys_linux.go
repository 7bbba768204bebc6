package childproc

import (
	"os"
	"path/filepath"
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

// spawner is the OS thread children are started from, kept while any child
// it started lives. Pdeathsig fires when the parent *thread* exits, and the Go
// runtime ends a thread when a goroutine locked to it exits, which would kill
// a child started from it early; with no child left, its end harms nothing,
// so a test binary whose children were all stopped has no goroutine left
// behind (the components' goleak checks need no exception for it).
var spawner struct {
	mu   sync.Mutex
	reqs chan func() // nil while no child lives
	live int         // children started and not yet exited
}

// onSpawnThread runs f on the spawner thread, starting it if needed; f's
// child counts as live until release is called.
func onSpawnThread(f func()) (release func()) {
	spawner.mu.Lock()
	if spawner.reqs == nil {
		reqs := make(chan func())
		spawner.reqs = reqs
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			for f := range reqs {
				f()
			}
		}()
	}
	spawner.live++
	reqs := spawner.reqs
	spawner.mu.Unlock()

	done := make(chan struct{})
	reqs <- func() {
		defer close(done)
		f()
	}
	<-done
	return releaseSpawnThread
}

func releaseSpawnThread() {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	if spawner.live--; spawner.live == 0 {
		close(spawner.reqs)
		spawner.reqs = nil
	}
}

// lockFile creates path (and its directory) and takes an exclusive lock on
// it without waiting. locked is false if another process holds it; f is the
// open file to keep while the lock is wanted (nil if none).
func lockFile(path string) (f *os.File, locked bool) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, true
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, true // cannot lock here: the process-wide reservation stays
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}
