package eventseriesprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// fanout is what the service builds behind the processor for a pipeline's
// exporters [first, file, sum]: the collector's fanoutconsumer (made by
// connector.NewLogsRouter as the service makes it) over first, and file
// and sum, read-only consumers that keep all they get, as the file
// exporter and the eventsum connector do.
type fanout struct {
	consumer.Logs
	queued, file, sum consumertest.LogsSink // queued: what queuedFanout's exporter sent
	refusals          atomic.Int64          // calls first refused
}

func (f *fanout) base() *consumertest.LogsSink { return &f.file }

// fanoutOver is a fanout whose first consumer is first.
func fanoutOver(first consumer.Logs) *fanout {
	f := &fanout{}
	f.build(first)
	return f
}

func (f *fanout) build(first consumer.Logs) {
	f.Logs = connector.NewLogsRouter(map[pipeline.ID]consumer.Logs{
		pipeline.NewIDWithName(pipeline.SignalLogs, "first"): counted{Logs: first, refusals: &f.refusals},
		pipeline.NewIDWithName(pipeline.SignalLogs, "file"):  &f.file,
		pipeline.NewIDWithName(pipeline.SignalLogs, "sum"):   &f.sum,
	})
}

// counted counts the refusals of a consumer.
type counted struct {
	consumer.Logs
	refusals *atomic.Int64
}

func (c counted) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	err := c.Logs.ConsumeLogs(ctx, ld)
	if err != nil {
		c.refusals.Add(1)
	}
	return err
}

// queuedFanout is a fanout whose first consumer is an exporter made by
// exporterhelper, mutating as the k8sevents exporter is, with a sending
// queue of one request and one consumer that blocks when full
// (block_on_overflow), whose sends wait out the outage (an API server
// down). stop shuts the exporter down: its queue is written out.
func queuedFanout(t *testing.T, o *outage) (f *fanout, stop func()) {
	f = &fanout{}
	q := exporterhelper.NewDefaultQueueConfig()
	q.QueueSize, q.NumConsumers, q.BlockOnOverflow = 1, 1, true
	q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	push := func(ctx context.Context, ld plog.Logs) error {
		if err := o.wait(ctx); err != nil {
			return err
		}
		return f.queued.ConsumeLogs(ctx, ld)
	}
	exp, err := exporterhelper.NewLogs(context.Background(), exportertest.NewNopSettings(component.MustNewType("queued")),
		&struct{}{}, push,
		exporterhelper.WithQueue(configoptional.Some(q)),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{}),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, exp.Shutdown(context.Background())) }) }
	t.Cleanup(stop)
	f.build(exp)
	return f, stop
}

// TestExactFanoutConsumersGetEachRecordOnce: behind the processor, a
// fanout of an exporter whose full queue blocks (block_on_overflow) and two
// read-only consumers. The exporter's sends stall from each of its sends in
// turn (its queue then fills, and the processor's call blocks two calls
// later, the last record of a series and the shutdown flush among them)
// for as long as the senders see one failure, or three. Every consumer
// gets every record once: each one's records are the exporter's, and
// exact.
func TestExactFanoutConsumersGetEachRecordOnce(t *testing.T) {
	for _, failures := range []int{1, 3} {
		for from := 1; from <= 4; from++ {
			t.Run(fmt.Sprintf("stalled from send %d for %d failures", from, failures), func(t *testing.T) {
				t.Parallel()
				o := newOutage(from, failures)
				f, stopExporter := queuedFanout(t, o)
				h := newHarnessWith(t, eventTime, time.Now, f)
				sendScript(t, h.p, o)
				stopped := make(chan error, 1)
				go func() { stopped <- h.p.Shutdown(context.Background()) }()
				o.end(t)
				require.NoError(t, <-stopped)
				stopExporter() // after the processors, as the service does

				assert.Zero(t, f.refusals.Load(), "a blocking queue blocks the processor's own delivery, never refuses it")
				queued := collect(t, &f.queued)
				for name, sink := range map[string]*consumertest.LogsSink{"file": &f.file, "sum": &f.sum} {
					assert.Equal(t, queued.counts, collect(t, sink).counts, "%s gets each record once, as the exporter does", name)
				}
				queued.requireExact(t, faultScriptOccurrences)
			})
		}
	}
}

// TestExactFanoutShutdownLetsTheDeliveryFinish: the collector stops while
// the processor's delivery of the last record of a series blocks in the
// fanout's first consumer (an exporter's full queue): the delivery is
// waited for, not cut short, so the other consumers do not get the record
// again when the shutdown sends what waits.
func TestExactFanoutShutdownLetsTheDeliveryFinish(t *testing.T) {
	o := newOutage(5, 1) // call 5: c's singleton, c's only record
	blocking := &outageSink{outage: o}
	f := fanoutOver(blocking)
	h := newHarnessWith(t, eventTime, time.Now, f)
	sendScript(t, h.p, o)
	o.awaitBegan(t) // the goroutine's delivery of c's record blocks
	stopped := make(chan error, 1)
	go func() { stopped <- h.p.Shutdown(context.Background()) }()
	require.Eventually(t, h.p.stopping, 30*time.Second, time.Millisecond)
	o.end(t)
	require.NoError(t, <-stopped)

	want := collect(t, blocking)
	want.requireExact(t, faultScriptOccurrences)
	assert.Equal(t, want.counts, collect(t, &f.file).counts, "file gets each record once")
	assert.Equal(t, want.counts, collect(t, &f.sum).counts, "sum gets each record once")
}

// TestExactFanoutPermanentRefusalOfOneConsumer: behind the processor, a
// fanout of a consumer that refuses everything for good (bad data for it),
// one that refuses once or for a while from each call in turn (the last
// record of a series among them), and a file. The fanout joins their
// answers; the batch is not dropped for the consumer that asked for a
// retry: it gets every record, exactly.
func TestExactFanoutPermanentRefusalOfOneConsumer(t *testing.T) {
	for _, refuseFor := range []int{1, 3} {
		for from := 1; from <= 5; from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				rejecting := &faultSink{refuse: -1, err: consumererror.NewPermanent(errors.New("bad data"))}
				retrying := &faultSink{plan: func(call int) bool { return call >= from && call < from+refuseFor }}
				f := &fanout{}
				f.Logs = connector.NewLogsRouter(map[pipeline.ID]consumer.Logs{
					pipeline.NewIDWithName(pipeline.SignalLogs, "rejecting"): rejecting,
					pipeline.NewIDWithName(pipeline.SignalLogs, "retrying"):  retrying,
					pipeline.NewIDWithName(pipeline.SignalLogs, "file"):      &f.file,
				})
				h := newHarnessWith(t, eventTime, time.Now, f)
				quickRetry(h.p)
				for _, ld := range faultScript() {
					require.True(t, send(t, h.p, ld, 5))
				}
				require.Eventually(t, func() bool {
					h.p.mu.Lock()
					defer h.p.mu.Unlock()
					return h.p.pending.records == 0
				}, 30*time.Second, time.Millisecond, "the retrying consumer takes what it refused")
				h.shutdown()

				require.Equal(t, refuseFor, retrying.refusedCalls(), "the fault happened")
				collect(t, retrying).requireExact(t, faultScriptOccurrences)
				assert.Zero(t, rejecting.LogRecordCount())
			})
		}
	}
}

// TestFanoutRefusalBound: the bound docs/processor.md states for a consumer
// that refuses (a persistent queue that cannot write its storage), from each of its
// calls in turn, once or for a while: the processor sends the batch again
// to the whole fanout, so each other consumer gets it once more per
// refusal, no more; the refusing consumer gets every record once.
func TestFanoutRefusalBound(t *testing.T) {
	for _, failures := range []int{1, 3} {
		for from := 1; from <= 5; from++ {
			t.Run(fmt.Sprintf("refused from call %d for %d failures", from, failures), func(t *testing.T) {
				o := newOutage(from, failures)
				o.refuse = true
				refusing := &outageSink{outage: o}
				f := fanoutOver(refusing)
				h := newHarnessWith(t, eventTime, time.Now, f)
				sendScript(t, h.p, o)
				o.end(t)
				settle(t, h.p)
				h.shutdown()

				require.Positive(t, f.refusals.Load(), "the consumer refused")
				collect(t, refusing).requireExact(t, faultScriptOccurrences)
				again := int64(f.file.LogRecordCount() - refusing.LogRecordCount())
				assert.Equal(t, refusedRetried(t, h), again, "file gets a refused batch once more per refusal")
				assert.Equal(t, f.file.LogRecordCount(), f.sum.LogRecordCount())
			})
		}
	}
}

// refusedRetried is refused_records{outcome=retried}.
func refusedRetried(t *testing.T, h *harness) int64 {
	m, err := h.tel.GetMetric("otelcol_processor_eventseries_refused_records")
	require.NoError(t, err)
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := dp.Attributes.Value("outcome"); v.AsString() == "retried" {
			n += dp.Value
		}
	}
	return n
}
