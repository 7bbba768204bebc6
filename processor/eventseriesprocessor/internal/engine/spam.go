package engine

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// allow takes a token from the spam-filter bucket of ev's key for a record
// of st. In legacy mode the bucket keeps one token for each event of its
// key already written (events), burst-1 at most: the token the write of its last count
// takes when the event goes idle or at shutdown, instead of a write beyond
// the filter. A count update (update: a record of an event already
// written) may not take a kept token; a new event may (it would be
// invisible otherwise). So a storm that exhausts the bucket spends on count
// updates all but the tokens the last counts need, and legacy mode writes
// no more than client-go's recorder, which spends them all and loses those
// counts.
func (e *Engine) allow(ev *k8sevent.Event, st *state, update bool) bool {
	if !e.cfg.SpamFilter {
		return true
	}
	b := e.bucketOf(ev, st)
	// A timer record may fire at a deadline before a token this bucket
	// already gave (deadlines come due out of order within one Advance):
	// it takes its token at the bucket's own latest time, as the limiter
	// would otherwise step its clock back and refill that interval twice.
	at := max(e.now, b.last)
	// At most burst-1 kept: a count update can always pass once the bucket
	// is full, so a count is never stale for longer than burst/qps.
	kept := min(b.events, e.cfg.SpamBurst-1)
	if update && kept > 0 && b.lim.tokensAt(at) < float64(kept+1) || !b.lim.allow(at) {
		return false
	}
	b.last = at
	if e.cfg.Legacy && !st.inBucket {
		st.inBucket = true
		b.events++
	}
	return true
}

// bucketOf is the spam-filter bucket of ev's key, made if needed, for a
// record of st, as the most recently used. A state whose key holds every
// field of the spam key (legacy events and aggregates, summaries) has one
// bucket for all its records: it keeps it, and finds it again without
// building the spam key while the bucket is in the cache (gen: a bucket
// pushed out changes its generation).
func (e *Engine) bucketOf(ev *k8sevent.Event, st *state) *bucket {
	if b := st.bucket; b != nil && b.gen == st.bucketGen {
		e.spam.order.touch(b.slot)
		return b
	}
	e.spamBuf = e.spamLayout.appendKey(e.spamBuf[:0], ev)
	b, h, ok := e.spam.getHash(borrow(e.spamBuf))
	if !ok {
		b = e.bucketPool.get()
		b.set(e.cfg.SpamQPS, e.cfg.SpamBurst, float64(e.cfg.SpamBurst), e.now)
		e.spam.insert(e.keyOf(&b.key, e.spamBuf), h, b)
	}
	b.slot = e.spam.lastSlot
	if e.spamCovered[st.packed[0]&0x7f] {
		st.bucket, st.bucketGen = b, b.gen
	}
	return b
}

// release takes st out of its bucket's events: st left the cache. ev is
// st's Event, nil to rebuild it.
func (e *Engine) release(st *state, ev *k8sevent.Event) {
	st.inBucket = false
	if b := st.bucket; b != nil && b.gen == st.bucketGen && !e.byKey {
		// The bucket st keeps is still the one at its spam key (see
		// bucketOf): no need to rebuild st's Event and its spam key, which
		// cost a legacy event pushed out by churn ~2,700 instructions.
		b.events = max(b.events-1, 0)
		return
	}
	if ev == nil {
		ev = &e.scratch
		layoutOf(st, &e.series).unpack(st.packed, ev)
	}
	e.spamBuf = e.spamLayout.appendKey(e.spamBuf[:0], ev)
	if b, ok := e.spam.Peek(borrow(e.spamBuf)); ok {
		b.events = max(b.events-1, 0)
	}
}

// keyOf copies key into *mem, reused from the thing that held it before
// (a pooled spam bucket or aggregation group), and returns the copy as a
// string for a cache key: under churn every record makes a bucket (and a
// group in legacy mode), and their keys were an allocation each. The
// memory is written again only once its thing was pushed out and the call
// that pushed it out is over (see pool), and these keys never leave the
// engine (a snapshot copies them), so no string still in use changes.
// byKey (tests) allocates every key, as before.
func (e *Engine) keyOf(mem *[]byte, key []byte) string {
	if e.byKey {
		return string(key)
	}
	*mem = append((*mem)[:0], key...)
	return unsafe.String(unsafe.SliceData(*mem), len(*mem))
}

// bucket is a spam-filter token bucket. The limiter changes its state
// (tokens, and when it last counted them) only when it allows a record:
// last keeps that time, and the tokens at last are the limiter's at any
// earlier time, so that a snapshot restores it exactly.
type bucket struct {
	lim    limiter
	last   int64
	events int    // legacy: events of this key already written (not in a snapshot: restore recounts them)
	slot   int32  // its slot in the cache, while it is in it
	gen    uint32 // incremented when it is pushed out (see bucketOf)
	key    []byte // holds its key in the cache, reused with the bucket (see keyOf)
}

// set puts the bucket in the state "tokens at last", exactly (see
// limiter.set). A new bucket is full: when it was last counted does not
// matter, as time only adds to a full bucket what it caps.
func (b *bucket) set(qps float64, burst int, tokens float64, last int64) {
	b.lim.set(qps, burst, tokens, last)
	b.last = last
}

// tokens is what the limiter held when it last allowed a record (at b.last).
func (b *bucket) tokens() float64 {
	// No time counted, as rate's TokensAt(time.Time{}); an infinite limit
	// (qps .inf) counts 0 s × Inf: NaN, the bucket never drains.
	t := b.lim.tokensAt(math.MinInt64)
	if math.IsNaN(t) {
		return float64(b.lim.burst)
	}
	return t
}

// restoreBuckets reads the spam buckets of a snapshot (format in
// snapshot.go); those of another spam key are read and dropped.
func (e *Engine) restoreBuckets(r *reader, spamKey string) error {
	keep := e.cfg.SpamFilter && spamKey == e.spamKey()
	n := r.entries(len(r.b), "spam buckets")
	e.spam.Resize(max(n, e.cfg.MaxKeys))
	for range n {
		key, tokens, last := r.str(), math.Float64frombits(r.u64()), r.int()
		events := min(r.uint(), uint64(e.states.Len()))
		if r.err == nil && !(tokens >= 0) {
			return fmt.Errorf("spam bucket %q holds %g tokens", key, tokens)
		}
		if r.err != nil || !keep {
			continue
		}
		b := new(bucket)
		b.set(e.cfg.SpamQPS, e.cfg.SpamBurst, tokens, last)
		b.events = int(events)
		if !add(e.spam, key, b) {
			return fmt.Errorf("spam bucket %q twice", key)
		}
	}
	return nil
}
