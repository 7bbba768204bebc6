// Package engine decides what the eventseries processor emits: series
// (events.k8s.io/v1) or legacy compression and aggregation (core/v1), the
// spam filter, and the timers behind them. It is pure: no pdata, no
// goroutines, no clock of its own; every call says what time it is.
package engine

import (
	"fmt"
	"hash"
	"hash/fnv"
	"slices"
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
	// Otherwise Event is the Event of the state the record writes (see
	// state.ev).
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
	// Unproven counts records of an Event object the totals do not
	// remember and cannot prove new, counted as one occurrence each;
	// UnprovenOccurrences is what they stated beyond it (see totals).
	Unproven            int64
	UnprovenOccurrences int64
	// RestoreDropped counts entries of a restored state that did not fit in
	// max_keys, least recently used first (their series end as evictions).
	RestoreDropped int64
	// Unfiltered counts records written without a token: ends of series,
	// summaries, last counts that found no token, evictions, shutdown;
	// OutUnfiltered the same by kind (each at most Out's).
	Unfiltered    int64
	OutUnfiltered [numKinds]int64
	// Folded counts occurrences of events no record showed, added to the
	// summary of their aggregate key when they ended.
	Folded int64
}

// Engine holds the caches. Not safe for concurrent use.
type Engine struct {
	cfg        Config
	series     layout // how a series (or legacy event) key is read from an Event
	spamLayout layout // how a spam-filter key is read from an Event
	states     *cache[*state]
	aggs       *cache[*aggregate]
	spam       *cache[*bucket]
	totals     totals
	due        deadlines
	// Keys being built: one per cache, as building a spam key (emit) may
	// push a state out whose release builds another.
	buf, spamBuf, aggBuf []byte
	hash                 hash.Hash64 // FNV-1a, for objectHash
	hashBuf              []byte      // the key objectHash hashes
	// own is the Event a new state is made of while its strings are copied
	// (newState); ownStrs points at its strings.
	own        k8sevent.Event
	ownStrs    []*string
	now        int64
	statesMade uint64 // states made: part of each name, so that a name is never reused
	out        []Emission
	pending    int // emissions of a restore, returned by the next call
	Stats      Stats
}

// New makes an engine; cfg must be valid.
func New(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg, series: seriesLayout(cfg.KeyIncludesResourceVersion), hash: fnv.New64a()}
	e.ownStrs = stringsOf(&e.own)
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
	if !slices.Contains(cfg.SpamKey, "source") {
		// The reporter is always a part: behind the OTLP receiver it is the
		// client and the namespace it was authorized for, and no client may
		// spend another's tokens.
		spamFields = append(spamFields, fController, fInstance)
	}
	e.spamLayout = newLayout('P', append(spamFields, clusterFields...)...) // one filter per cluster, as each has its own recorders
	if err := e.reset(); err != nil {
		return nil, err
	}
	return e, nil
}

// reset empties the caches and the clock, as New leaves them; Stats stay.
func (e *Engine) reset() error {
	var err error
	if e.states, err = newCache(e.cfg.MaxKeys, e.evicted); err != nil {
		return err
	}
	if e.aggs, err = newCache[*aggregate](e.cfg.MaxKeys, nil); err != nil {
		return err
	}
	if e.spam, err = newCache[*bucket](e.cfg.MaxKeys, nil); err != nil {
		return err
	}
	e.totals = newTotals(e.cfg.MaxKeys)
	e.due, e.now, e.statesMade = nil, 0, 0
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

// begin starts the emissions of a call: those a restore left, if any.
func (e *Engine) begin() {
	e.out, e.pending = e.out[:e.pending], 0
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
	for _, st := range e.states.values() {
		if !st.visible && !isSummary(st) && st.count > 0 {
			e.retire(st)
			e.fold(st)
		}
	}
	for _, st := range e.states.values() {
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

// emit appends a record of st; filtered ones pass the spam filter first.
// input is the record being observed, nil for timer records, which carry
// st's Event.
func (e *Engine) emit(st *state, kind int, input *k8sevent.Event, filtered bool) bool {
	em := Emission{FromInput: input != nil, Kind: kind, Name: st.name, Count: st.count, New: st.count - st.emitted,
		First: st.first, Last: st.last, Aggregated: st.aggregated, At: e.now}
	ev := input
	if input == nil {
		em.Event = st.ev.Event()
		ev = &em.Event
	}
	if filtered && !e.allow(ev, st, input != nil && kind == KindLegacy && st.visible) {
		e.Stats.SpamDropped++
		return false
	}
	if !filtered {
		e.Stats.Unfiltered++
		e.Stats.OutUnfiltered[kind]++
	}
	if st.aggregated {
		em.Note = AggregatePrefix + ev.Note
	}
	e.out = append(e.out, em)
	e.Stats.Out[kind]++
	st.visible = true
	st.emitted = st.count
	return true
}
