// Package engine decides what the eventseries processor emits: series
// (events.k8s.io/v1) or legacy compression and aggregation (core/v1), the
// spam filter, and the timers behind them. It is pure: no pdata, no
// goroutines, no clock of its own; every call says what time it is.
package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Config is what the engine needs of the processor's configuration.
type Config struct {
	Legacy                     bool
	MaxKeys                    int
	FinishAfter                time.Duration
	HeartbeatInterval          time.Duration
	KeyIncludesResourceVersion bool
	Aggregation                bool
	AggregateMaxEvents         int
	AggregateMaxInterval       time.Duration
	SpamFilter                 bool
	SpamQPS                    float64
	SpamBurst                  int
	SpamKey                    []string // of "source", "object", "type", "reason"
	// FinishMarker: series mode ends every visible series with a finished
	// record, even one that changes nothing (the count already written).
	FinishMarker bool
}

// Kinds of emitted records; KindLegacy is a count update in legacy mode.
const (
	KindSingleton = iota
	KindStarted
	KindOngoing
	KindFinished
	KindLegacy
	numKinds
)

// KindNames are the series states of the kinds, "" for legacy.
var KindNames = [numKinds]string{k8sevent.StateSingleton, k8sevent.StateStarted,
	k8sevent.StateOngoing, k8sevent.StateFinished, ""}

// Emission is one record to emit.
type Emission struct {
	// FromInput: the record is the input record just observed, annotated.
	// Observe returns at most one such emission (the shell moves the input
	// record into it).
	// Otherwise Event holds the rebuilt Event (its strings are only valid
	// until the engine is called again).
	FromInput bool
	Event     k8sevent.Event
	Kind      int
	Name      string // the Event object this record writes
	Count     int64  // occurrences so far
	// New is what Count grew by since the previous record of this Event
	// object (0 for a record that only repeats it): summed over every
	// emission, the occurrences observed.
	New        int64
	First      int64 // first and latest occurrence, unix ns
	Last       int64
	Aggregated bool
	Note       string // replaces the note when set (aggregated events)
	At         int64  // when the decision was taken, unix ns
}

// Stats counts what the engine did since it was made.
type Stats struct {
	Occurrences    int64
	Out            [numKinds]int64
	Compressed     int64 // occurrences folded into a count without a record of their own
	SpamDropped    int64 // records the spam filter held back
	SeriesStarted  int64
	SeriesFinished int64
	Heartbeats     int64
	Evictions      int64 // states pushed out of a full cache (or of a restored state over max_keys)
	// Unchanged counts records of a known Event object whose cumulative
	// count did not grow (a relist, a resend, an update of another field):
	// nothing to count.
	Unchanged int64
	// Unproven counts records of an Event object the totals cache may have
	// forgotten, counted as at most one occurrence; UnprovenOccurrences is
	// what they stated beyond what was counted: the most the counts may be
	// short by (see total).
	Unproven            int64
	UnprovenOccurrences int64
	// RestoreDropped counts entries of a restored state that did not fit in
	// max_keys, least recently used first (their series end as evictions).
	RestoreDropped int64
	// Unfiltered counts records written without a token: ends of series,
	// summaries, last counts that found no token, evictions, shutdown.
	Unfiltered int64
	// Folded counts occurrences of events no record showed, added to the
	// summary of their aggregate key when they ended.
	Folded int64
}

type state struct {
	packed   string // layout-packed Event; its first keyLen bytes are the cache key
	keyLen   int
	name     string
	note     string // the latest occurrence's note: timer records carry it (packed holds the first's)
	count    int64  // occurrences
	emitted  int64  // count of the last emitted record
	first    int64  // first and latest occurrence (record time), unix ns
	last     int64
	seenAt   int64 // engine time of the latest occurrence: idle timers run from it
	nextBeat int64

	deadline int64
	heapIdx  int

	visible    bool // a record of it went out
	started    bool // a series record (count >= 2) went out
	aggregated bool
	leaving    bool // removed on purpose: no eviction record
	inBucket   bool // legacy: counted in its spam bucket's events

	bucket    *bucket // its spam bucket, while bucket.gen is bucketGen (see bucketOf)
	bucketGen uint32
	agg       *aggregate // legacy: its aggregation group, while agg.gen is aggGen (see aggregateOf)
	aggGen    uint32
}

// Engine holds the caches. Not safe for concurrent use.
type Engine struct {
	cfg        Config
	series     layout // how a series (or legacy event) key is read from an Event
	spamLayout layout // how a spam-filter key is read from an Event
	states     *lru[*state]
	aggs       *lru[*aggregate]
	spam       *lru[*bucket]
	totals     *totalTable
	forgot     horizon   // of the objects the totals cache forgot
	filter     forgotten // which objects it forgot, for a while
	oldTotals  int       // totals held under the hash of a snapshot before version 6 (see upgrade)
	due        deadlines
	buf        []byte
	numBuf     []byte // the count of states made, in decimal (see madeDigits)
	numOf      uint64 // the count numBuf holds
	spamBuf    []byte
	aggBuf     []byte
	scratch    k8sevent.Event // an Event rebuilt from a state, for a moment
	now        int64
	statesMade uint64 // states made: part of each name, so that a name is never reused
	snapSize   int    // of the last snapshot
	// spamCovered, by layout tag: its key holds every field of the spam
	// key, so a state of it has one spam bucket (see bucketOf).
	spamCovered [128]bool
	out         []Emission
	pending     int // emissions of a restore, returned by the next call
	statePool   pool[state]
	bucketPool  pool[bucket]
	aggPool     pool[aggregate]
	Stats       Stats
	// byKey: tests only, the reference for the shortcuts that skip a key
	// build: find the spam bucket of a state that leaves by its key.
	byKey bool
}

// New makes an engine; cfg must be valid.
func New(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg, series: seriesLayout(cfg.KeyIncludesResourceVersion),
		statePool: pool[state]{empty: emptyState}, bucketPool: pool[bucket]{empty: emptyBucket},
		aggPool: pool[aggregate]{empty: emptyAggregate}}
	var spamFields []field
	for _, part := range cfg.SpamKey {
		switch part {
		case "source":
			spamFields = append(spamFields, fSourceComponent, fSourceHost, fController, fInstance)
		case "object":
			spamFields = append(spamFields, fRegKind, fRegNamespace, fRegName, fRegUID, fRegAPIVersion)
		case "type":
			spamFields = append(spamFields, fType)
		case "reason":
			spamFields = append(spamFields, fReason)
		default:
			return nil, fmt.Errorf("unknown spam key part %q", part)
		}
	}
	e.spamLayout = newLayout('P', append(spamFields, clusterFields...)...) // one filter per cluster, as each has its own recorders
	for _, l := range []*layout{&e.series, &identicalLayout, &aggregateLayout} {
		e.spamCovered[l.tag] = l.covers(&e.spamLayout)
	}
	if err := e.reset(); err != nil {
		return nil, err
	}
	return e, nil
}

// reset empties the caches and the clock, as New leaves them; Stats stay.
func (e *Engine) reset() error {
	var err error
	if e.states, err = newLRU(e.cfg.MaxKeys, e.evicted); err != nil {
		return err
	}
	if e.aggs, err = newLRU(e.cfg.MaxKeys, func(_ string, a *aggregate) { a.gen++; e.aggPool.put(a) }); err != nil {
		return err
	}
	if e.spam, err = newLRU(e.cfg.MaxKeys, func(_ string, b *bucket) { b.gen++; e.bucketPool.put(b) }); err != nil {
		return err
	}
	e.totals = newTotalTable(e.cfg.MaxKeys, e.forget)
	e.oldTotals = 0
	e.due, e.now, e.statesMade = nil, 0, 0
	e.forgot = horizon{first: unknownTime, last: unknownTime}
	e.filter = newForgotten(e.cfg.MaxKeys)
	e.out, e.pending = e.out[:0], 0
	return nil
}

// Observe counts the occurrence(s) ev stands for at engine time now, after
// firing every timer due by now. ev's strings are not retained.
func (e *Engine) Observe(ev *k8sevent.Event, now int64) []Emission {
	e.begin()
	e.advance(now)
	delta := e.occurrences(ev)
	if delta == 0 {
		return e.out
	}
	e.Stats.Occurrences = addCount(e.Stats.Occurrences, delta)
	t := ev.Time.UnixNano()
	if e.cfg.Legacy {
		e.observeLegacy(ev, delta, t)
	} else {
		e.observeSeries(ev, delta, t)
	}
	return e.out
}

// Advance fires every timer due by now.
func (e *Engine) Advance(now int64) []Emission {
	e.begin()
	e.advance(now)
	return e.out
}

// begin starts the emissions of a call: those a restore left, if any. What
// the caches pushed out in earlier calls is free for reuse.
func (e *Engine) begin() {
	e.out, e.pending = e.out[:e.pending], 0
	if len(e.statePool.pending)+len(e.bucketPool.pending)+len(e.aggPool.pending) > 0 { // most calls push nothing out
		e.statePool.settle()
		e.bucketPool.settle()
		e.aggPool.settle()
	}
}

// NextDeadline is when Advance next has something to do.
func (e *Engine) NextDeadline() (int64, bool) {
	if e.pending > 0 {
		return e.now, true
	}
	if st := e.due.peek(); st != nil {
		return st.deadline, true
	}
	return 0, false
}

// Flush emits, unfiltered, every count not yet written, oldest first, so
// that nothing counted is lost at shutdown: the current state of every
// visible event or series whose count grew since its last record, and the
// summaries that hold the occurrences of events no record showed (those
// events are folded into them first, and forgotten). The caches are kept.
func (e *Engine) Flush(now int64) []Emission {
	e.begin()
	e.advance(now)
	for _, st := range e.states.Values() {
		if !st.visible && !isSummary(st) && st.count > 0 {
			e.retire(st)
			e.fold(st)
		}
	}
	for _, st := range e.states.Values() {
		if st.count <= st.emitted {
			continue
		}
		switch {
		case e.cfg.Legacy:
			if !e.emit(st, KindLegacy, nil, true) { // a kept token, if any
				e.emit(st, KindLegacy, nil, false)
			}
		case st.count >= 2:
			e.emit(st, KindOngoing, nil, false)
		default: // a summary of one occurrence
			e.emit(st, KindSingleton, nil, false)
		}
	}
	return e.out
}

// Len is the number of open series (legacy: remembered events).
func (e *Engine) Len() int { return e.states.Len() }

// Now is the engine time: the latest time it was told.
func (e *Engine) Now() int64 { return e.now }

func (e *Engine) observeSeries(ev *k8sevent.Event, delta, t int64) {
	e.buf = e.series.appendKey(e.buf[:0], ev)
	st, h, ok := e.states.getHash(borrow(e.buf))
	if !ok {
		st = e.newState(&e.series, ev, t, h)
		e.due.schedule(st, e.now+int64(e.cfg.FinishAfter))
	} else {
		e.touch(st, ev, t)
	}
	before := st.count
	st.count = addCount(st.count, delta)
	if before < 2 && st.count >= 2 {
		e.Stats.SeriesStarted++
	}
	if st.started {
		e.Stats.Compressed = addCount(e.Stats.Compressed, delta)
		return
	}
	if st.count < 2 {
		e.emit(st, KindSingleton, ev, true)
		return
	}
	if e.emit(st, KindStarted, ev, true) {
		st.started = true
		st.nextBeat = e.now + int64(e.cfg.HeartbeatInterval)
		e.due.schedule(st, st.nextBeat) // a heartbeat_interval under finish_after comes first
	}
}

// newState adds a state for ev, whose key (not held, of hash h) e.buf holds.
// The packed Event and the name are one allocation: the name follows the
// packing in e.buf, then one string holds both (~250 instructions and an
// allocation per new series less than a string each).
func (e *Engine) newState(l *layout, ev *k8sevent.Event, t int64, h uint64) *state {
	keyLen := len(e.buf)
	e.buf = l.appendRest(e.buf, ev)
	packedLen := len(e.buf)
	e.statesMade++
	// The name hashes the key (less empty cluster fields, see nameKey)
	// and the count of states made, joined by the hash, not in a string.
	e.madeDigits()
	e.buf = slices.Grow(e.buf, len(ev.Regarding.Name)+64) // the name cannot move the key it reads
	e.buf = append(e.buf, k8sevent.GenerateName(ev.Regarding.Name, time.Unix(0, t),
		nameKey(borrow(e.buf[:keyLen]))+string(e.numBuf))...)
	all := string(e.buf)
	packed := all[:packedLen]
	st := e.statePool.get()
	*st = state{packed: packed, keyLen: keyLen, heapIdx: -1, first: t, last: t, seenAt: e.now,
		note: l.note(packed, ev), name: all[packedLen:]}
	e.states.insert(packed[:keyLen], h, st)
	return st
}

// madeDigits puts e.statesMade in decimal into e.numBuf: one more than
// the count it holds by a step of its last digits (formatting it cost a
// new state ~130 instructions), any other count (a restore, a reset) by
// strconv.
func (e *Engine) madeDigits() {
	if e.numOf+1 == e.statesMade && len(e.numBuf) > 0 {
		i := len(e.numBuf) - 1
		for ; i >= 0 && e.numBuf[i] == '9'; i-- {
			e.numBuf[i] = '0'
		}
		if i >= 0 { // else every digit was a 9: one more digit
			e.numBuf[i]++
			e.numOf = e.statesMade
			return
		}
	}
	e.numBuf = strconv.AppendUint(e.numBuf[:0], e.statesMade, 10)
	e.numOf = e.statesMade
}

func (e *Engine) touch(st *state, ev *k8sevent.Event, t int64) {
	st.last = max(st.last, t)
	st.seenAt = e.now
	if ev.Note != st.note {
		st.note = strings.Clone(ev.Note) // only when it changes: the hot path repeats one note
	}
}

// emit appends a record of st; filtered ones pass the spam filter first.
// input is the record being observed, nil for timer records. The record
// is made in its place in e.out (an Emission is ~500 bytes: copying one
// cost a tenth of a new series); an input record the filter holds back
// is not made at all (most records of a storm), a timer record is taken
// back (the filter reads the Event rebuilt in it).
func (e *Engine) emit(st *state, kind int, input *k8sevent.Event, filtered bool) bool {
	if input != nil && filtered && !e.allow(input, st, kind == KindLegacy && st.visible) {
		e.Stats.SpamDropped++
		return false
	}
	n := len(e.out)
	if n < cap(e.out) {
		e.out = e.out[:n+1]
	} else {
		e.out = append(e.out, Emission{})
	}
	// Field by field: a composite literal was built on the stack and
	// copied in (~500 bytes twice). Every field is set (TestEmitSetsEveryField).
	em := &e.out[n]
	em.Event = k8sevent.Event{}
	em.FromInput, em.Kind, em.Name, em.Count, em.New = input != nil, kind, st.name, st.count, st.count-st.emitted
	em.First, em.Last, em.Aggregated, em.Note, em.At = st.first, st.last, st.aggregated, "", e.now
	ev := input
	if input == nil {
		layoutOf(st, &e.series).unpack(st.packed, &em.Event)
		em.Event.Note = st.note
		ev = &em.Event
		if filtered && !e.allow(ev, st, false) {
			e.Stats.SpamDropped++
			e.out = e.out[:n]
			return false
		}
	}
	if !filtered {
		e.Stats.Unfiltered++
	}
	if st.aggregated {
		em.Note = AggregatePrefix + ev.Note
	}
	e.Stats.Out[kind]++
	st.visible = true
	st.emitted = st.count
	return true
}

func layoutOf(st *state, series *layout) *layout {
	switch st.packed[0] {
	case identicalLayout.tag:
		return &identicalLayout
	case aggregateLayout.tag:
		return &aggregateLayout
	default:
		return series
	}
}
