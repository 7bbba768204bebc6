// Package retry is the one backoff of the components that hold what failed
// and try it again: the receiver's watch and emit, the eventseries
// processor's delivery, the eventsum connector's send and the k8sevents
// exporter's writes. It decides how long to wait; each caller waits the way
// its loop is built (ctxwait.Sleep, its goroutine's timer, time.AfterFunc,
// a lane's retry time), since only some of them may block. It is shipped
// code, so it imports nothing of the harness.
package retry

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/config/configretry"
)

// Policy is how the wait before the next attempt grows while attempts fail
// in a row. The zero Policy never waits.
type Policy struct {
	Initial time.Duration // the wait after the first failure
	// Multiplier grows the wait per further failure (2: doubling). Below 1,
	// 0 included, the wait stays Initial: it never shrinks.
	Multiplier float64
	Max        time.Duration // caps the wait before the jitter; 0: no cap
	// Jitter spreads each wait uniformly over ±Jitter of itself (0 to 1,
	// retry_on_failure's randomization_factor), so that many callers that
	// failed together do not come back together. 0: exact waits.
	Jitter float64
	Rand   func() float64 // the jitter's draw in [0, 1); nil: math/rand/v2
}

// FromConfig is retry_on_failure's policy: initial_interval, multiplier,
// max_interval (0: no cap) and randomization_factor. enabled and
// max_elapsed_time stay with the caller, which knows when its first
// attempt failed.
func FromConfig(cfg configretry.BackOffConfig) Policy {
	return Policy{Initial: cfg.InitialInterval, Multiplier: cfg.Multiplier, Max: cfg.MaxInterval, Jitter: cfg.RandomizationFactor}
}

// Delay is the wait after failures failed attempts in a row (1: the first
// failure waits Initial), made longer to what the server asked for when
// err is Throttled: a server's Retry-After is honoured beyond Max.
func (p Policy) Delay(failures int, err error) time.Duration {
	d := 0.0
	if p.Initial > 0 {
		d = float64(p.Initial) * math.Pow(max(p.Multiplier, 1), float64(max(failures, 1)-1))
	}
	if m := float64(p.Max); m > 0 && d > m {
		d = m
	}
	if p.Jitter > 0 {
		r := rand.Float64
		if p.Rand != nil {
			r = p.Rand
		}
		spread := p.Jitter * d
		d = d - spread + r()*2*spread
	}
	return max(saturated(d), serverWait(err))
}

// saturated converts a wait, the longest time.Duration when it is beyond
// the range (a long run of failures without a cap).
func saturated(d float64) time.Duration {
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(max(d, 0))
}

// Backoff is the retries of one thing held: the failures in a row under
// its Policy. The zero count is the start, and where Reset returns. Its
// owner guards it (one goroutine, or the owner's lock).
type Backoff struct {
	Policy
	failures int
}

// Failed counts a failed attempt, err its error, and returns the wait
// before the next attempt.
func (b *Backoff) Failed(err error) time.Duration {
	b.failures++
	return b.Delay(b.failures, err)
}

// Reset starts over after an attempt went through: the next failure waits
// Initial again.
func (b *Backoff) Reset() { b.failures = 0 }

// Throttled is err with the wait the server asked for before the next
// attempt (a 429's Retry-After); nil when err is nil.
func Throttled(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return throttled{error: err, after: after}
}

type throttled struct {
	error
	after time.Duration
}

func (t throttled) Unwrap() error { return t.error }

// serverWait is what a Throttled error in err's chain asked for; 0: none.
func serverWait(err error) time.Duration {
	var t throttled
	if errors.As(err, &t) {
		return t.after
	}
	return 0
}
