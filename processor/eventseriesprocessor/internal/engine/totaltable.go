package engine

// totalTable is the totals cache (see total): up to a fixed number of Event
// objects, the least recently seen forgotten first. A record of a new
// object is the common case (every occurrence of an events.k8s.io Event,
// of a raw storm, of an app sending OTLP is an object of its own), so
// adding one costs no allocation and no key string: the slots are one
// slice made up front, linked in order of use by slot index, and found
// by hash in an index (see index). The index holds at most 2^31 slots:
// max_keys is far below.
//
// An object is known by a 64-bit hash of its key (objectHash), not by
// the key. Two keys sharing it by chance would share a total, and the
// later one would count only its growth past the earlier one's count:
// fewer occurrences, never more. At max_keys 4096 the chance that a new
// key meets a held one is about 2^-52 (keys differing in one byte never
// do). A sender choosing a uid to meet another object's gains nothing it
// could not get by sending that object's uid.
type totalTable struct {
	slots   []totalSlot // cap is the capacity
	order   order       // of the slots
	index   index
	onEvict func(hash uint64, t *total)
	// missed and missedAt: the hash get last did not find and its free
	// position, so that the add that follows need not probe again.
	missed   uint64
	missedAt int64 // -1: none
}

type totalSlot struct {
	hash  uint64
	total total
}

// newTotalTable makes a table of capacity objects. Its index is made for
// twice the capacity, so it is at most a third full (a quarter at
// max_keys 4096; a half before):
// every new uid probes for a free position and its eviction moves back a
// run, and at a half full they cost a record of a new uid ~70
// instructions more (BenchmarkEngine). The cost: 16 bytes of index per
// object (64 KiB at max_keys 4096).
func newTotalTable(capacity int, onEvict func(hash uint64, t *total)) *totalTable {
	return &totalTable{
		slots: make([]totalSlot, 0, capacity), order: newOrder(capacity), index: newIndex(2 * capacity),
		onEvict: onEvict, missedAt: -1,
	}
}

// Len is the number of objects held.
func (t *totalTable) Len() int { return len(t.slots) }

// get returns the total of the object with this hash and makes it the most
// recently seen. The pointer is valid until the next add.
func (t *totalTable) get(hash uint64) (*total, bool) {
	pos, s := t.find(hash)
	if s < 0 {
		t.missed, t.missedAt = hash, int64(pos)
		return nil, false
	}
	t.order.touch(s)
	return &t.slots[s].total, true
}

// add puts in an object not held, as the most recently seen, first
// forgetting the least recently seen one when full. It reports whether the
// object was new.
func (t *totalTable) add(hash uint64, tot total) bool {
	var pos uint64
	s := int32(-1)
	if t.missedAt >= 0 && t.missed == hash {
		pos = uint64(t.missedAt)
	} else if pos, s = t.find(hash); s >= 0 {
		return false
	}
	t.missedAt = -1
	if len(t.slots) == cap(t.slots) {
		s = t.order.oldest
		old := &t.slots[s]
		t.order.unlink(s)
		emptied := t.index.free(t.index.of(old.hash, s))
		if t.onEvict != nil {
			t.onEvict(old.hash, &old.total)
		}
		// The removal emptied one position and filled none: hash's first
		// free one is that one if it comes first from its home.
		if home, _ := t.index.home(hash); (emptied-home)&t.index.mask < (pos-home)&t.index.mask {
			pos = emptied
		}
	} else {
		s = int32(len(t.slots))
		t.slots = t.slots[:s+1]
	}
	t.slots[s] = totalSlot{hash: hash, total: tot}
	t.index.at[pos] = position{mixed: uint32(mix64(hash)), slot: s + 1}
	t.order.linkNewest(s)
	return true
}

// rekey moves the object held under old (get just found it) to hash new,
// not held, keeping its place in the order; it returns its total.
func (t *totalTable) rekey(old, new uint64) *total {
	_, s := t.find(old)
	t.index.free(t.index.of(old, s))
	pos, _ := t.find(new)
	t.slots[s].hash = new
	t.index.at[pos] = position{mixed: uint32(mix64(new)), slot: s + 1}
	t.missedAt = -1
	return &t.slots[s].total
}

// each calls f on every object held, least recently seen first.
func (t *totalTable) each(f func(hash uint64, tot *total)) {
	for s := t.order.oldest; s >= 0; s = t.order.links[s].newer {
		f(t.slots[s].hash, &t.slots[s].total)
	}
}

// resized is a table of the given capacity holding the most recently seen
// objects of t that fit; the others are forgotten, oldest first. It
// returns how many were.
func (t *totalTable) resized(capacity int) (*totalTable, int) {
	out := newTotalTable(capacity, t.onEvict)
	dropped := max(len(t.slots)-capacity, 0)
	i := 0
	t.each(func(hash uint64, tot *total) {
		if i++; i <= dropped {
			if t.onEvict != nil {
				t.onEvict(hash, tot)
			}
			return
		}
		out.add(hash, *tot)
	})
	return out, dropped
}

// find returns the position holding hash and its slot, or the free
// position where it would go and -1.
func (t *totalTable) find(hash uint64) (pos uint64, slot int32) {
	pos, mixed := t.index.home(hash)
	for ; ; pos = t.index.next(pos) {
		p := t.index.at[pos]
		if p.slot == 0 {
			return pos, -1
		}
		if p.mixed == uint32(mixed) && t.slots[p.slot-1].hash == hash {
			return pos, p.slot - 1
		}
	}
}
