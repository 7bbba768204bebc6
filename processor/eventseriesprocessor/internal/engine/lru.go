package engine

import (
	"errors"
	"hash/maphash"
)

// lru is a cache of at most size entries by string key, the least recently
// used pushed out first: the part of simplelru's interface the engine uses,
// with its order of events (an entry added goes in before the oldest is
// pushed out; onEvict is called on every removal, once the cache is
// consistent again, so it may use the cache). The entries live in one
// slice, linked in order of use by index, and a removed entry's place is
// reused: under churn (every record a new key, one pushed out per record)
// adding costs no allocation, where simplelru allocated a list element
// per entry. The index (see index) finds a key's slot by its hash, kept
// in the slot, so that pushing an entry out does not hash its key again:
// keys are long (every field of a series key), and hashing them was a
// third of a new series' cost. Keys sharing a hash take positions of
// their own; a lookup compares the keys.
type lru[V any] struct {
	size    int
	n       int
	index   index // grows with the slots
	hash    func(string) uint64
	slots   []lruSlot[V]
	order   order // of the slots
	free    int32 // first free slot, the others linked by their older; -1: none
	onEvict func(key string, v V)
	// lastSlot is the slot getHash found, or insert filled, last.
	lastSlot int32
}

type lruSlot[V any] struct {
	key  string
	val  V
	hash uint64
}

func newLRU[V any](size int, onEvict func(key string, v V)) (*lru[V], error) {
	if size <= 0 {
		return nil, errors.New("must provide a positive size")
	}
	seed := maphash.MakeSeed() // the order of entries never depends on it
	return &lru[V]{size: size, index: newIndex(8), hash: func(k string) uint64 { return maphash.String(seed, k) },
		order: newOrder(0), free: -1, onEvict: onEvict}, nil
}

// Len is the number of entries.
func (c *lru[V]) Len() int { return c.n }

// find returns key's hash and slot, -1 if it is not held.
func (c *lru[V]) find(key string) (h uint64, s int32) {
	h = c.hash(key)
	for pos, mixed := c.index.home(h); ; pos = c.index.next(pos) {
		p := c.index.at[pos]
		if p.slot == 0 {
			return h, -1
		}
		if sl := &c.slots[p.slot-1]; p.mixed == uint32(mixed) && sl.hash == h && sl.key == key {
			return h, p.slot - 1
		}
	}
}

// Get returns key's value and makes it the most recently used.
func (c *lru[V]) Get(key string) (v V, ok bool) {
	v, _, ok = c.getHash(key)
	return v, ok
}

// getHash is Get, also returning key's hash: an insert of the key, if it
// is not held, need not hash it again.
func (c *lru[V]) getHash(key string) (v V, h uint64, ok bool) {
	h, s := c.find(key)
	if s < 0 {
		return v, h, false
	}
	c.order.touch(s)
	c.lastSlot = s
	return c.slots[s].val, h, true
}

// peekHash is Peek, also returning key's hash and slot (-1: not held).
func (c *lru[V]) peekHash(key string) (v V, h uint64, s int32) {
	if h, s = c.find(key); s >= 0 {
		v = c.slots[s].val
	}
	return v, h, s
}

// Peek returns key's value, leaving the order as it is.
func (c *lru[V]) Peek(key string) (v V, ok bool) {
	_, s := c.find(key)
	if s < 0 {
		return v, false
	}
	return c.slots[s].val, true
}

// Add puts v under key as the most recently used, and pushes the least
// recently used out if that makes one too many. It reports whether one was
// pushed out.
func (c *lru[V]) Add(key string, v V) (evicted bool) {
	h, s := c.find(key)
	if s >= 0 {
		c.order.touch(s)
		c.slots[s].val = v
		return false
	}
	return c.insert(key, h, v)
}

// insert is Add of a key not held, whose hash is h (see getHash).
func (c *lru[V]) insert(key string, h uint64, v V) (evicted bool) {
	s := c.free
	if s >= 0 {
		c.free = c.order.links[s].older
	} else {
		s = int32(len(c.slots))
		c.slots = append(c.slots, lruSlot[V]{})
		c.order.links = append(c.order.links, link{})
	}
	c.n++
	if !c.index.fits(c.n) {
		c.grow()
	}
	c.slots[s] = lruSlot[V]{key: key, val: v, hash: h}
	c.lastSlot = s
	_, mixed := c.index.home(h)
	c.index.place(mixed, s)
	c.order.linkNewest(s)
	if c.n > c.size {
		c.remove(c.order.oldest)
		return true
	}
	return false
}

// Remove removes key, calling onEvict, and reports whether it was there.
func (c *lru[V]) Remove(key string) bool {
	_, s := c.find(key)
	if s >= 0 {
		c.remove(s)
	}
	return s >= 0
}

// Resize sets the size, pushing out the least recently used entries that
// no longer fit; it returns how many.
func (c *lru[V]) Resize(size int) (evicted int) {
	evicted = max(c.n-size, 0)
	for range evicted {
		c.remove(c.order.oldest)
	}
	c.size = size
	return evicted
}

// Keys lists the keys, least recently used first.
func (c *lru[V]) Keys() []string {
	keys := make([]string, 0, c.n)
	for s := c.order.oldest; s >= 0; s = c.order.links[s].newer {
		keys = append(keys, c.slots[s].key)
	}
	return keys
}

// Values lists the values, least recently used first.
func (c *lru[V]) Values() []V {
	values := make([]V, 0, c.n)
	for s := c.order.oldest; s >= 0; s = c.order.links[s].newer {
		values = append(values, c.slots[s].val)
	}
	return values
}

// remove takes slot s out, frees it and calls onEvict.
func (c *lru[V]) remove(s int32) {
	c.order.unlink(s)
	sl := &c.slots[s]
	key, v := sl.key, sl.val
	c.index.free(c.index.of(sl.hash, s))
	c.n--
	*sl = lruSlot[V]{} // holds no key or value for the garbage collector to keep
	c.order.links[s].older, c.free = c.free, s
	if c.onEvict != nil {
		c.onEvict(key, v)
	}
}

// grow doubles the index, placing the entries again.
func (c *lru[V]) grow() {
	c.index = newIndex(len(c.index.at)) // newIndex takes 1.5×: the next power of two up
	for s := c.order.oldest; s >= 0; s = c.order.links[s].newer {
		_, mixed := c.index.home(c.slots[s].hash)
		c.index.place(mixed, s)
	}
}
