package engine

import "github.com/hashicorp/golang-lru/v2/simplelru"

// cache holds at most size entries by key, the least recently used pushed
// out first, with simplelru's order of events (an entry added goes in
// before the oldest is pushed out; onEvict is called on every removal once
// the cache is consistent again, so it may use the cache). A Go map finds an
// entry by a key being built (m[string(b)] makes no string: every record
// looks up its series by a key of every field), and simplelru keeps the
// entries' order, keyed by the entry itself.
type cache[V comparable] struct {
	byKey   map[string]V
	order   *simplelru.LRU[V, string] // entry -> its key
	onEvict func(key string, v V)
}

func newCache[V comparable](size int, onEvict func(key string, v V)) (*cache[V], error) {
	c := &cache[V]{byKey: map[string]V{}, onEvict: onEvict}
	var err error
	c.order, err = simplelru.NewLRU(size, func(v V, key string) {
		delete(c.byKey, key)
		if c.onEvict != nil {
			c.onEvict(key, v)
		}
	})
	return c, err
}

// Len is the number of entries.
func (c *cache[V]) Len() int { return c.order.Len() }

// get returns key's entry and makes it the most recently used.
func (c *cache[V]) get(key []byte) (V, bool) {
	v, ok := c.byKey[string(key)]
	if ok {
		c.order.Get(v)
	}
	return v, ok
}

// peek returns key's entry, leaving the order as it is.
func (c *cache[V]) peek(key []byte) (V, bool) {
	v, ok := c.byKey[string(key)]
	return v, ok
}

// touch makes v, an entry, the most recently used.
func (c *cache[V]) touch(v V) { c.order.Get(v) }

// add puts v, new, under key as the most recently used, and pushes the
// least recently used out if that makes one too many. It reports whether
// key was new.
func (c *cache[V]) add(key string, v V) bool {
	if _, held := c.byKey[key]; held {
		return false
	}
	c.byKey[key] = v
	c.order.Add(v, key)
	return true
}

// remove takes v out, calling onEvict.
func (c *cache[V]) remove(v V) { c.order.Remove(v) }

// resize sets the size, pushing out the least recently used entries that no
// longer fit; it returns how many.
func (c *cache[V]) resize(size int) int { return c.order.Resize(size) }

// values lists the entries, least recently used first.
func (c *cache[V]) values() []V { return c.order.Keys() }

// keyOf is v's key.
func (c *cache[V]) keyOf(v V) string {
	key, _ := c.order.Peek(v)
	return key
}
