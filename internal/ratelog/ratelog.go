// Package ratelog decides when a repeated kind of problem is logged again:
// once per interval per kind, so that bad input never floods the log.
package ratelog

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// MaxKinds bounds the kinds a Limiter remembers. Kinds taken from input (a
// namespace a record names) must not grow it without bound: beyond
// MaxKinds the kind logged least recently is forgotten and may log again
// sooner, at most once per problem of that kind.
const MaxKinds = 1024

// Limiter is safe for concurrent use.
type Limiter[K comparable] struct {
	interval time.Duration
	mu       sync.Mutex
	last     *simplelru.LRU[K, time.Time]
}

// New logs each kind at most once per interval.
func New[K comparable](interval time.Duration) *Limiter[K] {
	last, _ := simplelru.NewLRU[K, time.Time](MaxKinds, nil) // errors only for a size below 1
	return &Limiter[K]{interval: interval, last: last}
}

// Allow reports whether kind may be logged at now, and if so counts it as logged.
func (l *Limiter[K]) Allow(kind K, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.last.Get(kind); ok && now.Sub(at) < l.interval {
		return false
	}
	l.last.Add(kind, now)
	return true
}

// Len is the number of kinds remembered.
func (l *Limiter[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last.Len()
}
