package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// The snapshot encoding, version 1. Varints are encoding/binary's, strings
// are length-prefixed; every cache is listed least recently used first:
//
//	magic, version
//	flags (legacy, series key with resourceVersion), spam key, now, made
//	states:  count, then each: packed Event, name, count, emitted, first,
//	         last, seenAt, nextBeat, deadline, heap index (-1: none), flags
//	         (visible, started, aggregated)
//	groups:  count, then each: key, last, notes (count, then each)
//	buckets: count, then each: key, tokens (float64 bits), last allowed
//	totals:  count, then each: key, total
//
// Deadlines and heap positions are kept rather than recomputed: a state's
// deadline may be earlier than its real one (see deadlines), and states
// that come due in one Advance fire in the heap's order, ties included.
// Only the same heap gives the same emissions as an engine that never
// stopped.
const (
	snapshotMagic   = "eventseries.engine"
	snapshotVersion = 1
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
	w.uint(e.made)

	states := e.states.Values()
	w.uint(uint64(len(states)))
	for _, st := range states {
		w.str(st.packed)
		w.str(st.name)
		for _, v := range [...]int64{st.count, st.emitted, st.first, st.last, st.seenAt, st.nextBeat, st.deadline, int64(st.heapIdx)} {
			w.int(v)
		}
		w.flags(st.visible, st.started, st.aggregated)
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
	}
	keys = e.totals.Keys()
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		total, _ := e.totals.Peek(k)
		w.str(k)
		w.int(*total)
	}
	e.snapSize = len(w.b)
	return w.b
}

// Restore replaces the engine's state with a snapshot's. It refuses one of
// another version or made with another mode or series key (the caches' keys
// would mean something else), with more entries than max_keys, or malformed;
// the engine is then empty, as New made it. Timer and spam-filter settings
// may differ: deadlines follow from the times kept, and buckets hold at most
// the configured burst (all of theirs when the spam key changed).
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
	if v := r.uint(); v != snapshotVersion {
		return fmt.Errorf("snapshot version %d, this build reads version %d", v, snapshotVersion)
	}
	flags := r.byte()
	if legacy := flags&1 != 0; r.err == nil && legacy != e.cfg.Legacy {
		return fmt.Errorf("snapshot of mode %s, configured %s", modeName(legacy), modeName(e.cfg.Legacy))
	}
	if withRV := flags&2 != 0; r.err == nil && !e.cfg.Legacy && withRV != e.cfg.KeyIncludesResourceVersion {
		return fmt.Errorf("snapshot made with series.key_ignores_resource_version %t, configured %t", !withRV, !e.cfg.KeyIncludesResourceVersion)
	}
	spamKey := r.str()
	now, made := r.int(), r.uint()
	if err := e.restoreStates(r, now); err != nil {
		return err
	}
	for range r.entries(e.cfg.MaxKeys, "aggregation groups") {
		key, a := r.str(), &aggregate{last: r.int()}
		for range r.entries(len(r.b), "notes") {
			a.notes = append(a.notes, r.str())
		}
		if keep := e.cfg.AggregateMaxEvents - 1; e.cfg.Aggregation && len(a.notes) > keep {
			a.notes = a.notes[len(a.notes)-keep:] // max_events was lowered: the least recently seen go
		}
		if r.err == nil && !add(e.aggs, key, a) {
			return fmt.Errorf("aggregation group %q twice", key)
		}
	}
	keepBuckets := e.cfg.SpamFilter && spamKey == e.spamKey()
	for range r.entries(e.cfg.MaxKeys, "spam buckets") {
		key, tokens, last := r.str(), math.Float64frombits(r.u64()), r.int()
		if r.err == nil && !(tokens >= 0) {
			return fmt.Errorf("spam bucket %q holds %g tokens", key, tokens)
		}
		if r.err != nil || !keepBuckets {
			continue
		}
		b := new(bucket)
		b.set(e.cfg.SpamQPS, e.cfg.SpamBurst, tokens, last)
		if !add(e.spam, key, b) {
			return fmt.Errorf("spam bucket %q twice", key)
		}
	}
	for range r.entries(e.cfg.MaxKeys, "totals") {
		key, total := r.str(), new(int64)
		*total = r.int()
		if r.err == nil && !add(e.totals, key, total) {
			return fmt.Errorf("total of %q twice", key)
		}
	}
	if r.err == nil && len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	e.now, e.made = now, made
	return nil
}

// restoreStates reads the states and rebuilds the deadline heap as it was.
// Besides what would make the engine panic, it refuses times no engine
// leaves behind (after every call a started series' next heartbeat is
// ahead): a heartbeat far behind would emit one record per interval missed.
func (e *Engine) restoreStates(r *reader, now int64) error {
	n := r.entries(e.cfg.MaxKeys, "series")
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
		if r.err != nil {
			return r.err
		}
		l := &e.series
		if e.cfg.Legacy && st.packed != "" {
			l = layoutOf(st, &identicalLayout) // a tag of neither fails the check
		}
		keyLen, ok := l.check(st.packed)
		switch {
		case !ok:
			return fmt.Errorf("state %d: not a packed Event of this mode", e.states.Len())
		case st.name == "":
			return fmt.Errorf("state %d: no name", e.states.Len())
		case idx < -1 || idx >= int64(n) || (idx < 0 && !e.cfg.Legacy):
			return fmt.Errorf("state %d: heap index %d", e.states.Len(), idx)
		case st.seenAt > now || (!e.cfg.Legacy && st.started && st.nextBeat <= now):
			return fmt.Errorf("state %d: seen at %d, next heartbeat %d, now %d", e.states.Len(), st.seenAt, st.nextBeat, now)
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

// add adds a new entry to a cache that has room, and reports whether the
// key was new.
func add[V any](c *simplelru.LRU[string, V], key string, v V) bool {
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

type writer struct{ b []byte }

func (w *writer) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }

func (w *writer) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) flags(bits ...bool) {
	var f byte
	for i, b := range bits {
		if b {
			f |= 1 << i
		}
	}
	w.b = append(w.b, f)
}

// reader reads a snapshot; after the first error every read is zero and
// err says where it went wrong.
type reader struct {
	b    []byte
	size int
	err  error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d of %d", what, r.size-len(r.b), r.size)
	}
	r.b = nil
}

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or malformed")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or malformed")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) str() string {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail("truncated string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// entries reads a count of at most limit; 0 after an error.
func (r *reader) entries(limit int, what string) int {
	n := r.uint()
	if r.err == nil && n > uint64(limit) {
		r.fail(fmt.Sprintf("%d %s, over the limit of %d,", n, what, limit))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}
