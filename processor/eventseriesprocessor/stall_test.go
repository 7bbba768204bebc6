package eventseriesprocessor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExactStallLongerThanFinishAfter: a next consumer that takes nothing
// for longer than finish_after (an exporter without a queue, retrying a
// namespace whose writes fail) holds the processor's input, so the
// occurrences of that time arrive only once it takes records again. The
// stall is not idle time: the series go on as one object each, their
// counts exact, and none ends during it.
func TestExactStallLongerThanFinishAfter(t *testing.T) {
	for _, mode := range []string{modeSeries, modeLegacy} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := &faultSink{}
				h := newHarnessWith(t, func(cfg *Config) { cfg.Mode = mode }, time.Now, sink)
				finish := h.p.cfg.Series.FinishAfter
				occur := func(pods ...string) {
					for _, pod := range pods {
						ev := podEvent(pod, "BackOff", "Back-off restarting failed container")
						ev.Time = time.Now()
						require.NoError(t, h.p.ConsumeLogs(context.Background(), logsOf(ev)))
					}
				}
				occur("web-1", "web-2", "web-1")
				synctest.Wait()

				_, release := sink.blockCalls()
				time.Sleep(finish / 2)
				occur("web-3") // a new Event: decided at once, then held by the next consumer
				time.Sleep(3 * finish)
				release()
				synctest.Wait()
				occur("web-1", "web-2") // what waited upstream during the stall

				time.Sleep(2 * finish) // every series ends
				synctest.Wait()
				h.shutdown()
				d := collect(t, h.sink)
				d.requireExact(t, 6)
				require.Len(t, d.names, 3, "three series: %v", d.names)
			})
		})
	}
}
