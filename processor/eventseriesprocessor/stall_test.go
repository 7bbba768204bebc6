package eventseriesprocessor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
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
				occurNow(t, h, "web-1", "web-2", "web-1")
				synctest.Wait()

				_, release := sink.blockCalls()
				time.Sleep(finish / 2)
				occurNow(t, h, "web-3") // a new Event: decided at once, then held by the next consumer
				time.Sleep(3 * finish)
				release()
				synctest.Wait()
				occurNow(t, h, "web-1", "web-2") // what waited upstream during the stall

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

// TestMetricsCountWhatAStallDecides: records decided when a stall ends (a
// heartbeat that fell due while the next consumer took nothing) are in the
// records metric and the open entries gauge as soon as they are handed
// on, not only at the next deadline: an operator (and the end-to-end
// tests) compare the records out with the exporter's writes once the
// pipeline is idle, and the next deadline may be hours away, or never.
func TestMetricsCountWhatAStallDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &faultSink{}
		h := newHarnessWith(t, func(cfg *Config) {
			cfg.Series.FinishAfter = 10 * time.Minute
			cfg.Series.HeartbeatInterval = time.Minute
		}, time.Now, sink)
		occurNow(t, h, "web-1", "web-1") // a series: it beats every minute
		synctest.Wait()

		_, release := sink.blockCalls()
		occurNow(t, h, "web-2") // held by the next consumer while web-1's beat falls due
		time.Sleep(3 * time.Minute)
		release()
		synctest.Wait()

		written := map[string]int64{}
		for _, r := range h.records() {
			written[r.event(t).SeriesState]++
		}
		require.Positive(t, written[k8sevent.StateOngoing], "a heartbeat was decided at the stall's end: %v", written)
		const records = "otelcol_processor_eventseries_records"
		for state, n := range written {
			require.Equal(t, n, counterSum(h.tel, records, "state="+state), "%s records handed on and counted", state)
		}
		require.Equal(t, int64(h.p.engine.Len()), gaugeValue(t, h.tel, "otelcol_processor_eventseries_open_entries"))
		h.shutdown()
	})
}

// occurNow hands h's processor one BackOff occurrence of each pod, now.
func occurNow(t *testing.T, h *harness, pods ...string) {
	t.Helper()
	for _, pod := range pods {
		ev := podEvent(pod, "BackOff", "Back-off restarting failed container")
		ev.Time = time.Now()
		require.NoError(t, h.p.ConsumeLogs(context.Background(), logsOf(ev)))
	}
}
