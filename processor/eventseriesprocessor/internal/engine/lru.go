package engine

import "errors"

// lru is a cache of at most size entries by string key, the least recently
// used pushed out first: the part of simplelru's interface the engine uses,
// with its order of events (an entry added goes in before the oldest is
// pushed out; onEvict is called on every removal, once the cache is
// consistent again, so it may use the cache). The entries live in one
// slice, linked in order of use by index, and a removed entry's place is
// reused: under churn (every record a new key, one pushed out per record)
// adding costs no allocation, where simplelru allocated a list element
// per entry.
type lru[V any] struct {
	size           int
	index          map[string]int32
	slots          []lruSlot[V]
	free           int32 // first free slot, the others linked by older; -1: none
	newest, oldest int32 // -1 when empty
	onEvict        func(key string, v V)
}

type lruSlot[V any] struct {
	key          string
	val          V
	newer, older int32 // -1: none
}

func newLRU[V any](size int, onEvict func(key string, v V)) (*lru[V], error) {
	if size <= 0 {
		return nil, errors.New("must provide a positive size")
	}
	return &lru[V]{size: size, index: make(map[string]int32), free: -1, newest: -1, oldest: -1, onEvict: onEvict}, nil
}

// Len is the number of entries.
func (c *lru[V]) Len() int { return len(c.index) }

// Get returns key's value and makes it the most recently used.
func (c *lru[V]) Get(key string) (v V, ok bool) {
	s, ok := c.index[key]
	if !ok {
		return v, false
	}
	c.touch(s)
	return c.slots[s].val, true
}

// Peek returns key's value, leaving the order as it is.
func (c *lru[V]) Peek(key string) (v V, ok bool) {
	s, ok := c.index[key]
	if !ok {
		return v, false
	}
	return c.slots[s].val, true
}

// Add puts v under key as the most recently used, and pushes the least
// recently used out if that makes one too many. It reports whether one was
// pushed out.
func (c *lru[V]) Add(key string, v V) (evicted bool) {
	if s, ok := c.index[key]; ok {
		c.touch(s)
		c.slots[s].val = v
		return false
	}
	s := c.free
	if s >= 0 {
		c.free = c.slots[s].older
	} else {
		s = int32(len(c.slots))
		c.slots = append(c.slots, lruSlot[V]{})
	}
	c.slots[s] = lruSlot[V]{key: key, val: v}
	c.linkNewest(s)
	c.index[key] = s
	if len(c.index) > c.size {
		c.remove(c.oldest)
		return true
	}
	return false
}

// Remove removes key, calling onEvict, and reports whether it was there.
func (c *lru[V]) Remove(key string) bool {
	s, ok := c.index[key]
	if ok {
		c.remove(s)
	}
	return ok
}

// Resize sets the size, pushing out the least recently used entries that
// no longer fit; it returns how many.
func (c *lru[V]) Resize(size int) (evicted int) {
	evicted = max(len(c.index)-size, 0)
	for range evicted {
		c.remove(c.oldest)
	}
	c.size = size
	return evicted
}

// Keys lists the keys, least recently used first.
func (c *lru[V]) Keys() []string {
	keys := make([]string, 0, len(c.index))
	for s := c.oldest; s >= 0; s = c.slots[s].newer {
		keys = append(keys, c.slots[s].key)
	}
	return keys
}

// Values lists the values, least recently used first.
func (c *lru[V]) Values() []V {
	values := make([]V, 0, len(c.index))
	for s := c.oldest; s >= 0; s = c.slots[s].newer {
		values = append(values, c.slots[s].val)
	}
	return values
}

// remove takes slot s out, frees it and calls onEvict.
func (c *lru[V]) remove(s int32) {
	c.unlink(s)
	sl := &c.slots[s]
	key, v := sl.key, sl.val
	delete(c.index, key)
	*sl = lruSlot[V]{older: c.free} // holds no key or value for the garbage collector to keep
	c.free = s
	if c.onEvict != nil {
		c.onEvict(key, v)
	}
}

func (c *lru[V]) touch(s int32) {
	if s != c.newest {
		c.unlink(s)
		c.linkNewest(s)
	}
}

func (c *lru[V]) unlink(s int32) {
	sl := &c.slots[s]
	if sl.newer >= 0 {
		c.slots[sl.newer].older = sl.older
	} else {
		c.newest = sl.older
	}
	if sl.older >= 0 {
		c.slots[sl.older].newer = sl.newer
	} else {
		c.oldest = sl.newer
	}
}

func (c *lru[V]) linkNewest(s int32) {
	sl := &c.slots[s]
	sl.newer, sl.older = -1, c.newest
	if c.newest >= 0 {
		c.slots[c.newest].newer = s
	} else {
		c.oldest = s
	}
	c.newest = s
}
