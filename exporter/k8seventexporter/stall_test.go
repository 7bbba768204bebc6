package k8seventexporter

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestSequentialRequestsNeverStall: what BenchmarkFreshness sends through
// the collector, without it. One record per request, each sent only once
// the one before it is on the API server: 100 objects' singletons, then
// their series at 2 (200 requests). Without a queue (each push answered
// once written) and with a persistent one (its batcher merges what arrives
// within its flush timeout, so each request waits for the flush: 10 ms
// here, as a stall does not depend on it and 200 sequential waits of the
// default 200 ms only slow the test), every record is written, each once,
// and every object ends with its exact count.
func TestSequentialRequestsNeverStall(t *testing.T) {
	t.Parallel()
	for _, queued := range []bool{false, true} {
		t.Run(fmt.Sprintf("queued-%v", queued), func(t *testing.T) {
			r := newRig(t)
			start := r.start
			if queued {
				start = r.startQueued
			}
			exp, tel := start(t, func(cfg *Config) {
				cfg.QPS, cfg.Burst = 1000, 1000
				if queued {
					cfg.Queue.Get().Batch.Get().FlushTimeout = 10 * time.Millisecond
				}
			})
			const objects = 100
			name := func(i int) string { return fmt.Sprintf("web-1.seq-%03d", i) }
			for _, count := range []int64{1, 2} {
				state := map[int64]string{1: k8sevent.StateSingleton, 2: k8sevent.StateStarted}[count]
				for i := range objects {
					send(t, exp, record(name(i), state, count, t0.Add(time.Duration(count)*time.Second)))
					require.Eventually(t, func() bool {
						_, got, err := r.occurrences(t, name(i))
						return err == nil && got == count
					}, 60*time.Second, 5*time.Millisecond, "%s at %d", name(i), count)
				}
			}
			want := map[string]int32{}
			for i := range objects {
				want[name(i)] = 2
			}
			r.waitForCounts(t, want)
			assert.Equal(t, int64(objects), counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created"))
			assert.Equal(t, int64(objects), counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched"))
		})
	}
}
