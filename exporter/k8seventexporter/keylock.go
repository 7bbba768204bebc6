package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import "sync"

// keyLocks serialises the writes of one Event object: the check of what
// was written and the write itself must not interleave with another write
// of the same object (two pipelines into one exporter, the queue off),
// while writes of different objects go on in parallel.
type keyLocks struct {
	mu    sync.Mutex // guards locks; held only to find or drop an entry
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int // holders and waiters; the entry is dropped at 0
}

// lock blocks until key is free and returns its unlock.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()

	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
