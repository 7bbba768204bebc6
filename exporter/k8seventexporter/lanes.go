package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"slices"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// pending is one prepared record waiting in its namespace's lane.
type pending struct {
	ev   k8sevent.Event // prepared for the API
	name string         // the record's name before a rename (for the log)
	b    *batch         // the push that waits for it
	idx  int            // its index in that push
}

// lane is one namespace's records, first in first out. When its head's
// write fails, the head stays and the lane waits until retryAt: a later
// record of the same object never overtakes it.
type lane struct {
	ns       string
	q        []*pending
	attempts int       // failed attempts of the head
	retryAt  time.Time // the head is not tried again before
	lastErr  error     // the head's last failure
}

// lanes decides which record is written next: the lanes with work take
// turns, one record each, so a flood in one namespace delays another
// namespace's record by at most one write per busy namespace. Pure: no
// goroutines, no clock (the caller passes now), one record in flight.
type lanes struct {
	byNS map[string]*lane
	ring []*lane  // lanes with records, in turn order
	next int      // index in ring of the lane whose turn is next
	busy *pending // the record being written; its lane is skipped until it resolves
}

func newLanes() *lanes { return &lanes{byNS: map[string]*lane{}} }

// add appends records to their namespaces' lanes, in order.
func (l *lanes) add(ps ...*pending) {
	for _, p := range ps {
		ns := p.ev.ObjectNamespace()
		ln := l.byNS[ns]
		if ln == nil {
			ln = &lane{ns: ns}
			l.byNS[ns] = ln
			l.ring = append(l.ring, ln)
		}
		ln.q = append(ln.q, p)
	}
}

// take returns the next record to write, in turn order among the lanes
// that are not waiting for a retry, and marks it in flight. With none
// ready it returns nil and the earliest time one will be (zero: no work).
func (l *lanes) take(now time.Time) (*pending, time.Time) {
	if l.busy != nil {
		return nil, time.Time{}
	}
	var wake time.Time
	for i := range l.ring {
		at := (l.next + i) % len(l.ring)
		ln := l.ring[at]
		if ln.retryAt.After(now) {
			if wake.IsZero() || ln.retryAt.Before(wake) {
				wake = ln.retryAt
			}
			continue
		}
		l.next = (at + 1) % len(l.ring)
		l.busy = ln.q[0]
		return l.busy, time.Time{}
	}
	return nil, wake
}

// done removes the record in flight: written, or given up.
func (l *lanes) done(p *pending) {
	if l.busy == p {
		l.busy = nil
	}
	ln := l.byNS[p.ev.ObjectNamespace()]
	if ln == nil || len(ln.q) == 0 || ln.q[0] != p {
		return
	}
	ln.q[0] = nil
	ln.q = ln.q[1:]
	ln.attempts, ln.retryAt, ln.lastErr = 0, time.Time{}, nil
	l.dropIfEmpty(ln)
}

// failed notes that the write of the record in flight failed with err: it
// stays at the head of its lane until now+delay(attempt), however long it
// has been failing. A record is never given up for time alone: its
// occurrences would be lost, and nothing later carries them when it is its
// series' last record.
func (l *lanes) failed(p *pending, err error, now time.Time, delay func(attempt int) time.Duration) {
	l.busy = nil
	ln := l.byNS[p.ev.ObjectNamespace()]
	ln.attempts++
	ln.lastErr = err
	ln.retryAt = now.Add(delay(ln.attempts))
}

// waiting removes and returns the heads that wait for a retry (shutdown:
// nothing waits any more), with the error each last failed with.
func (l *lanes) waiting() ([]*pending, []error) {
	var ps []*pending
	var errs []error
	for _, ln := range slices.Clone(l.ring) {
		if ln.attempts > 0 && l.busy != ln.q[0] {
			p, err := ln.q[0], ln.lastErr
			l.done(p)
			ps, errs = append(ps, p), append(errs, err)
		}
	}
	return ps, errs
}

// withdraw removes the records of b that are not in flight (its caller
// gave up waiting) and returns them.
func (l *lanes) withdraw(b *batch) []*pending {
	var out []*pending
	for _, ln := range slices.Clone(l.ring) {
		head := ln.q[0]
		ln.q = slices.DeleteFunc(ln.q, func(p *pending) bool {
			if p.b == b && p != l.busy {
				out = append(out, p)
				return true
			}
			return false
		})
		if len(ln.q) == 0 || ln.q[0] != head {
			ln.attempts, ln.retryAt, ln.lastErr = 0, time.Time{}, nil
		}
		l.dropIfEmpty(ln)
	}
	return out
}

// idle removes and returns every record but the one in flight (shutdown
// with a persistent queue: they are written at the next start).
func (l *lanes) idle() []*pending {
	var out []*pending
	for _, ln := range slices.Clone(l.ring) {
		keep := ln.q[:0]
		for _, p := range ln.q {
			if p == l.busy {
				keep = append(keep, p)
			} else {
				out = append(out, p)
			}
		}
		clear(ln.q[len(keep):])
		ln.q = keep
		ln.attempts, ln.retryAt, ln.lastErr = 0, time.Time{}, nil
		l.dropIfEmpty(ln)
	}
	return out
}

// drain removes and returns every record (the writer stops).
func (l *lanes) drain() []*pending {
	var out []*pending
	for _, ln := range l.ring {
		out = append(out, ln.q...)
	}
	l.byNS, l.ring, l.next, l.busy = map[string]*lane{}, nil, 0, nil
	return out
}

func (l *lanes) dropIfEmpty(ln *lane) {
	if len(ln.q) > 0 {
		return
	}
	delete(l.byNS, ln.ns)
	i := slices.Index(l.ring, ln)
	l.ring = slices.Delete(l.ring, i, i+1)
	if i < l.next {
		l.next--
	}
	if l.next >= len(l.ring) {
		l.next = 0
	}
}
