package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// The spam filter's limiter decides as golang.org/x/time/rate.Limiter, set
// as bucket.set set it before (three calls on a zero limiter), and holds
// the same tokens bit for bit, at every time asked (earlier than its last
// too, and the zero time a snapshot asks at), over random limits (rate.Inf
// and +Inf included), bursts (0 and negative included), starting tokens
// and times (ties, steps back, sub-nanosecond refills, the ends of int64).
func TestLimiterAgreesWithRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pick := func(vs ...float64) float64 { return vs[rng.IntN(len(vs))] }
	for run := range 3000 {
		qps := pick(0, 1.0/7, 0.5, 1, 3, 1e-9, 1e9, 1e300, float64(rate.Inf), math.Inf(1), rng.Float64()*100)
		burst := []int{0, 1, 3, 25, -1, 1 << 20}[rng.IntN(6)]
		tokens := pick(0, 1, 2.5, float64(burst), float64(burst)+1, 1e-12, math.Inf(1), rng.Float64()*30)
		last := []int64{t0.UnixNano(), 0, -1, math.MinInt64 + int64(time.Hour), math.MaxInt64 - int64(time.Hour)}[rng.IntN(5)]

		var want rate.Limiter
		wantAt := time.Unix(0, last)
		want.SetBurstAt(wantAt.Add(-time.Second), burst)
		want.SetLimitAt(wantAt.Add(-time.Second), rate.Limit(tokens))
		want.SetLimitAt(wantAt, rate.Limit(qps))
		var got limiter
		got.set(qps, burst, tokens, last)

		now := last
		for step := range 40 {
			switch rng.IntN(6) {
			case 0: // a step back
				now -= rng.Int64N(int64(time.Minute))
			case 1: // a tie
			case 2: // far
				if now < math.MaxInt64/2 {
					now += rng.Int64N(math.MaxInt64 / 2)
				}
			case 3: // under a nanosecond's worth at high limits
				now++
			default:
				now += rng.Int64N(int64(10 * time.Second))
			}
			at := time.Unix(0, now)
			require.Equal(t, math.Float64bits(want.TokensAt(at)), math.Float64bits(got.tokensAt(now)),
				"run %d step %d: tokens at %d", run, step, now)
			require.Equal(t, want.AllowN(at, 1), got.allow(now), "run %d step %d: allow at %d", run, step, now)
			require.Equal(t, math.Float64bits(want.TokensAt(time.Time{})), math.Float64bits(got.tokensAt(math.MinInt64)),
				"run %d step %d: tokens held", run, step)
		}
	}
}
