package engine

// index finds a table's slots by a 64-bit hash: linear probing over an
// array of positions kept at most two thirds full, removal by moving back
// the later entries of a run (no tombstones to wear it out under churn).
// Both the totals table and the caches (lru) use it: a Go map from hash
// to slot cost a new series more than a third of its lookups, an insert
// and a delete per record under churn. The caller compares the slot's
// full hash (and key): the index only narrows the search.
type index struct {
	at   []position
	mask uint64
}

// position is one place of the index: its slot and the low half of the
// mixed hash, which both rejects most other hashes and gives the home
// position without reading the slot (a cache miss per probe otherwise).
type position struct {
	mixed uint32
	slot  int32 // slot index + 1; 0: free
}

// newIndex holds up to slots entries, with a position always free: a
// probe ends at one (1.5× rounds 1 down to 1, full with one entry).
func newIndex(slots int) index {
	n := 1
	for n < slots+slots/2 || n <= slots {
		n <<= 1
	}
	return index{at: make([]position, n), mask: uint64(n - 1)}
}

// fits reports whether the index takes n entries within its load limit.
func (x *index) fits(n int) bool { return 3*n <= 2*len(x.at) }

// home is where a probe for hash starts, and the hash mixed.
func (x *index) home(hash uint64) (pos, mixed uint64) {
	mixed = mix64(hash)
	return mixed & x.mask, mixed
}

func (x *index) next(pos uint64) uint64 { return (pos + 1) & x.mask }

// place puts slot s, of this mixed hash, at the first free position from
// its home, and returns it.
func (x *index) place(mixed uint64, s int32) uint64 {
	pos := mixed & x.mask
	for x.at[pos].slot != 0 {
		pos = x.next(pos)
	}
	x.at[pos] = position{mixed: uint32(mixed), slot: s + 1}
	return pos
}

// of is the position holding slot s, whose hash is hash (s must be held).
func (x *index) of(hash uint64, s int32) uint64 {
	pos, _ := x.home(hash)
	for x.at[pos].slot != s+1 {
		pos = x.next(pos)
	}
	return pos
}

// free empties pos, moving back each later entry of its run that may take
// its place. It returns the one position it left empty (pos, or the place
// of the last entry it moved): every other position keeps what it held.
func (x *index) free(pos uint64) (emptied uint64) {
	for {
		x.at[pos] = position{}
		next := pos
		for {
			next = x.next(next)
			p := x.at[next]
			if p.slot == 0 {
				return pos
			}
			home := uint64(p.mixed) & x.mask
			if (next-home)&x.mask >= (next-pos)&x.mask { // pos lies on its way from home
				break
			}
		}
		x.at[pos] = x.at[next]
		pos = next
	}
}
