package engine

// pool keeps what the caches pushed out (states, spam buckets, aggregates)
// for the next ones to reuse: under churn every record makes one of each
// and pushes one out. A thing pushed out may still be in use until the
// engine's call returns (Flush walks a list of states that folding may
// push out), so it is reused only from the next call on: put holds it
// back, settle (at the start of each call) releases it, emptied.
type pool[T any] struct {
	pending, free []*T
	empty         func(*T) // leaves nothing to keep alive, the capacity to reuse
}

// poolMax bounds what a pool keeps: a call pushes out one thing per new
// one at most, except a restore shrinking the caches.
const poolMax = 64

// get returns an emptied T, reused if one was released.
func (p *pool[T]) get() *T {
	n := len(p.free)
	if n == 0 {
		return new(T)
	}
	x := p.free[n-1]
	p.free[n-1] = nil
	p.free = p.free[:n-1]
	return x
}

// put holds x back for reuse once the current call is over.
func (p *pool[T]) put(x *T) {
	if len(p.pending)+len(p.free) < poolMax {
		p.pending = append(p.pending, x)
	}
}

// settle releases what put held back: no call is using it any more.
func (p *pool[T]) settle() {
	for i, x := range p.pending {
		p.empty(x)
		p.free = append(p.free, x)
		p.pending[i] = nil
	}
	p.pending = p.pending[:0]
}

func emptyState(st *state) { *st = state{} }

// gen outlives reuse (states holding b see it changed), and so does the
// memory of its key (see keyOf).
func emptyBucket(b *bucket) { *b = bucket{gen: b.gen, key: b.key[:0]} }

func emptyAggregate(a *aggregate) {
	clear(a.notes)
	*a = aggregate{notes: a.notes[:0], key: a.key[:0], gen: a.gen}
}
