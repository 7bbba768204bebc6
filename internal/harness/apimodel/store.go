// The model's etcd: one revision counter for every write, the current
// objects, the history since the last compaction (for watches and for
// lists at an older revision), and the Event TTL. Stored objects are never
// changed in place: a write stores a new copy, so history shares them.

package apimodel

import (
	"container/heap"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// revision is one write: obj nil is a delete, prev (the object before,
// with its own resourceVersion) nil a create.
type revision struct {
	rv        int64
	at        time.Time // when, on the Server's clock
	store     string
	key       string // namespace/name, or name
	obj, prev runtime.Object
}

// entry is a stored object and when it expires (zero: never).
type entry struct {
	obj     runtime.Object
	expires time.Time
}

// store holds every object by storage space and key. Its methods expect the
// Server's mutex held.
type store struct {
	rv        int64            // the last revision written
	last      map[string]int64 // the last revision written in each space
	compacted int64            // revisions below are forgotten
	objects   map[string]map[string]*entry
	history   []revision // rv >= compacted, in order
	deadlines deadlineHeap
	// changed is closed (and replaced) by every write: a watch waits on it.
	changed chan struct{}
	now     func() time.Time
}

func newStore(now func() time.Time) *store {
	return &store{rv: 1, compacted: 1, last: map[string]int64{}, objects: map[string]map[string]*entry{},
		changed: make(chan struct{}), now: now}
}

// get is the current object under key, or nil.
func (st *store) get(space, key string) runtime.Object {
	if e := st.objects[space][key]; e != nil {
		return e.obj
	}
	return nil
}

// put writes obj (nil: deletes key) as the next revision and returns the
// revision. obj gets the revision as its resourceVersion; expires is when
// it expires (zero: never).
func (st *store) put(space, key string, obj runtime.Object, expires time.Time) int64 {
	return st.putAt(space, key, obj, expires, st.now())
}

// putAt is put at time at (an expiry: its deadline).
func (st *store) putAt(space, key string, obj runtime.Object, expires, at time.Time) int64 {
	st.rv++
	st.last[space] = st.rv
	rev := revision{rv: st.rv, at: at, store: space, key: key}
	m := st.objects[space]
	if m == nil {
		m = map[string]*entry{}
		st.objects[space] = m
	}
	if old := m[key]; old != nil {
		rev.prev = old.obj
	}
	if obj == nil {
		delete(m, key)
	} else {
		objectMeta(obj).SetResourceVersion(strconv.FormatInt(st.rv, 10))
		m[key] = &entry{obj: obj, expires: expires}
		rev.obj = obj
		if !expires.IsZero() {
			heap.Push(&st.deadlines, deadline{at: expires, space: space, key: key, rv: st.rv})
		}
	}
	st.history = append(st.history, rev)
	close(st.changed)
	st.changed = make(chan struct{})
	return st.rv
}

// expire deletes every object whose deadline passed, oldest deadline
// first, and returns what it deleted (the objects as they were).
func (st *store) expire(now time.Time) []revision {
	var gone []revision
	for st.deadlines.Len() > 0 && !st.deadlines[0].at.After(now) {
		d := heap.Pop(&st.deadlines).(deadline)
		e := st.objects[d.space][d.key]
		if e == nil || resourceVersionOf(e.obj) != d.rv {
			continue // written or deleted since: a later deadline holds
		}
		st.putAt(d.space, d.key, nil, time.Time{}, d.at)
		gone = append(gone, st.history[len(st.history)-1])
	}
	return gone
}

// nextDeadline is when the next object expires (zero: none).
func (st *store) nextDeadline() time.Time {
	for st.deadlines.Len() > 0 {
		d := st.deadlines[0]
		if e := st.objects[d.space][d.key]; e != nil && resourceVersionOf(e.obj) == d.rv {
			return d.at
		}
		heap.Pop(&st.deadlines) // stale
	}
	return time.Time{}
}

// compact forgets the history up to the current revision, as the API
// server's compactor does: it writes a revision of its own (etcd's
// compact_rev_key) and compacts at it. A watch from the current revision
// still starts; one from an older revision, or a list at one, is too old.
func (st *store) compact() {
	st.rv++
	st.compactAt(st.rv)
}

// compactAt forgets the history before revision rv (rv stays readable).
func (st *store) compactAt(rv int64) {
	if rv <= st.compacted {
		return
	}
	st.compacted = rv
	i, _ := slices.BinarySearchFunc(st.history, rv, func(r revision, rv int64) int { return int(r.rv - rv) })
	st.history = slices.Clone(st.history[i:])
}

// revisionAt is the revision current at time t (at least the compacted
// one).
func (st *store) revisionAt(t time.Time) int64 {
	i, _ := slices.BinarySearchFunc(st.history, t, func(r revision, t time.Time) int {
		if r.at.After(t) {
			return 1
		}
		return -1
	})
	switch {
	case i > 0:
		return st.history[i-1].rv
	case len(st.history) > 0:
		return max(st.history[0].rv-1, st.compacted)
	}
	return st.rv
}

// snapshot is the objects of space as they were at revision rv (at least
// the compacted one), sorted by key, filtered by keep.
func (st *store) snapshot(space string, rv int64, keep func(key string, obj runtime.Object) bool) []runtime.Object {
	state := make(map[string]runtime.Object, len(st.objects[space]))
	for k, e := range st.objects[space] {
		state[k] = e.obj
	}
	for i := len(st.history) - 1; i >= 0 && st.history[i].rv > rv; i-- {
		r := st.history[i]
		if r.store != space {
			continue
		}
		if r.prev == nil {
			delete(state, r.key)
		} else {
			state[r.key] = r.prev
		}
	}
	keys := make([]string, 0, len(state))
	for k, o := range state {
		if keep(k, o) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = state[k]
	}
	return out
}

// resourceVersionOf is a stored object's resourceVersion as a number.
func resourceVersionOf(o runtime.Object) int64 {
	rv, _ := strconv.ParseInt(objectMeta(o).GetResourceVersion(), 10, 64)
	return rv
}

// deadline is when the object written at revision rv expires.
type deadline struct {
	at         time.Time
	space, key string
	rv         int64
}

// deadlineHeap orders deadlines by time, then key (container/heap).
type deadlineHeap []deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].key < h[j].key
}
func (h deadlineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)   { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
