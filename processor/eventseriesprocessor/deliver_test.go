package eventseriesprocessor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/retry"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// faultScript is a storm in event time whose output meets every kind of
// record: A's singleton and started, A's finished (a timer record decided
// while B is observed), B's singleton and started, C's singleton, and the
// shutdown flush of B. Each series' last occurrence is folded into its
// count, so its end (finished, flush) carries a count not written before.
// 7 occurrences; 6 calls to the next consumer when none is refused.
func faultScript() []plog.Logs {
	at := func(pod, reason string, d time.Duration) plog.Logs {
		ev := podEvent(pod, reason, "x")
		ev.Time = t0.Add(d)
		return logsOf(ev)
	}
	return []plog.Logs{
		at("a", "BackOff", 0),
		at("a", "BackOff", time.Second),
		at("a", "BackOff", 2*time.Second), // folded into the count: no record
		at("b", "Unhealthy", 10*time.Minute),
		at("b", "Unhealthy", 10*time.Minute+time.Second),
		at("b", "Unhealthy", 10*time.Minute+1500*time.Millisecond), // folded
		at("c", "Failed", 10*time.Minute+2*time.Second),
	}
}

const faultScriptOccurrences = 7

// noBackgroundRetry leaves every retry to the callers, so that the calls
// to the next consumer are numbered the same in every run.
func noBackgroundRetry(p *eventSeriesProcessor) {
	p.backoff = retry.Backoff{Policy: retry.Policy{Initial: time.Hour}}
}

// quickRetry makes the goroutine send refused records again within
// milliseconds.
func quickRetry(p *eventSeriesProcessor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backoff = retry.Backoff{Policy: retry.Policy{Initial: time.Millisecond, Multiplier: 2, Max: 10 * time.Millisecond}}
}

// send is a sender that retries what is refused, as the receivers do, at
// most attempts times. It reports whether the batch was taken.
func send(t *testing.T, p *eventSeriesProcessor, ld plog.Logs, attempts int) bool {
	t.Helper()
	for range attempts {
		err := p.ConsumeLogs(context.Background(), ld)
		if err == nil {
			return true
		}
		require.False(t, consumererror.IsPermanent(err), "a refusal before counting is retryable: %v", err)
	}
	return false
}

// TestFaultRefusedRecordsAreNeverLost: the next consumer refuses once, for
// a while, or until the restart, starting at each of its calls in turn:
// every record (the last of a series, the shutdown flush included) is
// delivered in the end, through a restart when the refusal outlasts the
// run, and the properties hold: the final counts add up to the
// occurrences, a count never goes down, each series is one object.
func TestFaultRefusedRecordsAreNeverLost(t *testing.T) {
	for _, refuseFor := range []int{1, 3, -1} {
		for from := 1; from <= 6; from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				first, second := refuseThenRestart(t, faultScript(), from, refuseFor, nil)
				d := collect(t, first.sink, second.sink)
				d.requireExact(t, faultScriptOccurrences)
				assert.Len(t, d.names, 3, "three series")
				assert.Equal(t, int64(faultScriptOccurrences), occurrencesCounted(t, first, second),
					"a batch refused before it was counted is counted once, when the sender sends it again")
			})
		}
	}
}

// refuseThenRestart sends script (in event time, with storage) to a
// processor whose next consumer refuses refuseFor calls (-1: until the
// restart) from call from on; its senders retry up to 5 times, then the
// collector restarts and the rest of the script goes to the second run.
// taken, if set, is called with each batch once the processor took it.
func refuseThenRestart(t *testing.T, script []plog.Logs, from, refuseFor int, taken func(plog.Logs)) (first, second *run) {
	t.Helper()
	dir := t.TempDir()
	clock := func() time.Time { return t0.Add(time.Hour) }
	h, stop := fileStorage(t, dir)
	first = newRunAt(t, eventTime, clock)
	noBackgroundRetry(first.p)
	first.sink.plan = func(call int) bool { return call >= from && (refuseFor < 0 || call < from+refuseFor) }
	require.NoError(t, first.p.Start(context.Background(), h))
	next := 0
	for next < len(script) && send(t, first.p, script[next], 5) {
		if taken != nil {
			taken(script[next])
		}
		next++
	}
	require.True(t, next == len(script) || refuseFor < 0, "a refusal that ends lets every batch in")
	require.NoError(t, first.p.Shutdown(context.Background()), "what is refused at shutdown is kept in storage")
	stop()
	require.Positive(t, first.sink.refusedCalls(), "the fault happened")

	h, stop = fileStorage(t, dir)
	defer stop()
	second = newRunAt(t, eventTime, clock)
	noBackgroundRetry(second.p)
	require.NoError(t, second.p.Start(context.Background(), h))
	for ; next < len(script); next++ {
		require.True(t, send(t, second.p, script[next], 1))
	}
	require.NoError(t, second.p.Shutdown(context.Background()))
	return first, second
}

// occurrencesCounted adds up the occurrences metric of the runs.
func occurrencesCounted(t *testing.T, runs ...*run) int64 {
	var n int64
	for _, r := range runs {
		n += counterSum(r.tel, "otelcol_processor_eventseries_occurrences")
	}
	return n
}

// TestFaultRefusedSingletonThenShutdown: a singleton the next consumer
// refuses, then shutdown: the singleton goes out at shutdown, not answered
// with a permanent error and never emitted.
func TestFaultRefusedSingletonThenShutdown(t *testing.T) {
	sink := &faultSink{}
	h := newHarnessWith(t, eventTime, time.Now, sink)
	sink.setRefuse(1, nil)
	ev := podEvent("web-1", "BackOff", "x")
	ev.Time = t0
	require.NoError(t, h.p.ConsumeLogs(context.Background(), logsOf(ev)),
		"counted and kept: a retry would count it twice")
	settle(t, h.p)
	require.Equal(t, 1, sink.refusedCalls())
	h.shutdown()
	collect(t, sink).requireExact(t, 1)
}

// TestFaultRefusedTimerRecordIsRetried: processing time; the finished
// record of a series (its last) is refused a few times by the timer's
// delivery: the goroutine sends it again until it is taken.
func TestFaultRefusedTimerRecordIsRetried(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	sink := &faultSink{}
	h := newHarnessWith(t, nil, clock.Now, sink)
	quickRetry(h.p)
	ev := podEvent("web-1", "BackOff", "x")
	ev.Time = t0
	h.consume(logsOf(ev, ev, ev))
	sink.setRefuse(3, nil)
	clock.Step(createDefaultConfig().Series.FinishAfter)
	h.p.wakeUp()
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 3 }, 10*time.Second, time.Millisecond,
		"the finished record arrives after the refusals")
	d := collect(t, sink)
	d.requireExact(t, 3)
	assert.Equal(t, []string{"singleton", "started", "finished"}, d.states[sink.name(t)])
	assert.Equal(t, 3, sink.refusedCalls())
	metadatatest.AssertEqualProcessorEventseriesRefusedRecords(t, h.tel, []metricdata.DataPoint[int64]{
		{Value: 3, Attributes: attribute.NewSet(attribute.String("outcome", "retried"))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestDeliveryRetryBacksOffAndStartsOver: while the next consumer refuses
// what waits, the goroutine's wait doubles from 200 ms to its 5 s cap; a
// delivery that goes through starts it over. The processor is not started:
// the test calls deliver and nextWait as its goroutine (run) does.
func TestDeliveryRetryBacksOffAndStartsOver(t *testing.T) {
	sink := &faultSink{}
	p, err := newProcessor(processortest.NewNopSettings(processortest.NopType), createDefaultConfig(), sink, time.Now)
	require.NoError(t, err)
	ev := podEvent("web-1", "BackOff", "x")
	require.NoError(t, p.pending.push(logsOf(ev), caller{}, false))
	ms := time.Millisecond
	assert.Equal(t, 200*ms, p.nextWait(false), "records wait, none refused yet")
	sink.setRefuse(7, nil)
	var waits []time.Duration
	for range 7 {
		require.Error(t, p.deliver(context.Background()))
		waits = append(waits, p.nextWait(true))
	}
	assert.Equal(t, []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * time.Second, 5 * time.Second}, waits)
	require.NoError(t, p.deliver(context.Background()))
	require.NoError(t, p.pending.push(logsOf(ev), caller{}, false))
	sink.setRefuse(1, nil)
	require.Error(t, p.deliver(context.Background()))
	assert.Equal(t, 200*ms, p.nextWait(true), "a delivery that went through starts the wait over")
	require.NoError(t, p.deliver(context.Background()))
	assert.Equal(t, 2, sink.LogRecordCount(), "both records delivered")
}

// TestFaultPermanentRefusalIsDroppedAndCounted: what the next consumer
// refuses for good is dropped and counted, and does not hold up the rest.
func TestFaultPermanentRefusalIsDroppedAndCounted(t *testing.T) {
	sink := &faultSink{}
	h := newHarnessWith(t, eventTime, time.Now, sink)
	sink.setRefuse(1, consumererror.NewPermanent(fmt.Errorf("bad data")))
	a, b := podEvent("a", "BackOff", "x"), podEvent("b", "BackOff", "x")
	a.Time, b.Time = t0, t0
	h.consume(logsOf(a))
	h.consume(logsOf(b))
	h.shutdown()
	d := collect(t, sink)
	assert.Len(t, d.counts, 1, "a's record was dropped, b's went on: %v", d.counts)
	metadatatest.AssertEqualProcessorEventseriesRefusedRecords(t, h.tel, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("outcome", "dropped"))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestFaultShutdownRefusedWithoutStorageSaysWhatIsLost: without storage,
// records refused at shutdown cannot be kept: Shutdown says so.
func TestFaultShutdownRefusedWithoutStorageSaysWhatIsLost(t *testing.T) {
	sink := &faultSink{}
	h := newHarnessWith(t, eventTime, time.Now, sink)
	ev := podEvent("a", "BackOff", "x")
	ev.Time = t0
	h.consume(logsOf(ev, ev, ev)) // the flush has count 3 to write
	sink.setRefuse(-1, nil)
	err := h.p.Shutdown(context.Background())
	require.ErrorContains(t, err, "1 records lost at shutdown (no storage)")
}

// TestFaultCallerGivesUpWhileDownstreamBlocks: a blocking exporter queue
// answers the caller's context error when the caller gives up (an OTLP
// client's deadline). The records of a counted batch stay and go out once
// the queue moves; a batch that was waiting for its turn is refused
// uncounted, so its retry is exact.
func TestFaultCallerGivesUpWhileDownstreamBlocks(t *testing.T) {
	sink := &faultSink{}
	h := newHarnessWith(t, eventTime, time.Now, sink)
	a := podEvent("a", "BackOff", "x")
	a.Time = t0
	entered, release := sink.blockCalls()
	defer release()
	ctx, giveUp := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.p.ConsumeLogs(ctx, logsOf(a)) }()
	<-entered // a's singleton is in the blocked queue

	b := podEvent("b", "BackOff", "x")
	b.Time = t0
	waiting, cancelWaiting := context.WithCancel(context.Background())
	cancelWaiting()
	refused := make(chan error, 1)
	go func() { refused <- h.p.ConsumeLogs(waiting, logsOf(b)) }()
	select {
	case err := <-refused:
		require.Error(t, err, "b waits for its turn behind a; its sender gave up")
		require.False(t, consumererror.IsPermanent(err))
	case <-time.After(30 * time.Second): // generous: the answer is immediate
		release()
		t.Fatal("a sender that gave up waits for the blocked next consumer")
	}

	giveUp()
	require.NoError(t, <-done, "a is counted: its record is kept, not refused")
	release()
	require.NoError(t, h.p.ConsumeLogs(context.Background(), logsOf(b)), "b's sender retries")
	h.shutdown()
	d := collect(t, sink)
	d.requireExact(t, 2)
	assert.Len(t, d.names, 2)
	metadatatest.AssertEqualProcessorEventseriesOccurrences(t, h.tel, []metricdata.DataPoint[int64]{{Value: 2}},
		metricdatatest.IgnoreTimestamp())
}

// blockedRun is the state of TestFaultBlockedDownstream while the next
// consumer blocks: a's series open, b's singleton stuck in the queue.
func blockedRun(t *testing.T, dir string, clock *clocktesting.FakeClock) (r *run, stop func(), release func(), sent chan error) {
	h, stop := fileStorage(t, dir)
	r = newRunAt(t, nil, clock.Now)
	r.p.saveEvery = time.Hour // the test saves
	require.NoError(t, r.p.Start(context.Background(), h))
	r.feed(t, watched(), clock.Now(), 1, 2, 3)

	entered, release := r.sink.blockCalls()
	b := podEvent("b", "Unhealthy", "x")
	b.Time = clock.Now()
	sent = make(chan error, 1)
	go func() { sent <- r.p.ConsumeLogs(context.Background(), logsOf(b)) }()
	<-entered
	clock.Step(time.Minute) // a minute of processing time with the queue blocked

	saved := make(chan error, 1)
	go func() { saved <- r.p.save(context.Background()) }()
	select {
	case err := <-saved:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // generous: a save takes milliseconds
		release()
		t.Fatal("the state save waits for the blocked next consumer")
	}
	return r, stop, release, sent
}

// TestFaultBlockedDownstream: while the next consumer
// blocks (an exporter queue full during an outage), the state is saved,
// with the record stuck in the queue; nothing counted is lost whether the
// collector then stops cleanly or is killed.
func TestFaultBlockedDownstream(t *testing.T) {
	t.Run("shutdown", func(t *testing.T) {
		dir := t.TempDir()
		clock := clocktesting.NewFakeClock(time.Now())
		first, stop, release, sent := blockedRun(t, dir, clock)
		release()
		require.NoError(t, <-sent)
		require.NoError(t, first.p.Shutdown(context.Background()))
		stop()
		second := restartAfterBlock(t, dir, clock)
		d := collect(t, first.sink, second.sink)
		d.requireExact(t, 6)
	})
	t.Run("killed", func(t *testing.T) {
		dir := t.TempDir()
		clock := clocktesting.NewFakeClock(time.Now())
		first, stop, release, sent := blockedRun(t, dir, clock)
		crash(t, first.p) // killed while the queue blocks: the save above is all that is left
		first.sink.setRefuse(-1, nil)
		release()
		require.NoError(t, <-sent)
		stop()
		assert.NotContains(t, collect(t, first.sink).names, "Pod/b/Unhealthy", "b never left the first run")
		second := restartAfterBlock(t, dir, clock)
		d := collect(t, first.sink, second.sink)
		d.requireExact(t, 6)
	})
}

// restartAfterBlock starts the collector again on dir with a working next
// consumer, sends a's occurrences 4 and 5 and stops it: 6 occurrences in
// all (a: 5, b: 1).
func restartAfterBlock(t *testing.T, dir string, clock *clocktesting.FakeClock) *run {
	h, stop := fileStorage(t, dir)
	defer stop()
	r := startRunAt(t, h, nil, clock.Now)
	r.feed(t, watched(), clock.Now(), 4, 5)
	require.NoError(t, r.p.Shutdown(context.Background()))
	return r
}

// TestPendingRecordsCountsABatchBeingHandedOver: while the next consumer
// holds a batch, pending_records counts its records; once it took them, 0.
func TestPendingRecordsCountsABatchBeingHandedOver(t *testing.T) {
	h, stop := fileStorage(t, t.TempDir())
	defer stop()
	r := startRun(t, h, nil)
	entered, release := r.sink.blockCalls()
	b := podEvent("b", "Unhealthy", "x")
	b.Time = time.Now()
	sent := make(chan error, 1)
	go func() { sent <- r.p.ConsumeLogs(context.Background(), logsOf(b)) }()
	<-entered
	metadatatest.AssertEqualProcessorEventseriesPendingRecords(t, r.tel, []metricdata.DataPoint[int64]{{Value: 1}},
		metricdatatest.IgnoreTimestamp())
	release()
	require.NoError(t, <-sent)
	settle(t, r.p)
	metadatatest.AssertEqualProcessorEventseriesPendingRecords(t, r.tel, []metricdata.DataPoint[int64]{{Value: 0}},
		metricdatatest.IgnoreTimestamp())
	require.NoError(t, r.p.Shutdown(context.Background()))
}
