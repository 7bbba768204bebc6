package sim

import (
	"sync"
)

// Effects: the steps of a process that the world outside it sees. A crash
// is placed at one of them, before it takes effect or after (it took
// effect, and the process died before it could learn so): that covers
// every moment that matters, since between two effects a process only
// changes its own memory, which a crash loses anyway.
const (
	effectAPI     = "api"     // a request to an API server
	effectStorage = "storage" // a storage batch that writes
	effectSend    = "send"    // a request to another process (tier 1 to tier 2)
	effectAnswer  = "answer"  // the answer to a request another process or an app sent it
)

// crashPoint places a crash at the n-th effect of a kind (1: the first)
// counted from the incarnation's start.
type crashPoint struct {
	kind  string
	n     int
	after bool // after the effect took place, else before
}

// lifeline is one incarnation of a process: alive until it crashes or
// stops, and then every effect it still tries is refused, so its
// goroutines, which run on until they are reaped, change nothing outside.
type lifeline struct {
	mu     sync.Mutex
	dead   bool
	counts map[string]int
	crash  *crashPoint
	onKill func() // the world's note that the process died (called once, without mu)
}

func newLifeline(crash *crashPoint, onKill func()) *lifeline {
	return &lifeline{counts: map[string]int{}, crash: crash, onKill: onKill}
}

func (l *lifeline) ok() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.dead
}

// kill ends the incarnation; it reports whether it was alive.
func (l *lifeline) kill() bool {
	l.mu.Lock()
	was := !l.dead
	l.dead = true
	l.mu.Unlock()
	if was && l.onKill != nil {
		l.onKill()
	}
	return was
}

// before is called before an effect of kind: false means the process is
// dead (it crashed just now, or earlier) and the effect must not happen.
// The effect's number is returned for after.
func (l *lifeline) before(kind string) (n int, alive bool) {
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return 0, false
	}
	l.counts[kind]++
	n = l.counts[kind]
	hit := l.crash != nil && !l.crash.after && l.crash.kind == kind && l.crash.n == n
	l.mu.Unlock()
	if hit {
		l.kill()
		return n, false
	}
	return n, true
}

// after is called once effect n of kind took place: false means the
// process died meanwhile or dies now, and must not learn the outcome.
func (l *lifeline) after(kind string, n int) bool {
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return false
	}
	hit := l.crash != nil && l.crash.after && l.crash.kind == kind && l.crash.n == n
	l.mu.Unlock()
	if hit {
		l.kill()
		return false
	}
	return true
}

// arm places a crash at the n-th effect of kind from now on (n >= 1).
func (l *lifeline) arm(kind string, n int, after bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.crash = &crashPoint{kind: kind, n: l.counts[kind] + n, after: after}
}

// disarm removes a crash point not reached yet.
func (l *lifeline) disarm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.crash = nil
}
