package engine

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A snapshot is a header (the magic string, length-prefixed, the format
// version and the settings flags: legacy, series key with resourceVersion)
// then, from version 9 on, the gob encoding of snapshot. Version 8 is read
// by migrate_v8.go into the same structs.
//
// Deadlines and heap positions are kept rather than recomputed: a state's
// deadline may be earlier than its real one (see deadlines), and states
// that come due in one Advance fire in the heap's order, ties included.
// Only the same heap gives the same emissions as an engine that never
// stopped. A configuration with shorter timers moves deadlines earlier on
// restore (retime).
const (
	snapshotMagic   = "eventseries.engine"
	snapshotVersion = 9
)

// SnapshotVersion is the format Snapshot writes.
const SnapshotVersion = snapshotVersion

// ErrSnapshotVersion: Restore refused a snapshot of another version.
var ErrSnapshotVersion = errors.New("snapshot of another version")

// snapshot is what an engine keeps across a restart; every cache is listed
// least recently used first. Its fields are the format: renaming one loses
// it from the snapshots saved before.
type snapshot struct {
	SpamKey           string
	Now               int64
	StatesMade        uint64
	HeartbeatInterval int64
	States            []savedState
	Groups            []savedGroup
	Buckets           []savedBucket
	Forgot            bool  // the totals forgot a generation
	ForgotFirst       int64 // the latest first occurrence forgotten
	Recent, Older     []savedTotal
}

type savedState struct {
	Event                                                   k8sevent.Event // state.ev
	Summary                                                 bool           // keyed by its aggregate key (legacy: an aggregate)
	Name                                                    string
	Count, Emitted, First, Last, SeenAt, NextBeat, Deadline int64
	HeapIndex                                               int64 // -1: not scheduled
	Visible, Started, Aggregated, InBucket                  bool
}

type savedGroup struct {
	Key   string
	Last  int64
	Notes []string
}

type savedBucket struct {
	Key    string
	Tokens float64 // at Last
	Last   int64
	Events int
}

type savedTotal struct {
	Key          uint64 // objectHash
	Count, First int64
}

// Snapshot encodes the state of the engine, so that Restore on a new engine
// continues exactly where this one is. Stats are not in it: they count what
// one process did, and the processor reports them as such.
func (e *Engine) Snapshot() []byte {
	w := &writer{}
	w.str(snapshotMagic)
	w.uint(snapshotVersion)
	w.flags(e.cfg.Legacy, e.cfg.KeyIncludesResourceVersion)
	s := snapshot{SpamKey: e.spamKey(), Now: e.now, StatesMade: e.statesMade,
		HeartbeatInterval: int64(e.cfg.HeartbeatInterval), Forgot: e.totals.forgot, ForgotFirst: e.totals.forgotFirst}
	for _, st := range e.states.values() {
		s.States = append(s.States, savedState{Event: st.ev.Event(), Summary: isSummary(st), Name: st.name,
			Count: st.count, Emitted: st.emitted, First: st.first, Last: st.last, SeenAt: st.seenAt,
			NextBeat: st.nextBeat, Deadline: st.deadline, HeapIndex: int64(st.heapIdx),
			Visible: st.visible, Started: st.started, Aggregated: st.aggregated, InBucket: st.inBucket})
	}
	for _, a := range e.aggs.values() {
		s.Groups = append(s.Groups, savedGroup{Key: e.aggs.keyOf(a), Last: a.last, Notes: a.notes})
	}
	for _, b := range e.spam.values() {
		s.Buckets = append(s.Buckets, savedBucket{Key: e.spam.keyOf(b), Tokens: b.tokens(), Last: b.last, Events: b.events})
	}
	for i, gen := range []map[uint64]total{e.totals.recent, e.totals.older} {
		into := []*[]savedTotal{&s.Recent, &s.Older}[i]
		for _, key := range slices.Sorted(maps.Keys(gen)) {
			*into = append(*into, savedTotal{Key: key, Count: gen[key].count, First: gen[key].first})
		}
	}
	buf := bytes.NewBuffer(w.b)
	if err := gob.NewEncoder(buf).Encode(&s); err != nil {
		panic(err) // plain structs of a fixed type always encode
	}
	return buf.Bytes()
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
func (e *Engine) Restore(data []byte) error {
	if err := e.restore(data); err != nil {
		_ = e.reset() // it succeeded in New with the same configuration
		return fmt.Errorf("restore eventseries state: %w", err)
	}
	return nil
}

// header reads a snapshot's header: its version and settings flags, and
// what follows.
func header(data []byte) (version uint64, flags byte, body []byte, err error) {
	r := &reader{b: data, size: len(data)}
	if magic := r.str(); magic != snapshotMagic {
		return 0, 0, nil, errors.New("not an eventseries engine snapshot")
	}
	if version = r.uint(); r.err == nil && version != snapshotVersion && version != 8 {
		return 0, 0, nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrSnapshotVersion, version, snapshotVersion)
	}
	flags = r.byte()
	return version, flags, r.b, r.err
}

func (e *Engine) restore(data []byte) error {
	if err := e.reset(); err != nil {
		return err
	}
	version, flags, body, err := header(data)
	if err != nil {
		return err
	}
	if legacy := flags&1 != 0; legacy != e.cfg.Legacy {
		return fmt.Errorf("%w: mode %s, configured %s", ErrSnapshotSettings, modeName(legacy), modeName(e.cfg.Legacy))
	}
	if withRV := flags&2 != 0; !e.cfg.Legacy && withRV != e.cfg.KeyIncludesResourceVersion {
		return fmt.Errorf("%w: series.key_ignores_resource_version %t, configured %t", ErrSnapshotSettings, !withRV, !e.cfg.KeyIncludesResourceVersion)
	}
	var s snapshot
	if version == 8 {
		err = e.readV8(&reader{b: body, size: len(data)}, &s)
	} else {
		in := bytes.NewReader(body)
		if err = gob.NewDecoder(in).Decode(&s); err == nil && in.Len() > 0 {
			err = fmt.Errorf("%d bytes after the end", in.Len())
		}
	}
	if err != nil {
		return err
	}
	return e.apply(&s)
}

// apply makes s the engine's state.
func (e *Engine) apply(s *snapshot) error {
	if s.HeartbeatInterval <= 0 {
		return fmt.Errorf("heartbeat interval %d", s.HeartbeatInterval)
	}
	if err := e.restoreStates(s); err != nil {
		return err
	}
	if err := e.restoreGroups(s.Groups); err != nil {
		return err
	}
	if err := e.restoreBuckets(s.Buckets, s.SpamKey); err != nil {
		return err
	}
	if err := e.restoreTotals(s); err != nil {
		return err
	}
	e.now, e.statesMade = s.Now, s.StatesMade
	e.fit()
	e.retime(s.HeartbeatInterval)
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

// restoreStates makes the states and rebuilds the deadline heap as it was.
// Besides what would make the engine panic, it refuses times no engine
// leaves behind (after every call a started series' next heartbeat is
// not behind): a heartbeat far behind would emit one record per interval
// missed.
func (e *Engine) restoreStates(s *snapshot) error {
	n := len(s.States)
	e.states.resize(max(n, e.cfg.MaxKeys))
	e.due = make(deadlines, 0, n)
	var scheduled []*state
	for i := range s.States {
		saved := &s.States[i]
		st := &state{ev: saved.Event.Description(), name: saved.Name, count: saved.Count, emitted: saved.Emitted,
			first: saved.First, last: saved.Last, seenAt: saved.SeenAt, nextBeat: saved.NextBeat,
			deadline: saved.Deadline, heapIdx: int(saved.HeapIndex), visible: saved.Visible,
			started: saved.Started, aggregated: saved.Aggregated, inBucket: saved.InBucket}
		st.l = &e.series
		switch {
		case saved.Summary:
			st.l = &aggregateLayout
		case e.cfg.Legacy:
			st.l = &identicalLayout
		}
		idx := saved.HeapIndex
		switch {
		case st.name == "":
			return fmt.Errorf("state %d: no name", i)
		case idx < -1 || idx >= int64(n) || (idx < 0 && !e.cfg.Legacy):
			return fmt.Errorf("state %d: heap index %d", i, idx)
		case st.seenAt > s.Now || (!e.cfg.Legacy && st.started && st.nextBeat < s.Now):
			return fmt.Errorf("state %d: seen at %d, next heartbeat %d, now %d", i, st.seenAt, st.nextBeat, s.Now)
		}
		if !e.states.add(string(e.stateKey(st.l, &saved.Event)), st) {
			return fmt.Errorf("state %d: key twice", i)
		}
		if idx >= 0 {
			scheduled = append(scheduled, st)
		}
	}
	e.due = e.due[:len(scheduled)]
	for _, st := range scheduled {
		if st.heapIdx >= len(e.due) || e.due[st.heapIdx] != nil {
			return fmt.Errorf("heap index %d out of place", st.heapIdx)
		}
		e.due[st.heapIdx] = st
	}
	for i := 1; i < len(e.due); i++ {
		if e.due[i] == nil {
			return fmt.Errorf("heap index %d out of place", i)
		}
		if e.due.Less(i, (i-1)/2) {
			return fmt.Errorf("deadline heap out of order at %d", i)
		}
	}
	return nil
}

func (e *Engine) restoreGroups(groups []savedGroup) error {
	e.aggs.resize(max(len(groups), e.cfg.MaxKeys))
	for _, g := range groups {
		a := &aggregate{last: g.Last, notes: g.Notes}
		if keep := e.cfg.AggregateMaxEvents - 1; e.cfg.Aggregation && len(a.notes) > keep {
			a.notes = a.notes[len(a.notes)-keep:] // max_events was lowered: the least recently seen go
		}
		if !e.aggs.add(g.Key, a) {
			return fmt.Errorf("aggregation group %q twice", g.Key)
		}
	}
	return nil
}

func (e *Engine) restoreTotals(s *snapshot) error {
	e.totals.forgot, e.totals.forgotFirst = s.Forgot, s.ForgotFirst
	for i, gen := range []map[uint64]total{e.totals.recent, e.totals.older} {
		for _, t := range [][]savedTotal{s.Recent, s.Older}[i] {
			if _, recent, older := e.totals.get(t.Key); recent || older {
				return fmt.Errorf("total of key hash %#x twice", t.Key)
			}
			gen[t.Key] = total{count: t.Count, first: t.First}
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
