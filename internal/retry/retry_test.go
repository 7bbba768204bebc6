package retry

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/config/configretry"
)

var errDown = errors.New("503")

// failures returns the waits of n failures in a row.
func failures(b *Backoff, n int, err error) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, b.Failed(err))
	}
	return out
}

func TestBackoffDoublesToItsCapAndResets(t *testing.T) {
	b := Backoff{Policy: Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Max: time.Second}}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second},
		failures(&b, 6, errDown), "the first failure waits Initial; the wait doubles to the cap and stays")
	b.Reset()
	assert.Equal(t, []time.Duration{100 * ms, 200 * ms}, failures(&b, 2, errDown), "a success starts over")
}

func TestPolicyDelayEdges(t *testing.T) {
	p := Policy{Initial: time.Second, Multiplier: 3}
	assert.Equal(t, time.Second, p.Delay(0, nil), "no failure counted yet: as the first")
	assert.Equal(t, 9*time.Second, p.Delay(3, nil))
	assert.Equal(t, time.Duration(math.MaxInt64), p.Delay(1000, nil), "no cap: the wait saturates, never wraps")
	for _, m := range []float64{0, 0.5, 1} {
		p.Multiplier = m
		assert.Equal(t, time.Second, p.Delay(5, nil), "multiplier %v: the wait never shrinks", m)
	}
	assert.Zero(t, Policy{}.Delay(3, nil), "the zero policy never waits")
	assert.Zero(t, Policy{Multiplier: 2, Max: time.Second}.Delay(3, nil))
}

func TestRetryAfterIsHonouredBeyondTheCap(t *testing.T) {
	b := Backoff{Policy: Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Max: time.Second}}
	throttled := fmt.Errorf("patch event shop/a: %w", Throttled(errDown, 5*time.Second))
	assert.Equal(t, 5*time.Second, b.Failed(throttled), "the server's wait, longer than the cap, wins")
	assert.Equal(t, 200*time.Millisecond, b.Failed(errDown), "it counted as a failure; the next has no server wait")
	assert.Equal(t, 400*time.Millisecond, b.Failed(Throttled(errDown, time.Millisecond)), "a shorter server wait changes nothing")
	assert.ErrorIs(t, throttled, errDown, "the cause stays readable")
	assert.Equal(t, errDown.Error(), Throttled(errDown, time.Second).Error())
	assert.NoError(t, Throttled(nil, time.Second))
}

func TestJitterStaysWithinItsBounds(t *testing.T) {
	r := 0.0
	p := Policy{Initial: 4 * time.Second, Multiplier: 2, Max: 8 * time.Second, Jitter: 0.25, Rand: func() float64 { return r }}
	for _, c := range []struct {
		r    float64
		want time.Duration
	}{{0, 6 * time.Second}, {0.5, 8 * time.Second}, {0.75, 9 * time.Second}} {
		r = c.r
		assert.Equal(t, c.want, p.Delay(3, nil), "draw %v: ±25%% around the capped 8 s", c.r)
	}
	r = math.Nextafter(1, 0)
	assert.LessOrEqual(t, p.Delay(3, nil), 10*time.Second, "the largest draw stays within the upper bound")

	// With the real random source, every wait stays within the bounds.
	p.Rand = nil
	for range 1000 {
		d := p.Delay(1, errDown)
		assert.True(t, d >= 3*time.Second && d <= 5*time.Second, "4 s ±25%%: %v", d)
	}
}

// TestFromConfigReadsRetryOnFailure: the exporter's waits come from
// retry_on_failure.
func TestFromConfigReadsRetryOnFailure(t *testing.T) {
	p := FromConfig(configretry.NewDefaultBackOffConfig()) // 5 s, x1.5, max 30 s, randomization 0.5
	p.Rand = func() float64 { return 0.5 }
	assert.Equal(t, 5*time.Second, p.Delay(1, nil))
	assert.Equal(t, 7500*time.Millisecond, p.Delay(2, nil))
	assert.Equal(t, 30*time.Second, p.Delay(20, nil))
	p.Rand = func() float64 { return 0 }
	assert.Equal(t, 15*time.Second, p.Delay(20, nil), "randomization spreads it by half")
}
