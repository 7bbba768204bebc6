package eventseriesprocessor

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// resendSeries is the input of the resend tests: the occurrences of one
// series (no Event uid, no count: an app's records), each its own batch as
// an OTLP client sends it, marshaled; the last one is the series' last.
func resendSeries(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		ev := podEvent("web-1", "BackOff", "Back-off restarting failed container")
		ev.Time = t0.Add(time.Duration(i) * time.Second)
		b, err := (&plog.ProtoMarshaler{}).MarshalLogs(logsOf(ev))
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// request decodes payload afresh, as a receiver does for each request.
func request(t *testing.T, payload []byte) plog.Logs {
	t.Helper()
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(payload)
	require.NoError(t, err)
	return ld
}

// resendRun starts a processor on dir (event time, storage, the log) whose
// next consumer refuses its first refuse calls (the records the log
// replays after a crash).
func resendRun(t *testing.T, dir string, clock *clocktesting.FakeClock, refuse int) (r *run, stop func()) {
	t.Helper()
	h, stop := fileStorage(t, dir)
	r = newRunAt(t, eventTime, clock.Now)
	r.p.saveEvery = time.Hour // the test saves
	r.sink.setRefuse(refuse, nil)
	require.NoError(t, r.p.Start(context.Background(), h))
	return r, stop
}

// TestExactCrashBeforeTheAnswer: the collector logs and counts the last
// occurrence of a series and dies before its sender has the answer; after
// the restart the log replays it and the sender sends it again, while the
// next consumer refuses the replayed records once, or three times. The
// resend is answered and not counted: the series ends at its occurrences,
// in one object; so too when the collector dies a second time after a save
// (the memory of the batch is saved with the state).
func TestExactCrashBeforeTheAnswer(t *testing.T) {
	for _, refuse := range []int{0, 1, 3} {
		for _, twice := range []bool{false, true} {
			t.Run(fmt.Sprintf("refused %d, killed twice %v", refuse, twice), func(t *testing.T) {
				const n = 3
				series := resendSeries(t, n)
				dir := t.TempDir()
				clock := clocktesting.NewFakeClock(t0)
				first, stop := resendRun(t, dir, clock, 0)
				for _, payload := range series {
					require.NoError(t, first.p.ConsumeLogs(context.Background(), request(t, payload)))
					settle(t, first.p)
				}
				crash(t, first.p) // the last answer never reached the sender
				stop()

				clock.Step(time.Minute) // the restart
				runs := []*run{first}
				second, stop := resendRun(t, dir, clock, refuse)
				runs = append(runs, second)
				if twice {
					require.NoError(t, second.p.save(context.Background()))
					crash(t, second.p)
					stop()
					second, stop = resendRun(t, dir, clock, 0)
					runs = append(runs, second)
				}
				defer stop()
				require.True(t, send(t, second.p, request(t, series[n-1]), 5), "the sender's resend")
				if !twice {
					assert.Equal(t, refuse, second.sink.refusedCalls(), "the fault happened")
				}
				require.NoError(t, second.p.Shutdown(context.Background()))

				var sinks []interface{ AllLogs() []plog.Logs }
				for _, r := range runs {
					sinks = append(sinks, r.sink)
				}
				got := collect(t, sinks...)
				assert.Equal(t, int64(n), sum(finalCounts(got)), "the series ends at its occurrences: %v", got.counts)
				assert.Len(t, got.names, 1)
				for _, names := range got.names {
					assert.Len(t, names, 1, "one object")
				}
				metadatatest.AssertEqualProcessorEventseriesResentBatches(t, second.tel,
					[]metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
			})
		}
	}
}

// TestExactSenderGivesUpWhileCounted: the sender's deadline ends while its
// batch, the last occurrence of a series, is written to the log: the batch
// is counted, the answer comes too late, and the sender sends it again,
// once or three times: the resends are answered and not counted. A batch
// identical to it counts as new once resendWindow has passed; within it, it
// is taken for a resend (the bound docs/processor.md states).
func TestExactSenderGivesUpWhileCounted(t *testing.T) {
	for _, resends := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d resends", resends), func(t *testing.T) {
			const n = 3
			series := resendSeries(t, n)
			clock := clocktesting.NewFakeClock(t0)
			real, stop := fileStorage(t, t.TempDir())
			defer stop()
			fs := &faultStorage{Extension: real[storageID].(storage.Extension)}
			r := newRunAt(t, eventTime, clock.Now)
			r.p.saveEvery = time.Hour
			require.NoError(t, r.p.Start(context.Background(), host{storageID: fs}))
			for _, payload := range series[:n-1] {
				require.True(t, send(t, r.p, request(t, payload), 1))
			}

			ctx, deadline := context.WithCancel(context.Background())
			fs.mu.Lock()
			fs.afterSet = deadline // the deadline passes while the batch is logged
			fs.mu.Unlock()
			require.NoError(t, r.p.ConsumeLogs(ctx, request(t, series[n-1])))
			require.Error(t, ctx.Err(), "the answer came after the sender's deadline")
			fs.mu.Lock()
			fs.afterSet = nil
			fs.mu.Unlock()
			for range resends {
				require.True(t, send(t, r.p, request(t, series[n-1]), 1), "the sender's resend")
			}
			settle(t, r.p)
			r.p.mu.Lock()
			counted := r.p.engine.Stats.Occurrences
			r.p.mu.Unlock()
			assert.Equal(t, int64(n), counted, "the resends are not counted")

			clock.Step(resendWindow - time.Second)
			require.True(t, send(t, r.p, request(t, series[n-1]), 1))
			clock.Step(time.Second)
			require.True(t, send(t, r.p, request(t, series[n-1]), 1), "past resendWindow: a new batch")
			require.NoError(t, r.p.Shutdown(context.Background()))
			got := collect(t, r.sink)
			got.requireExact(t, n+1)
			metadatatest.AssertEqualProcessorEventseriesResentBatches(t, r.tel,
				[]metricdata.DataPoint[int64]{{Value: int64(resends) + 1}}, metricdatatest.IgnoreTimestamp())
		})
	}
}

// TestExactNetworkSenderResendsATakenBatch: a batch of a network sender
// (an OTLP receiver's request: the context names the client's address) is
// remembered although its answer reached the sender: tier 1 sends it
// again when another part of the app's request failed. Its resends count
// nothing; the same batch from an in-process source (no address) is a new
// one each time, as a receiver never sends one twice.
func TestExactNetworkSenderResendsATakenBatch(t *testing.T) {
	series := resendSeries(t, 2)
	clock := clocktesting.NewFakeClock(t0)
	r, stop := resendRun(t, t.TempDir(), clock, 0)
	defer stop()
	peer := client.NewContext(context.Background(), client.Info{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4317}})
	for range 3 {
		require.NoError(t, r.p.ConsumeLogs(peer, request(t, series[0])), "the app's request and its resends")
	}
	for range 2 {
		require.NoError(t, r.p.ConsumeLogs(context.Background(), request(t, series[1])), "in-process: two occurrences")
	}
	settle(t, r.p)
	r.p.mu.Lock()
	counted := r.p.engine.Stats.Occurrences
	r.p.mu.Unlock()
	assert.Equal(t, int64(3), counted, "the network batch once, the in-process one twice")
	clock.Step(resendWindow)
	require.NoError(t, r.p.ConsumeLogs(peer, request(t, series[0])))
	settle(t, r.p)
	r.p.mu.Lock()
	counted = r.p.engine.Stats.Occurrences
	r.p.mu.Unlock()
	assert.Equal(t, int64(4), counted, "an hour on, the same bytes are a new batch")
	require.NoError(t, r.p.Shutdown(context.Background()))
	metadatatest.AssertEqualProcessorEventseriesResentBatches(t, r.tel,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
}
