package eventseriesprocessor

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/otel/trace"
)

// TestDeliveryCarriesTheCallersContext: the records a caller's batch
// decided reach the next consumer with the caller's client metadata and
// trace context, but not its cancellation; a timer's record (the
// finished record of the series) carries no caller's.
func TestDeliveryCarriesTheCallersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &faultSink{}
		h := newHarnessWith(t, nil, time.Now, sink)
		addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4317}
		span := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{1, 2, 3},
			SpanID:     trace.SpanID{4, 5, 6},
			TraceFlags: trace.FlagsSampled,
		})
		ctx, cancel := context.WithCancel(context.Background())
		ctx = client.NewContext(ctx, client.Info{Addr: addr, Metadata: client.NewMetadata(map[string][]string{"tenant": {"blue"}})})
		ctx = trace.ContextWithSpanContext(ctx, span)

		ev := podEvent("web-1", "BackOff", "x")
		ev.Time = time.Now()
		require.NoError(t, h.p.ConsumeLogs(ctx, logsOf(ev, ev, ev)))
		cancel() // the sender is answered and goes away; its records are the processor's
		synctest.Wait()
		time.Sleep(h.p.cfg.Series.FinishAfter) // the series ends: its finished record, from a timer
		synctest.Wait()

		ctxs := sink.Contexts()
		require.Len(t, ctxs, 2, "the caller's records, then the timer's")
		d := collect(t, sink)
		require.Equal(t, []string{"singleton", "started", "finished"}, d.states[sink.name(t)])

		got := ctxs[0]
		info := client.FromContext(got)
		assert.Equal(t, addr, info.Addr, "the caller's address")
		assert.Equal(t, []string{"blue"}, info.Metadata.Get("tenant"), "the caller's metadata")
		assert.Equal(t, span, trace.SpanContextFromContext(got), "the caller's span context")
		assert.NoError(t, got.Err(), "the caller's cancellation does not reach the delivery")

		timer := ctxs[1]
		assert.Nil(t, client.FromContext(timer).Addr, "a timer's record has no caller")
		assert.Empty(t, client.FromContext(timer).Metadata.Get("tenant"), "a timer's record has no caller")
		assert.False(t, trace.SpanContextFromContext(timer).IsValid(), "a timer's record has no caller's trace")
	})
}
