package engine

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"

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
	b := e.bucketOf(ev)
	// A timer record may fire at a deadline before a token this bucket
	// already gave (deadlines come due out of order within one Advance):
	// it takes its token at the bucket's own latest time, as the limiter
	// would otherwise step its clock back and refill that interval twice.
	at := max(e.now, b.last)
	// At most burst-1 kept: a count update can always pass once the bucket
	// is full, so a count is never stale for longer than burst/qps.
	kept := min(b.events, e.cfg.SpamBurst-1)
	if update && kept > 0 && b.lim.TokensAt(time.Unix(0, at)) < float64(kept+1) || !b.lim.AllowN(time.Unix(0, at), 1) {
		return false
	}
	b.last = at
	if e.cfg.Legacy && !st.inBucket {
		st.inBucket = true
		b.events++
	}
	return true
}

// bucketOf is the spam-filter bucket of ev's key, made if needed, as the
// most recently used.
func (e *Engine) bucketOf(ev *k8sevent.Event) *bucket {
	e.spamBuf = e.spamLayout.appendKey(e.spamBuf[:0], ev)
	b, ok := e.spam.get(e.spamBuf)
	if !ok {
		b = &bucket{}
		b.set(e.cfg.SpamQPS, e.cfg.SpamBurst, float64(e.cfg.SpamBurst), e.now)
		e.spam.add(string(e.spamBuf), b)
	}
	return b
}

// release takes st, which left the cache, out of its bucket's events.
func (e *Engine) release(st *state) {
	st.inBucket = false
	ev := st.ev.Event()
	e.spamBuf = e.spamLayout.appendKey(e.spamBuf[:0], &ev)
	if b, ok := e.spam.peek(e.spamBuf); ok {
		b.events = max(b.events-1, 0)
	}
}

// bucket is a spam-filter token bucket. The limiter changes its state
// (tokens, and when it last counted them) only when it allows a record:
// last keeps that time, and the tokens at last are the limiter's
// TokensAt(any earlier time), so that a snapshot restores it exactly.
type bucket struct {
	lim    rate.Limiter
	last   int64
	events int // legacy: events of this key already written
}

// set puts the bucket in the state "tokens at last", exactly: from empty, a
// limit of tokens per second for one second adds exactly 1.0 × tokens (the
// limiter offers no setter). A new bucket is full: when it was last counted
// does not matter, as time only adds to a full bucket what it caps.
func (b *bucket) set(qps float64, burst int, tokens float64, last int64) {
	at := time.Unix(0, last)
	b.lim.SetBurstAt(at.Add(-time.Second), burst) // the zero limiter is empty, with limit 0
	b.lim.SetLimitAt(at.Add(-time.Second), rate.Limit(tokens))
	b.lim.SetLimitAt(at, rate.Limit(qps))
	b.last = last
}

// tokens is what the limiter held when it last allowed a record (at b.last).
func (b *bucket) tokens() float64 {
	t := b.lim.TokensAt(time.Time{})
	if math.IsNaN(t) { // an infinite limit (qps .inf) counts 0 s × Inf: the bucket never drains
		return float64(b.lim.Burst())
	}
	return t
}

// restoreBuckets makes the spam buckets of a snapshot; those of another
// spam key are dropped.
func (e *Engine) restoreBuckets(buckets []savedBucket, spamKey string) error {
	keep := e.cfg.SpamFilter && spamKey == e.spamKey()
	e.spam.resize(max(len(buckets), e.cfg.MaxKeys))
	for _, saved := range buckets {
		if !(saved.Tokens >= 0) {
			return fmt.Errorf("spam bucket %q holds %g tokens", saved.Key, saved.Tokens)
		}
		if !keep {
			continue
		}
		b := &bucket{events: min(max(saved.Events, 0), e.states.Len())}
		b.set(e.cfg.SpamQPS, e.cfg.SpamBurst, saved.Tokens, saved.Last)
		if !e.spam.add(saved.Key, b) {
			return fmt.Errorf("spam bucket %q twice", saved.Key)
		}
	}
	return nil
}
