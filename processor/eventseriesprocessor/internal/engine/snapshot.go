package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// The snapshot encoding, version 5. Varints are encoding/binary's, strings
// are length-prefixed; every cache is listed least recently used first:
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
//	totals:  count, then each: key hash (uint64, see objectHash), total,
//	         first (unknownTime: none), last, flags (held under its old
//	         hash, see upgrade)
//	horizon: flags (an object was dropped from the filter), first, last
//	filter:  objects in the current generation, words per generation, then
//	         for each generation: flags (not empty), first, words (uint64)
//
// Version 6 changed the totals' hash (objectHash, was the FNV-1a hash
// fnvObjectHash) and the filter's layout (blocked): an older snapshot's
// totals are held under their old hash until their object comes back
// (upgrade), and its filter's objects go into the horizon, known by times.
// Version 5 added the cluster to every cache key (two empty fields at the
// end of each key prefix; see migrateKey, migratePacked): older keys are
// those of records with no cluster. Version 4 keeps the totals' key hashes where versions 1 to 3 kept the
// keys (read and hashed). Version 3 added summaries in series mode (states packed in the aggregate
// layout, see closing.go) and the buckets' events; from versions 1 and 2
// those are recounted from the visible states (see recountEvents).
// Version 1 (still read) had no heartbeat_interval, latest note, totals
// times or horizon: its totals are taken as first seen at its now, so that
// forgetting one never counts it again.
//
// Deadlines and heap positions are kept rather than recomputed: a state's
// deadline may be earlier than its real one (see deadlines), and states
// that come due in one Advance fire in the heap's order, ties included.
// Only the same heap gives the same emissions as an engine that never
// stopped. A configuration with shorter timers moves deadlines earlier on
// restore (retime).
const (
	snapshotMagic   = "eventseries.engine"
	snapshotVersion = 6
)

const (
	noteDiffers  = 8  // state flag: the latest note follows
	inBucketFlag = 16 // state flag: counted in its spam bucket's events
)

// Snapshot encodes the state of the engine, so that Restore on a new engine
// continues exactly where this one is. Stats are not in it: they count what
// one process did, and the processor reports them as such.
func (e *Engine) Snapshot() []byte {
	w := &writer{b: make([]byte, 0, e.snapSize+e.snapSize/8)} // growing a megabyte by doubling takes longer than encoding it
	w.str(snapshotMagic)
	w.uint(snapshotVersion)
	w.flags(e.cfg.Legacy, e.cfg.KeyIncludesResourceVersion)
	w.str(e.spamKey())
	w.int(e.now)
	w.uint(e.statesMade)
	w.int(int64(e.cfg.HeartbeatInterval))

	states := e.states.Values()
	w.uint(uint64(len(states)))
	for _, st := range states {
		w.str(st.packed)
		w.str(st.name)
		for _, v := range [...]int64{st.count, st.emitted, st.first, st.last, st.seenAt, st.nextBeat, st.deadline, int64(st.heapIdx)} {
			w.int(v)
		}
		differs := st.note != layoutOf(st, &e.series).field(st.packed, fNote)
		w.flags(st.visible, st.started, st.aggregated, differs, st.inBucket)
		if differs {
			w.str(st.note)
		}
	}
	keys := e.aggs.Keys()
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		a, _ := e.aggs.Peek(k)
		w.str(k)
		w.int(a.last)
		w.uint(uint64(len(a.notes)))
		for _, n := range a.notes {
			w.str(n)
		}
	}
	keys = e.spam.Keys()
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		b, _ := e.spam.Peek(k)
		w.str(k)
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(b.tokens()))
		w.int(b.last)
		w.uint(uint64(b.events))
	}
	w.uint(uint64(e.totals.Len()))
	e.totals.each(func(hash uint64, t *total) {
		w.b = binary.LittleEndian.AppendUint64(w.b, hash)
		w.int(t.count)
		w.int(t.first)
		w.int(t.last)
		w.flags(t.oldHash)
	})
	w.flags(e.forgot.any)
	w.int(e.forgot.first)
	w.int(e.forgot.last)
	w.uint(uint64(e.filter.n))
	w.uint(uint64(len(e.filter.gens[0].bits)))
	for _, g := range e.filter.gens {
		w.flags(g.any)
		w.int(g.first)
		for _, word := range g.bits {
			w.b = binary.LittleEndian.AppendUint64(w.b, word)
		}
	}
	e.snapSize = len(w.b)
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
	version := r.uint()
	if version < 1 || version > snapshotVersion {
		return fmt.Errorf("snapshot version %d, this build reads versions 1 to %d", version, snapshotVersion)
	}
	flags := r.byte()
	if legacy := flags&1 != 0; r.err == nil && legacy != e.cfg.Legacy {
		return fmt.Errorf("snapshot of mode %s, configured %s", modeName(legacy), modeName(e.cfg.Legacy))
	}
	if withRV := flags&2 != 0; r.err == nil && !e.cfg.Legacy && withRV != e.cfg.KeyIncludesResourceVersion {
		return fmt.Errorf("snapshot made with series.key_ignores_resource_version %t, configured %t", !withRV, !e.cfg.KeyIncludesResourceVersion)
	}
	spamKey := r.str()
	now, statesMade := r.int(), r.uint()
	beat := int64(-1) // the snapshot's heartbeat_interval; -1: not stated (version 1)
	if version >= 2 {
		if beat = r.int(); r.err == nil && beat <= 0 {
			return fmt.Errorf("heartbeat interval %d", beat)
		}
	}
	if err := e.restoreStates(r, version, now); err != nil {
		return err
	}
	if err := e.restoreGroups(r, version); err != nil {
		return err
	}
	if err := e.restoreBuckets(r, spamKey, version); err != nil {
		return err
	}
	if err := e.restoreTotals(r, version, now); err != nil {
		return err
	}
	if r.err == nil && len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	e.now, e.statesMade = now, statesMade
	if version < 3 {
		e.recountEvents()
	}
	e.fit()
	e.retime(beat)
	return nil
}

// fit drops what does not fit in max_keys, least recently used first.
// Only now, with the whole snapshot read: a dropped series emits its end.
func (e *Engine) fit() {
	var dropped int
	dropped += e.states.Resize(e.cfg.MaxKeys)
	dropped += e.aggs.Resize(e.cfg.MaxKeys)
	dropped += e.spam.Resize(e.cfg.MaxKeys)
	var forgotten int
	e.totals, forgotten = e.totals.resized(e.cfg.MaxKeys) // into the horizon
	dropped += forgotten
	e.Stats.RestoreDropped += int64(dropped)
	e.pending = len(e.out)
}

// retime moves each deadline the current configuration brings earlier than
// the kept one: deadlines follow from the times kept (last occurrence, last
// heartbeat) and the configured finish_after and heartbeat_interval. With
// the configuration of the snapshot nothing moves, as a kept deadline is
// never later than the real one. beat is the snapshot's heartbeat_interval
// (-1: unknown, then the next heartbeat is at most one interval away).
func (e *Engine) retime(beat int64) {
	interval := int64(e.cfg.HeartbeatInterval)
	for _, st := range e.states.Values() {
		if !e.cfg.Legacy && st.started && beat != interval {
			if beat > 0 {
				st.nextBeat = addCount(st.nextBeat-beat, interval) // the last heartbeat (or start) stays
			} else {
				st.nextBeat = min(st.nextBeat, addCount(e.now, interval))
			}
			st.nextBeat = max(st.nextBeat, e.now) // heartbeats missed to a shorter interval: one, now
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
func (e *Engine) restoreStates(r *reader, version uint64, now int64) error {
	n := r.entries(len(r.b), "series")
	e.states.Resize(max(n, e.cfg.MaxKeys))
	at := make([]int, 0, n) // heap index of each scheduled state
	var scheduled []*state
	for range n {
		st := &state{packed: r.str(), name: r.str()}
		for _, v := range [...]*int64{&st.count, &st.emitted, &st.first, &st.last, &st.seenAt, &st.nextBeat, &st.deadline} {
			*v = r.int()
		}
		idx := r.int()
		flags := r.byte()
		st.visible, st.started, st.aggregated = flags&1 != 0, flags&2 != 0, flags&4 != 0
		if version >= 2 && flags&noteDiffers != 0 {
			st.note = r.str()
		}
		st.inBucket = version >= 3 && flags&inBucketFlag != 0
		if r.err != nil {
			return r.err
		}
		l := &e.series
		switch {
		case e.cfg.Legacy && st.packed != "":
			l = layoutOf(st, &identicalLayout) // a tag of neither fails the check
		case version >= 3 && st.packed != "" && st.packed[0] == aggregateLayout.tag:
			l = &aggregateLayout // a summary
		}
		if version < 5 {
			st.packed = migratePacked(st.packed, len(l.key)-len(clusterFields))
		}
		keyLen, ok := l.check(st.packed)
		switch {
		case !ok:
			return fmt.Errorf("state %d: not a packed Event of this mode", e.states.Len())
		case st.name == "":
			return fmt.Errorf("state %d: no name", e.states.Len())
		case idx < -1 || idx >= int64(n) || (idx < 0 && !e.cfg.Legacy):
			return fmt.Errorf("state %d: heap index %d", e.states.Len(), idx)
		case st.seenAt > now || (!e.cfg.Legacy && st.started && st.nextBeat < now):
			return fmt.Errorf("state %d: seen at %d, next heartbeat %d, now %d", e.states.Len(), st.seenAt, st.nextBeat, now)
		}
		if flags&noteDiffers == 0 {
			st.note = l.field(st.packed, fNote)
		}
		st.keyLen, st.heapIdx = keyLen, -1
		if !add(e.states, st.packed[:keyLen], st) {
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
		if e.due.less(i, (i-1)/2) {
			return fmt.Errorf("deadline heap out of order at %d", i)
		}
	}
	return nil
}

func (e *Engine) restoreGroups(r *reader, version uint64) error {
	n := r.entries(len(r.b), "aggregation groups")
	e.aggs.Resize(max(n, e.cfg.MaxKeys))
	for range n {
		key, a := r.str(), &aggregate{last: r.int()}
		for range r.entries(len(r.b), "notes") {
			a.notes = append(a.notes, r.str())
		}
		if keep := e.cfg.AggregateMaxEvents - 1; e.cfg.Aggregation && len(a.notes) > keep {
			a.notes = a.notes[len(a.notes)-keep:] // max_events was lowered: the least recently seen go
		}
		if version < 5 {
			key = migrateKey(key)
		}
		if r.err == nil && !add(e.aggs, key, a) {
			return fmt.Errorf("aggregation group %q twice", key)
		}
	}
	return nil
}

func (e *Engine) restoreTotals(r *reader, version uint64, now int64) error {
	n := r.entries(len(r.b), "totals")
	if n > e.cfg.MaxKeys {
		e.totals = newTotalTable(n, e.forget) // fit trims it
	}
	for range n {
		var key uint64
		if version >= 4 {
			key = r.u64()
		} else {
			key = fnvKeyHash(r.str())
		}
		t := total{count: r.int(), first: now, last: now, oldHash: version < 6}
		if version >= 2 {
			t.first, t.last = r.int(), r.int()
		}
		if version >= 6 {
			t.oldHash = r.byte()&1 != 0
		}
		if r.err == nil && !e.totals.add(key, t) {
			return fmt.Errorf("total of key hash %#x twice", key)
		}
		if t.oldHash {
			e.oldTotals++
		}
	}
	if version >= 2 {
		e.forgot = horizon{any: r.byte()&1 != 0, first: r.int(), last: r.int()}
		return e.restoreFilter(r, version)
	}
	return nil
}

// restoreFilter reads the filter of forgotten objects. One made for another
// max_keys, or before version 6 (another layout, other hashes), cannot be
// read as this one: its objects go into the horizon.
func (e *Engine) restoreFilter(r *reader, version uint64) error {
	n, words := r.uint(), r.entries(len(r.b)/16, "filter words")
	same := words == len(e.filter.gens[0].bits) && version >= 6
	if r.err == nil && same && n > uint64(words*64/filterBits) {
		return fmt.Errorf("filter of %d words holds %d objects", words, n)
	}
	for i := range e.filter.gens {
		g := generation{any: r.byte()&1 != 0, first: r.int(), bits: e.filter.gens[i].bits}
		for j := range words {
			word := r.u64()
			if same {
				g.bits[j] = word
			}
		}
		if !same {
			e.forgot.age(&g)
		}
		e.filter.gens[i] = g
	}
	if same {
		e.filter.n = int(n)
	}
	return nil
}

// add adds a new entry to a cache that has room, and reports whether the
// key was new.
func add[V any](c *lru[V], key string, v V) bool {
	n := c.Len()
	c.Add(key, v)
	return c.Len() == n+1
}

func (e *Engine) spamKey() string { return strings.Join(e.cfg.SpamKey, ",") }

func modeName(legacy bool) string {
	if legacy {
		return "legacy"
	}
	return "series"
}
