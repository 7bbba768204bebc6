package k8seventexporter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestCallerBehindAFullQueueGivesUpWithItsContext: the queue holds one
// request and its write fails for a while (503 on every create), so the
// next request blocks in the queue while holding the turn that keeps
// stamps in queue order. A third caller whose context ends while it waits
// for that turn returns its context's error at once, its records not
// queued (the sender retries them), instead of waiting behind the blocked
// one. Once the API server answers again every record is written exactly
// once, the retried one included.
func TestCallerBehindAFullQueueGivesUpWithItsContext(t *testing.T) {
	fr := newRig(t).withProxy(t)
	exp, tel := fr.outageExporter(t, componenttest.NewNopHost(), func(c *Config) {
		c.API = k8sevent.APIEventsV1
		q := c.Queue.Get()
		q.Sizer, q.QueueSize, q.NumConsumers = exporterhelper.RequestSizerTypeRequests, 1, 1
		q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	})
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	ordered, ok := exp.(*orderedLogs)
	require.True(t, ok, "the factory returns the stamping exporter")

	outage := fr.proxy.Add(faultproxy.Rule{Verb: "POST", Path: apiPath(k8sevent.APIEventsV1) + "/namespaces/shop/events",
		Action: faultproxy.Fail, Code: 503})
	names := []string{"web-1.turn-a", "web-1.turn-b", "web-1.turn-c"}
	logsOf := func(name string) plog.Logs {
		ev := record(name, k8sevent.StateSingleton, 1, t0)
		ld := plog.NewLogs()
		k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		return ld
	}

	require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(names[0])))
	require.Eventually(t, func() bool { return outage.Acted() >= 1 }, 30*time.Second, 10*time.Millisecond,
		"the first request is being written, and fails")

	blocked := make(chan error, 1)
	go func() { blocked <- exp.ConsumeLogs(context.Background(), logsOf(names[1])) }()
	require.Eventually(t, func() bool { return len(ordered.turn) == 1 }, 30*time.Second, 10*time.Millisecond,
		"the second request holds the turn, waiting for room in the queue")

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- ordered.ConsumeLogs(ctx, logsOf(names[2])) }()
	cancel()
	select {
	case err := <-gaveUp:
		require.Error(t, err)
		assert.True(t, errors.Is(err, context.Canceled), "the caller's own context error: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("a caller whose context ended still waits behind the request blocked in the full queue")
	}
	select {
	case err := <-blocked:
		t.Fatalf("the second request left the full queue while the first still fails: %v", err)
	default:
	}

	outage.Remove()
	require.NoError(t, <-blocked, "the second request is queued once the first is written")
	require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(names[2])), "the sender's retry")
	for _, name := range names {
		require.Eventually(t, func() bool {
			core, events, err := fr.occurrences(t, name)
			return err == nil && core == 1 && events == 1
		}, 30*time.Second, 10*time.Millisecond, "%s written with its count", name)
	}
	assert.Equal(t, len(names), fr.objectsAbout(t, "web-1"), "one object per record, the given-up one not written twice")
	assert.Eventually(t, func() bool {
		return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created") == int64(len(names))
	}, 30*time.Second, 10*time.Millisecond, "each record created once")
}
