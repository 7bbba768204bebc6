// Package reviewcache remembers what the API server answered a review
// (a TokenReview, a SubjectAccessReview) until a deadline, for a bounded
// number of keys, and lets concurrent lookups of one key share one review:
// a burst of requests from one new client costs the API server one request.
//
// A shared review runs detached from its callers, as k8s.io/apiserver's
// cached authenticator runs its shared lookups: the first caller's context
// ending (its client went away) does not fail the others waiting for the
// same answer. Each caller waits at most until its own context ends.
package reviewcache

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Review asks the API server. It answers the value and how long it may be
// believed; 0 or less: not remembered. An error is never remembered.
type Review[V any] func(ctx context.Context) (V, time.Duration, error)

// Cache maps keys to reviewed values. Safe for concurrent use.
type Cache[K comparable, V any] struct {
	now     func() time.Time
	timeout time.Duration // bounds each review, which no caller's context does
	mu      sync.Mutex
	entries *simplelru.LRU[K, entry[V]]
	flights map[K]*flight[V]
}

type entry[V any] struct {
	v     V
	until time.Time
}

// flight is one review under way; the callers of its key wait for it.
type flight[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// New makes a cache of at most size keys (at least 1), the least recently
// used one evicted first, each review bounded by timeout; now is its clock.
func New[K comparable, V any](size int, timeout time.Duration, now func() time.Time) *Cache[K, V] {
	entries, err := simplelru.NewLRU[K, entry[V]](max(size, 1), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Cache[K, V]{now: now, timeout: timeout, entries: entries, flights: map[K]*flight[V]{}}
}

// Get answers k's value while it is remembered (hit), or has review run,
// once for every caller of k that comes while it runs, and remembers its
// answer for as long as review says. review runs on a context of its own
// (ctx's values, not its cancellation, and the cache's timeout): a caller
// whose context ends leaves with its context's error, and the review goes
// on for the others.
func (c *Cache[K, V]) Get(ctx context.Context, k K, review Review[V]) (v V, hit bool, err error) {
	c.mu.Lock()
	if e, ok := c.entries.Get(k); ok {
		if c.now().Before(e.until) {
			c.mu.Unlock()
			return e.v, true, nil
		}
		c.entries.Remove(k)
	}
	f := c.start(ctx, k, review)
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.v, false, f.err
	case <-ctx.Done():
		return v, false, ctx.Err()
	}
}

// Refresh has review run for k in the background, unless one runs
// already, and remembers its answer as Get does; what is remembered until
// then is still answered. For renewing an answer before it runs out.
func (c *Cache[K, V]) Refresh(ctx context.Context, k K, review Review[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start(ctx, k, review)
}

// start is k's flight, started if none is under way; c.mu is held.
func (c *Cache[K, V]) start(ctx context.Context, k K, review Review[V]) *flight[V] {
	if f, ok := c.flights[k]; ok {
		return f
	}
	f := &flight[V]{done: make(chan struct{})}
	c.flights[k] = f
	detached, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	go func() {
		defer cancel()
		var ttl time.Duration
		f.v, ttl, f.err = review(detached)
		c.mu.Lock()
		delete(c.flights, k)
		if f.err == nil && ttl > 0 {
			c.entries.Add(k, entry[V]{v: f.v, until: c.now().Add(ttl)})
		}
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// Until is when k's remembered answer runs out; false when none is.
func (c *Cache[K, V]) Until(k K) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries.Peek(k)
	return e.until, ok && c.now().Before(e.until)
}

// Len is the number of keys remembered, expired ones not yet looked up
// included.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}
