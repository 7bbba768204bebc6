package engine

import (
	"maps"
	"math"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The totals remember, per Event object a record names (its uid, or its
// namespace and name with a cumulative count), the last cumulative count
// counted, so that a record of a watched Event patched from 3 to 5 counts 2
// occurrences and a resend counts none.
//
// They hold two generations of objects, each of up to totalsPerKey ×
// max_keys objects: a record's object moves to the recent one; when the
// recent one is full, the older one is forgotten and the recent one takes
// its place. So at least the totalsPerKey × max_keys objects seen most
// recently are remembered, exactly. Two Go maps, cleared and reused, rather
// than an LRU: every record of the uid-per-occurrence shape is a new object,
// and an LRU allocates an element for each.
//
// An object not remembered is new (all its occurrences count) or one
// forgotten (only its growth since counts, and that is unknown). It is new
// when nothing was forgotten yet, or when its record states a first
// occurrence later than every forgotten object stated (the same object
// always states the same first time). Otherwise it counts one occurrence: a
// record stands for at least one, so a uid never seen is never taken for a
// repeat, whatever passed before it; exact for a record of one occurrence.
// The price is paid only for objects the totals no longer remember: a
// resend of one without growth counts one too many, and a new object
// stating a count of n with no provable first time counts n-1 too few
// (Stats.Unproven counts such records, Stats.UnprovenOccurrences the n-1).
type totals struct {
	limit         int // objects per generation
	recent, older map[uint64]total
	// forgot: a generation was forgotten; forgotFirst is the latest first
	// occurrence its objects stated (unknownTime: none stated one).
	forgot      bool
	forgotFirst int64
}

type total struct {
	count int64 // the latest cumulative count counted
	first int64 // the object's first occurrence, unix ns; unknownTime when its records do not state it
}

// totalsPerKey is how many objects the totals remember at least, per
// max_keys: a watched Event patched while that many others pass keeps
// counting its growth exactly.
const totalsPerKey = 4

const unknownTime = math.MinInt64

// clockSkew is how far ahead of the engine's clock a forgotten object's
// first time may raise forgotFirst: enough for an API server's clock to run
// ahead of the collector's, while a record stamped years ahead cannot keep
// every later object from being proven new.
const clockSkew = int64(time.Minute)

func newTotals(maxKeys int) totals {
	return totals{limit: totalsPerKey * maxKeys, recent: map[uint64]total{}, older: map[uint64]total{},
		forgotFirst: unknownTime}
}

// Len is the number of objects remembered.
func (m *totals) Len() int { return len(m.recent) + len(m.older) }

// get returns the object's total and where it is: in the recent
// generation, in the older one, or (neither) not remembered.
func (m *totals) get(key uint64) (t total, recent, older bool) {
	if t, recent = m.recent[key]; !recent {
		t, older = m.older[key]
	}
	return t, recent, older
}

// set remembers the object's total (get said where it was) in the recent
// generation, forgetting the older one first if the recent one is full.
func (m *totals) set(key uint64, t total, recent, older bool, now int64) {
	if !recent {
		if older {
			delete(m.older, key)
		}
		if len(m.recent) >= m.limit {
			m.rotate(now)
		}
	}
	m.recent[key] = t
}

// rotate forgets the older generation: only the latest first time its
// objects stated stays, no later than the clock allows. An object whose
// first time is later than that (a node's clock ahead of the collector's)
// is kept instead, in the new recent generation: forgotten, its next
// record would state a first time past every forgotten one and be taken
// for a new object, its whole count counted again. At most half a
// generation is kept so: past that (records stamped far ahead, many), the
// rest is forgotten as any other object.
func (m *totals) rotate(now int64) {
	limit := addCount(now, clockSkew)
	var ahead map[uint64]total
	for key, t := range m.older {
		if t.first > limit && len(ahead) < m.limit/2 {
			if ahead == nil {
				ahead = map[uint64]total{}
			}
			ahead[key] = t
			continue
		}
		m.forgotFirst = max(m.forgotFirst, min(t.first, limit))
		m.forgot = true
	}
	clear(m.older)
	m.recent, m.older = m.older, m.recent
	maps.Copy(m.recent, ahead)
}

// isNew reports whether an object not remembered, whose records state
// first as its first occurrence, is surely not one the totals forgot.
func (m *totals) isNew(first int64) bool {
	return !m.forgot || first != unknownTime && first > m.forgotFirst
}

// occurrences is how many new occurrences ev stands for: 1 for a record
// that names no Event object, else the growth of its cumulative count (see
// totals).
func (e *Engine) occurrences(ev *k8sevent.Event) int64 {
	key, ok := e.objectHash(ev)
	if !ok {
		return 1
	}
	n := ev.Occurrences()
	t, recent, older := e.totals.get(key)
	known := recent || older
	counted := n - t.count
	switch {
	case known && n <= t.count:
		e.Stats.Unchanged++
		return 0
	case known:
	default:
		t.first = unknownTime
		if !ev.EventTime.IsZero() || !ev.FirstTimestamp.IsZero() {
			t.first = ev.FirstTime().UnixNano()
		}
		if !e.totals.isNew(t.first) {
			counted = 1
			e.Stats.Unproven++
			e.Stats.UnprovenOccurrences = addCount(e.Stats.UnprovenOccurrences, n-1)
		}
	}
	t.count = n
	e.totals.set(key, t, recent, older, e.now)
	return counted
}

// objectHash is what the totals know an Event object by: the 64-bit FNV-1a
// hash of its key ("U" and its uid, or "N", its namespace, "/" and its
// name), then of "\x00" and its cluster's name when known (not its uid: see
// clusterFields). Fixed, not seeded: snapshots keep it. Two objects sharing
// it would share a total, and the later one would count only its growth
// past the other's count: fewer occurrences, never more; a sender choosing
// a uid to meet another object's gains nothing it could not get by sending
// that object's uid. ok is false for a record that names no Event object.
// The key is built in e.hashBuf and hashed by e.hash, both reused: no
// allocation per record.
func (e *Engine) objectHash(ev *k8sevent.Event) (h uint64, ok bool) {
	b := e.hashBuf[:0]
	switch {
	case ev.UID != "":
		b = append(append(b, 'U'), ev.UID...)
	case ev.Name != "" && (ev.Count > 0 || ev.SeriesCount > 0):
		b = append(append(append(append(b, 'N'), ev.ObjectNamespace()...), '/'), ev.Name...)
	default:
		return 0, false
	}
	if ev.Cluster.Name != "" {
		b = append(append(b, 0), ev.Cluster.Name...)
	}
	e.hashBuf = b
	e.hash.Reset()
	_, _ = e.hash.Write(b) // never fails
	return e.hash.Sum64(), true
}

// addCount adds occurrences, saturating: a count never wraps negative.
func addCount(count, delta int64) int64 {
	if delta > 0 && count > math.MaxInt64-delta {
		return math.MaxInt64
	}
	return count + delta
}
