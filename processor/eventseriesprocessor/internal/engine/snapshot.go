package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The snapshot encoding. Varints are encoding/binary's, strings are
// length-prefixed; every cache is listed least recently used first:
//
//	magic, version
//	flags (legacy, series key with resourceVersion), spam key, now, made,
//	         heartbeat_interval (ns)
//	states:  count, then each: packed Event, name, count, emitted, first,
//	         last, seenAt, nextBeat, deadline, heap index (-1: none), flags
//	         (visible, started, aggregated, latest note differs from the
//	         packed one, counted in its bucket's events), then that note if
//	         it differs
//	groups:  count, then each: key, last, notes (count, then each)
//	buckets: count, then each: key, tokens (float64 bits), last allowed,
//	         events (legacy: events of the key already written)
//	totals:  flags (a generation was forgotten), first time forgotten, then
//	         the recent and the older generation: count, then each by
//	         ascending key hash (uint64, see objectHash): count, first
//
// There is one version: a snapshot of another is refused, and the
// processor starts empty (see Restore).
//
// Deadlines and heap positions are kept rather than recomputed: a state's
// deadline may be earlier than its real one (see deadlines), and states
// that come due in one Advance fire in the heap's order, ties included.
// Only the same heap gives the same emissions as an engine that never
// stopped. A configuration with shorter timers moves deadlines earlier on
// restore (retime).
const (
	snapshotMagic   = "eventseries.engine"
	snapshotVersion = 8
)

// SnapshotVersion is the format Snapshot writes.
const SnapshotVersion = snapshotVersion

// ErrSnapshotVersion: Restore refused a snapshot of another version.
var ErrSnapshotVersion = errors.New("snapshot of another version")

const (
	noteDiffers  = 8  // state flag: the latest note follows
	inBucketFlag = 16 // state flag: counted in its spam bucket's events
)

// Snapshot encodes the state of the engine, so that Restore on a new engine
// continues exactly where this one is. Stats are not in it: they count what
// one process did, and the processor reports them as such.
func (e *Engine) Snapshot() []byte {
	w := &writer{}
	w.str(snapshotMagic)
	w.uint(snapshotVersion)
	w.flags(e.cfg.Legacy, e.cfg.KeyIncludesResourceVersion)
	w.str(e.spamKey())
	w.int(e.now)
	w.uint(e.statesMade)
	w.int(int64(e.cfg.HeartbeatInterval))

	states := e.states.values()
	w.uint(uint64(len(states)))
	var packed []byte
	for _, st := range states {
		packed = v8Pack(packed[:0], st.l, &st.ev) // with the latest note
		w.uint(uint64(len(packed)))
		w.b = append(w.b, packed...)
		w.str(st.name)
		for _, v := range [...]int64{st.count, st.emitted, st.first, st.last, st.seenAt, st.nextBeat, st.deadline, int64(st.heapIdx)} {
			w.int(v)
		}
		w.flags(st.visible, st.started, st.aggregated, false, st.inBucket)
	}
	groups := e.aggs.values()
	w.uint(uint64(len(groups)))
	for _, a := range groups {
		w.str(e.aggs.keyOf(a))
		w.int(a.last)
		w.uint(uint64(len(a.notes)))
		for _, n := range a.notes {
			w.str(n)
		}
	}
	buckets := e.spam.values()
	w.uint(uint64(len(buckets)))
	for _, b := range buckets {
		w.str(e.spam.keyOf(b))
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(b.tokens()))
		w.int(b.last)
		w.uint(uint64(b.events))
	}
	w.flags(e.totals.forgot)
	w.int(e.totals.forgotFirst)
	for _, gen := range []map[uint64]total{e.totals.recent, e.totals.older} {
		w.uint(uint64(len(gen)))
		for _, key := range slices.Sorted(maps.Keys(gen)) {
			w.b = binary.LittleEndian.AppendUint64(w.b, key)
			w.int(gen[key].count)
			w.int(gen[key].first)
		}
	}
	return w.b
}

// Restore replaces the engine's state with a snapshot's. It refuses one of
// another version or made with another mode or series key (the caches' keys
// would mean something else), or malformed; the engine is then empty, as
// New made it. Timer and spam-filter settings may differ: deadlines follow
// from the times kept, and buckets hold at most the configured burst (all
// of theirs when the spam key changed). A snapshot with more entries than
// max_keys keeps the most recently used of each cache: a series that does
// not fit ends as an eviction does, its records returned by the next call
// (Stats.RestoreDropped counts what was dropped).
func (e *Engine) Restore(snapshot []byte) error {
	if err := e.restore(&reader{b: snapshot, size: len(snapshot)}); err != nil {
		_ = e.reset() // it succeeded in New with the same configuration
		return fmt.Errorf("restore eventseries state: %w", err)
	}
	return nil
}

func (e *Engine) restore(r *reader) error {
	if err := e.reset(); err != nil {
		return err
	}
	if magic := r.str(); magic != snapshotMagic {
		return errors.New("not an eventseries engine snapshot")
	}
	if version := r.uint(); r.err == nil && version != snapshotVersion {
		return fmt.Errorf("%w: version %d, this build reads version %d", ErrSnapshotVersion, version, snapshotVersion)
	}
	flags := r.byte()
	if legacy := flags&1 != 0; r.err == nil && legacy != e.cfg.Legacy {
		return fmt.Errorf("%w: mode %s, configured %s", ErrSnapshotSettings, modeName(legacy), modeName(e.cfg.Legacy))
	}
	if withRV := flags&2 != 0; r.err == nil && !e.cfg.Legacy && withRV != e.cfg.KeyIncludesResourceVersion {
		return fmt.Errorf("%w: series.key_ignores_resource_version %t, configured %t", ErrSnapshotSettings, !withRV, !e.cfg.KeyIncludesResourceVersion)
	}
	spamKey := r.str()
	now, statesMade := r.int(), r.uint()
	beat := r.int() // the snapshot's heartbeat_interval
	if r.err == nil && beat <= 0 {
		return fmt.Errorf("heartbeat interval %d", beat)
	}
	if err := e.restoreStates(r, now); err != nil {
		return err
	}
	if err := e.restoreGroups(r); err != nil {
		return err
	}
	if err := e.restoreBuckets(r, spamKey); err != nil {
		return err
	}
	if err := e.restoreTotals(r); err != nil {
		return err
	}
	if r.err == nil && len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	e.now, e.statesMade = now, statesMade
	e.fit()
	e.retime(beat)
	return nil
}

// fit drops what does not fit in max_keys, least recently used first.
// Only now, with the whole snapshot read: a dropped series emits its end.
// The totals keep what they hold: more objects than this configuration
// remembers leave with the next two generations.
func (e *Engine) fit() {
	var dropped int
	dropped += e.states.resize(e.cfg.MaxKeys)
	dropped += e.aggs.resize(e.cfg.MaxKeys)
	dropped += e.spam.resize(e.cfg.MaxKeys)
	e.Stats.RestoreDropped += int64(dropped)
	e.pending = len(e.out)
}

// retime moves each deadline the current configuration brings earlier than
// the kept one: deadlines follow from the times kept (last occurrence, last
// heartbeat) and the configured finish_after and heartbeat_interval. With
// the configuration of the snapshot nothing moves, as a kept deadline is
// never later than the real one. beat is the snapshot's heartbeat_interval.
func (e *Engine) retime(beat int64) {
	interval := int64(e.cfg.HeartbeatInterval)
	for _, st := range e.states.values() {
		if !e.cfg.Legacy && st.started && beat != interval {
			st.nextBeat = addCount(st.nextBeat-beat, interval) // the last heartbeat (or start) stays
			st.nextBeat = max(st.nextBeat, e.now)              // heartbeats missed to a shorter interval: one, now
		}
		if st.heapIdx >= 0 {
			at, _ := e.dueAt(st)
			e.due.schedule(st, at) // only ever earlier
		}
	}
}

// restoreStates reads the states and rebuilds the deadline heap as it was.
// Besides what would make the engine panic, it refuses times no engine
// leaves behind (after every call a started series' next heartbeat is
// not behind): a heartbeat far behind would emit one record per interval
// missed.
func (e *Engine) restoreStates(r *reader, now int64) error {
	n := r.entries(len(r.b), "series")
	e.states.resize(max(n, e.cfg.MaxKeys))
	at := make([]int, 0, n) // heap index of each scheduled state
	var scheduled []*state
	for range n {
		packed := r.str()
		st := &state{name: r.str(), heapIdx: -1}
		for _, v := range [...]*int64{&st.count, &st.emitted, &st.first, &st.last, &st.seenAt, &st.nextBeat, &st.deadline} {
			*v = r.int()
		}
		idx := r.int()
		flags := r.byte()
		st.visible, st.started, st.aggregated = flags&1 != 0, flags&2 != 0, flags&4 != 0
		var note string
		if flags&noteDiffers != 0 {
			note = r.str()
		}
		st.inBucket = flags&inBucketFlag != 0
		if r.err != nil {
			return r.err
		}
		st.l = &e.series
		switch {
		case packed != "" && packed[0] == aggregateLayout.tag:
			st.l = &aggregateLayout // a summary (legacy: an aggregate)
		case e.cfg.Legacy:
			st.l = &identicalLayout
		}
		switch {
		case !v8Unpack(st.l, packed, &st.ev):
			return fmt.Errorf("state %d: not a packed Event of this mode", e.states.Len())
		case st.name == "":
			return fmt.Errorf("state %d: no name", e.states.Len())
		case idx < -1 || idx >= int64(n) || (idx < 0 && !e.cfg.Legacy):
			return fmt.Errorf("state %d: heap index %d", e.states.Len(), idx)
		case st.seenAt > now || (!e.cfg.Legacy && st.started && st.nextBeat < now):
			return fmt.Errorf("state %d: seen at %d, next heartbeat %d, now %d", e.states.Len(), st.seenAt, st.nextBeat, now)
		}
		if flags&noteDiffers != 0 {
			st.ev.Note = note
		}
		if !e.states.add(string(e.stateKey(st.l, &st.ev)), st) {
			return fmt.Errorf("state %d: key twice", e.states.Len())
		}
		if idx >= 0 {
			scheduled, at = append(scheduled, st), append(at, int(idx))
		}
	}
	e.due = make(deadlines, len(scheduled))
	for i, st := range scheduled {
		if at[i] >= len(e.due) || e.due[at[i]] != nil {
			return fmt.Errorf("heap index %d out of place", at[i])
		}
		e.due[at[i]], st.heapIdx = st, at[i]
	}
	for i := 1; i < len(e.due); i++ {
		if e.due.Less(i, (i-1)/2) {
			return fmt.Errorf("deadline heap out of order at %d", i)
		}
	}
	return nil
}

func (e *Engine) restoreGroups(r *reader) error {
	n := r.entries(len(r.b), "aggregation groups")
	e.aggs.resize(max(n, e.cfg.MaxKeys))
	for range n {
		key, a := r.str(), &aggregate{last: r.int()}
		for range r.entries(len(r.b), "notes") {
			a.notes = append(a.notes, r.str())
		}
		if keep := e.cfg.AggregateMaxEvents - 1; e.cfg.Aggregation && len(a.notes) > keep {
			a.notes = a.notes[len(a.notes)-keep:] // max_events was lowered: the least recently seen go
		}
		if r.err == nil && !e.aggs.add(key, a) {
			return fmt.Errorf("aggregation group %q twice", key)
		}
	}
	return nil
}

func (e *Engine) restoreTotals(r *reader) error {
	e.totals.forgot, e.totals.forgotFirst = r.byte()&1 != 0, r.int()
	for _, gen := range []map[uint64]total{e.totals.recent, e.totals.older} {
		for range r.entries(len(r.b)/10, "totals") {
			key := r.u64()
			t := total{count: r.int(), first: r.int()}
			if _, recent, older := e.totals.get(key); r.err == nil && (recent || older) {
				return fmt.Errorf("total of key hash %#x twice", key)
			}
			gen[key] = t
		}
	}
	return nil
}

func (e *Engine) spamKey() string { return strings.Join(e.cfg.SpamKey, ",") }

func modeName(legacy bool) string {
	if legacy {
		return "legacy"
	}
	return "series"
}
