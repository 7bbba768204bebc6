package engine

import (
	"math"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The totals cache remembers, per Event object (uid, or namespace/name with
// a cumulative count), the last cumulative count counted, so that a record
// of a watched Event patched from 3 to 5 counts 2 occurrences. It holds
// max_keys objects; the least recently seen is forgotten first.
//
// Forgetting must never make the engine count an occurrence twice. A record
// of an object the cache does not hold is either the first of a new object
// (all its occurrences are new) or one of an object it forgot (only the
// growth since it was forgotten is new, and that is unknown). The engine
// remembers which objects it forgot in a Bloom filter of 4 × max_keys
// objects (forgotten), and keeps a horizon of those the filter dropped in
// turn (their latest first-occurrence time) and of all it forgot (their
// latest occurrence time). Then:
//
//   - an object not in the filter whose Event was first observed after
//     every object dropped from it (eventTime or firstTimestamp later than
//     the horizon's first: the same object always states the same first
//     time, so it cannot be one of them), or with nothing dropped yet, is
//     new: all its occurrences count, exact;
//   - else its latest occurrence is after every occurrence counted of a
//     forgotten object: that occurrence at least is new, it counts 1;
//   - else it counts 0.
//
// The bound on error: counts never exceed the occurrences (for records that
// state their times honestly), and they are exact for every record whose
// object is in the cache, and for an object seen for the first time unless
// the filter mistakes it for a forgotten one (about 1 in 1,000 per full
// generation, 2 in 1,000 with both full) or more than 4 × max_keys objects were forgotten since
// an object first observed later than it. In particular the error is 0
// while the Event objects seen fit in max_keys, and while each changing
// Event sees fewer than max_keys other objects between two of its changes
// (the cache is an LRU). Otherwise a record counts at most 1, and
// Stats.UnprovenOccurrences adds what it stated beyond what was counted:
// the most the counts may be short by. An upgrade from a snapshot before
// version 6 (another hash) keeps this: see upgrade.
type total struct {
	count int64 // the latest cumulative count counted
	first int64 // the Event's first occurrence, unix ns; unknownTime when its records do not state it
	last  int64 // the latest occurrence its records showed
	// oldHash: restored from a snapshot before version 6, it is held
	// under fnvObjectHash until its object comes back (see upgrade).
	oldHash bool
}

// horizon is what the engine knows of the objects the totals cache forgot.
type horizon struct {
	any   bool  // an object was dropped from the filter of forgotten ones
	first int64 // the latest stated first occurrence among those (unknownTime: none)
	last  int64 // the latest occurrence among all forgotten (unknownTime: none)
}

const unknownTime = math.MinInt64

// clockSkew is how far ahead of the engine's clock a forgotten object's
// times may raise the horizon: enough for an API server's clock to run
// ahead of the collector's, while a record stamped years ahead cannot make
// every later object look forgotten.
const clockSkew = int64(time.Minute)

// occurrences is how many new occurrences ev stands for: 1 for a record
// that names no Event object, else the growth of its cumulative count (see
// total).
func (e *Engine) occurrences(ev *k8sevent.Event) int64 {
	key, ok := objectHash(ev)
	if !ok {
		return 1
	}
	n := ev.Occurrences()
	last := ev.LatestTime()
	if last.IsZero() {
		last = ev.Time
	}
	t, ok := e.totals.get(key)
	if !ok && e.oldTotals > 0 {
		t, ok = e.upgrade(ev, key)
	}
	if ok {
		t.last = max(t.last, last.UnixNano())
		if n <= t.count {
			e.Stats.Unchanged++
			return 0
		}
		delta := n - t.count
		t.count = n
		return delta
	}
	nt := total{count: n, first: unknownTime, last: last.UnixNano()}
	if !ev.EventTime.IsZero() || !ev.FirstTimestamp.IsZero() {
		nt.first = ev.FirstTime().UnixNano()
	}
	counted := e.provable(key, &nt)
	e.totals.add(key, nt)
	return counted
}

// upgrade finds the total of ev's object, not held under its hash, under
// the hash a snapshot before version 6 knew it by (fnvObjectHash), and
// moves it to its hash: an upgrade keeps counting a watched Event from
// where it was. Only while such totals remain (oldTotals).
func (e *Engine) upgrade(ev *k8sevent.Event, key uint64) (*total, bool) {
	old := fnvObjectHash(ev)
	t, ok := e.totals.get(old)
	if !ok || !t.oldHash {
		return nil, false
	}
	t.oldHash = false
	e.oldTotals--
	return e.totals.rekey(old, key), true
}

// provable is how many of the occurrences of an object not in the cache
// are surely not counted yet.
func (e *Engine) provable(key uint64, t *total) int64 {
	var counted int64
	switch {
	case (!e.forgot.any || (t.first != unknownTime && t.first > e.forgot.first)) && !e.filter.has(key):
		return t.count
	case t.last > e.forgot.last:
		counted = 1
	}
	e.Stats.Unproven++
	e.Stats.UnprovenOccurrences = addCount(e.Stats.UnprovenOccurrences, t.count-counted)
	return counted
}

// forget moves an object the totals cache pushes out into the horizon.
// One held under its old hash (see upgrade) goes straight into the
// horizon's part known only by times: the filter is asked by today's hash.
func (e *Engine) forget(key uint64, t *total) {
	limit := addCount(e.now, clockSkew)
	first := t.first
	if first != unknownTime {
		first = min(first, limit)
	}
	if t.oldHash {
		e.oldTotals--
		e.forgot.any, e.forgot.first = true, max(e.forgot.first, first)
	} else {
		e.filter.add(key, first, &e.forgot)
	}
	e.forgot.last = max(e.forgot.last, min(t.last, limit))
}

// addCount adds occurrences, saturating: a count never wraps negative.
func addCount(count, delta int64) int64 {
	if delta > 0 && count > math.MaxInt64-delta {
		return math.MaxInt64
	}
	return count + delta
}
