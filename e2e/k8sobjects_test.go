package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// TestK8sObjectsChartPreset: the records most clusters already have.
// testdata/config/official-chart.yaml, the logs pipeline of the official
// opentelemetry-collector chart's kubernetesEvents preset with
// docs/official-chart.md's values: contrib's k8sobjects receiver as the
// preset configures it (events.k8s.io Events, watch mode, DELETED left
// out; here with the field selector that keeps the exporter's own Events
// out) watches API server A → memory_limiter → eventseries → batch → the
// k8sevents exporter, which writes to B (the one key a test changes). Into
// A go, at once, a storm without compression (stormsend.Raw: core/v1
// Events whose count is patched at every occurrence, which the receiver
// sees through events.k8s.io/v1 as deprecatedCount) and one through
// client-go's events.k8s.io recorder (series.count). Per (namespace,
// regarding object, reason), B's final counts add up to the occurrences
// sent (the Raw storm) and to A's counts (both); each series is one object
// in B, no count in B is ever seen going down, nothing is dropped for good.
func TestK8sObjectsChartPreset(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	raw := mergeStorms(stormWindow(t, "crashloop", 2*time.Minute), stormWindow(t, "cronjob", 2*time.Minute))
	series := stormWindow(t, "imagepull", 2*time.Minute)
	rawPairs, seriesPairs := pairsOf(raw), pairsOf(series)
	for p := range rawPairs {
		require.NotContains(t, seriesPairs, p, "the two storms' pairs are apart, so each one's totals can be checked")
	}
	rig := newFaultRig(ctx, t, "k8sobjects", mergeStorms(raw, series), mirrorSpec{})
	toB := fmt.Sprintf("exporters:\n  k8sevents:\n    kubeconfig: %q\n    reporting_controller: %s\n    qps: 100\n    burst: 200\n",
		rig.spec.kubeB, rig.spec.controller)
	// auth_type kubeConfig of the k8sobjects receiver has no path key: it
	// reads $KUBECONFIG.
	c := startCollectorEnv(t, rig.dir, readyConfig(t, "official-chart.yaml"),
		[]string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + rig.spec.kubeA}, toB)
	// The receiver watches from the resourceVersion of a list it makes
	// once started: what A holds before that is never seen.
	awaitWatchStarted(ctx, t, rig.src, rig.dst, rig.nss, "k8sobjects-start", 2*time.Minute)

	const speed = 16
	run := startRawStorm(ctx, rig.srcSrv.RESTConfig(), raw, speed, 0)
	var wg sync.WaitGroup
	var recorded stormsend.Stats
	var recordErr error
	wg.Go(func() {
		recorded, recordErr = stormsend.Record(ctx, rig.srcSrv.RESTConfig(), series,
			stormsend.Options{Speed: speed, MaxDuration: 2 * time.Minute}, stormsend.RecorderEvents)
	})
	st := run.wait(ctx, t)
	wg.Wait()
	require.NoError(t, recordErr, "tools/events storm")
	require.Equal(t, len(raw), st.Occurrences)
	t.Logf("storm: raw %d occurrences, %d writes in %v; events recorder %d occurrences, %d writes, %d failures in %v",
		st.Occurrences, st.Writes, st.Elapsed.Round(time.Millisecond),
		recorded.Occurrences, recorded.Writes, recorded.Failures, recorded.Elapsed.Round(time.Millisecond))

	rig.awaitMirrored(ctx, t, "k8sobjects")
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute), "SIGTERM: the processor flushes its open series, the queue drains")

	r, drops := rig.compare(ctx, t)
	for p, n := range rawPairs {
		assert.Equal(t, n, r.a.Pairs[p], "%v: A holds every occurrence sent", p)
		assert.Equal(t, n, r.b.Pairs[p], "%v: B's final counts add up to the occurrences sent", p)
	}
	for p := range seriesPairs {
		assert.Positive(t, r.b.Pairs[p], "%v: in B", p)
	}
	aEvents, err := listEvents(ctx, rig.src, inNamespaces(rig.nss...))
	require.NoError(t, err)
	withSeries := 0
	for i := range aEvents {
		if aEvents[i].Series != nil {
			withSeries++
		}
	}
	assert.Positive(t, withSeries, "the recorder's Events in A have series: the receiver saw series.count")
	assertExact(t, r)
	keys, multi := multiObjectKeys(r.bEvents)
	assert.Zero(t, multi, "of %d series in B, some are more than one object", keys)
	assert.Empty(t, drops, "counts that went down in B")
}
