package k8seventexporter

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestSequentialRequestsNeverStall: what BenchmarkFreshness sends through
// the collector, without it. One record per request, each sent only once
// the one before it is on the API server: 100 objects' singletons, then
// their series at 2 (200 requests). With the default queue (its batcher
// merges what arrives within 200 ms, so each request waits for the flush)
// and with batching off, every record is written (none waits for a stamp
// that never comes) and every object ends with its exact count.
func TestSequentialRequestsNeverStall(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprintf("batch-%v", batch), func(t *testing.T) {
			r := newRig(t)
			exp, tel := r.start(t, func(cfg *Config) {
				cfg.QPS, cfg.Burst = 1000, 1000
				if !batch {
					cfg.Queue.Get().Batch = configoptional.None[exporterhelper.BatchConfig]()
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
