package engine

import (
	"math"
	"time"
)

// limiter is the token bucket of golang.org/x/time/rate.Limiter as the spam
// filter uses it (a token per record, at engine times in unix ns): the
// same float64 steps in the same order, so the same decisions and the
// same tokens bit for bit (TestLimiterAgreesWithRate), and the snapshot
// keeps them as before. Without time.Time, its saturating arithmetic and
// its mutex, which cost a new bucket (a record under churn) ~1,300
// instructions.
type limiter struct {
	limit  float64 // tokens per second; rateInf: no limit
	burst  int
	tokens float64 // at last
	last   int64
}

// rateInf is rate.Inf: a limit that allows everything, burst or not.
const rateInf = math.MaxFloat64

// set puts the limiter in the state "tokens at last", as the three calls
// bucket.set made on a zero rate.Limiter left it: empty with limit 0 and
// burst burst at last-1s, then the limit tokens for that second (capped
// at burst), then the limit qps at last.
func (l *limiter) set(qps float64, burst int, tokens float64, last int64) {
	*l = limiter{limit: tokens, burst: burst}
	l.tokens = l.tokensAfter(int64(time.Second)) // from 0, capped
	l.limit, l.last = qps, last
}

// tokensAt is what the bucket holds at t (rate.Limiter.TokensAt): a t
// before last counts no time.
func (l *limiter) tokensAt(t int64) float64 {
	last := min(l.last, t)
	elapsed := t - last
	if elapsed < 0 { // overflowed: time.Time.Sub saturates
		elapsed = math.MaxInt64
	}
	return l.tokensAfter(elapsed)
}

// tokensAfter is the tokens at last plus elapsed ns of refill, capped at
// burst (rate.Limiter.advance).
func (l *limiter) tokensAfter(elapsed int64) float64 {
	var delta float64
	if l.limit > 0 {
		delta = time.Duration(elapsed).Seconds() * l.limit
	}
	tokens := l.tokens + delta
	if burst := float64(l.burst); tokens > burst {
		tokens = burst
	}
	return tokens
}

// allow takes a token at t if one is there (rate.Limiter.AllowN(t, 1)).
func (l *limiter) allow(t int64) bool {
	if l.limit == rateInf {
		return true
	}
	tokens := l.tokensAt(t) - 1
	if 1 > l.burst || tokens < 0 && waitFor(-tokens, l.limit) > 0 {
		return false
	}
	l.last, l.tokens = t, tokens
	return true
}

// waitFor is how long missing tokens take to come (rate's
// durationFromTokens): a wait under 1 ns is none.
func waitFor(missing, limit float64) time.Duration {
	if limit <= 0 {
		return math.MaxInt64
	}
	d := (missing / limit) * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(d)
}
