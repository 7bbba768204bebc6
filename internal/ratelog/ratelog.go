// Package ratelog decides when a repeated kind of problem is logged again:
// once per interval per kind, so that bad input never floods the log.
package ratelog

import (
	"sync"
	"time"
)

// Limiter is safe for concurrent use.
type Limiter[K comparable] struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[K]time.Time
}

// New logs each kind at most once per interval.
func New[K comparable](interval time.Duration) *Limiter[K] {
	return &Limiter[K]{interval: interval, last: map[K]time.Time{}}
}

// Allow reports whether kind may be logged at now, and if so counts it as logged.
func (l *Limiter[K]) Allow(kind K, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last[kind]) < l.interval {
		return false
	}
	l.last[kind] = now
	return true
}
