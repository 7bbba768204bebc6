package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// The end-to-end fault tests: the built collector mirrors
// a storm from API server A into API server B (k8sevents → eventseries →
// k8sevents) while B fails in one way. The storm is replayed into A without
// compression (stormsend.Raw), so A holds exactly the occurrences sent, as
// Events whose counts grow. Each test asserts what the pipeline promises:
// every (object, reason) of A is in B with exactly A's total, the sum of
// B's final counts is the occurrences sent, one object per series, no
// count ever seen going down, nothing dropped for good. Each logs a
// "fault table row" with its numbers.

// faultSpeed replays the storms 8 times faster than they were recorded.
const faultSpeed = 8

// TestFaultDestinationDownMidStorm: with file_storage (receiver checkpoint,
// processor state, persistent queue), B is down for 30 s in the middle of a
// 75 s storm, with the replicaset burst (a few hundred singletons) inside
// the outage, and comes back on the same etcd before the storm's last fifth
// is sent (the replay holds it until B is back, however long a loaded
// machine takes to restart B). finish_after is 10 s of processing time:
// series start, grow and finish during the outage as well as after it, and
// all have finished before the SIGTERM, so no count reaches B only through
// the shutdown flush (with the default 6m every open series would get one
// more record after the outage, which repairs a write lost in it).
func TestFaultDestinationDownMidStorm(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	occs := faultStorm(t, 10*time.Minute, 3*time.Minute, 12*time.Second)
	rig := newFaultRig(ctx, t, "midstorm", occs, mirrorSpec{api: "events.k8s.io/v1", storage: "on", finishAfter: "10s", fastRetry: true}, kubetest.OwnServer())
	c := rig.collector(t)
	run := rig.heldStorm(ctx, faultSpeed, len(occs)*4/5)

	// Down once a fifth of the storm is sent and some of it written.
	eventually(t, time.Minute, func() (bool, string) {
		w := c.scrape(t).Pipeline().Writes
		return run.log.sent() >= int64(len(occs)/5) && w > 0, fmt.Sprintf("storm sent %d of %d, exporter writes %v", run.log.sent(), len(occs), w)
	})
	down := rig.stopDestination(ctx, t)
	sentAtStop := run.log.sent()
	finishedAtStop := finishedRecords(c.scrape(t))
	awaitRetries(t, c, 0, faultOutage)
	awaitOutageEnd(ctx, t, down)
	finishedInOutage := finishedRecords(c.scrape(t)) - finishedAtStop
	outage := rig.restartDestination(t, down)
	sentAtRestart := run.log.sent()
	run.release()

	st := run.wait(ctx, t)
	t.Logf("storm: %d occurrences in %v; B down after %d sent, back after %d (down %v); %v finished records emitted while B was down",
		st.Occurrences, st.Elapsed.Round(time.Millisecond), sentAtStop, sentAtRestart, outage, finishedInOutage)
	require.Positive(t, finishedInOutage, "series must finish during the outage")
	require.Greater(t, int64(st.Occurrences), sentAtRestart, "the storm must go on after the outage")
	awaitIdle(t, c, 2*time.Minute)
	rig.awaitMirrored(ctx, t, "midstorm")
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute))

	r, drops := rig.finishFault(ctx, t, "destination down 30 s mid-storm", int64(st.Occurrences))
	assertFaultPromise(t, r, int64(st.Occurrences), drops)
}

// TestFaultDestinationDownAsStormEnds: B goes down as the storm ends (its
// last tenth is held until B is down), with finish_after 5s in processing
// time, so that the last record (finished) of the series the held tenth
// touches, and of any other not finished by the stop, is emitted while B is
// down and must be written after it is back. The test waits until the
// processor holds nothing open and the exporter has met the outage; B stays
// down 30 s in all. With storage, as mirror.yaml: the persistent queue takes
// the finished records while B is down (without a queue the exporter answers
// the processor only once B took them, and the processor's timers wait for
// that answer).
func TestFaultDestinationDownAsStormEnds(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	occs := faultStorm(t, 4*time.Minute, 2*time.Minute, 8*time.Second)
	rig := newFaultRig(ctx, t, "stormend", occs, mirrorSpec{api: "events.k8s.io/v1", storage: "on", finishAfter: "5s", fastRetry: true}, kubetest.OwnServer())
	c := rig.collector(t)
	// B goes down once all but the storm's last tenth is sent; that tenth
	// is held until B is down, so its series finish during the outage
	// however long stopping B takes on a loaded machine.
	holdAt := len(occs) * 9 / 10
	run := rig.heldStorm(ctx, faultSpeed, holdAt)
	eventually(t, 5*time.Minute, func() (bool, string) {
		return run.log.sent() >= int64(holdAt), fmt.Sprintf("storm sent %d of %d", run.log.sent(), holdAt)
	})
	down := rig.stopDestination(ctx, t)
	finishedAtStop := finishedRecords(c.scrape(t))
	run.release()
	st := run.wait(ctx, t)

	// Every series finishes (5 s after its last occurrence) during the
	// outage; on a machine too slow for that within 30 s, the outage lasts
	// until they have.
	eventually(t, 2*time.Minute, func() (bool, string) {
		m := c.scrape(t)
		open := m.Pipeline().Open
		return open == 0 && retryable(m) > 0, fmt.Sprintf("open entries %v, retryable failures %v", open, retryable(m))
	})
	awaitOutageEnd(ctx, t, down)
	finishedInOutage := finishedRecords(c.scrape(t)) - finishedAtStop
	outage := rig.restartDestination(t, down)
	t.Logf("storm: %d occurrences in %v; %v finished records emitted while B was down (%v)", st.Occurrences, st.Elapsed.Round(time.Millisecond), finishedInOutage, outage)
	require.Positive(t, finishedInOutage, "finished records must meet the outage")

	awaitIdle(t, c, 2*time.Minute)
	rig.awaitMirrored(ctx, t, "stormend")
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute))

	r, drops := rig.finishFault(ctx, t, "destination down 30 s as the storm ends", int64(st.Occurrences))
	assertFaultPromise(t, r, int64(st.Occurrences), drops)
}

// TestFaultThrottledByEventRateLimit: B runs the EventRateLimit admission
// plugin with a server-wide limit of 10 writes a second, burst 10 (about
// what the exporter needs on average, so its writes queue up against it),
// and the exporter writes core/v1 (api: v1), the group the plugin limits,
// creates and patches alike. The exporter's own cap (100/s) is above it,
// so B answers 429 (without Retry-After) and the exporter must retry.
// finish_after 5s makes the finished patches meet the limit too, before
// the shutdown.
func TestFaultThrottledByEventRateLimit(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	occs := faultStorm(t, 4*time.Minute, 2*time.Minute, 8*time.Second)
	rig := newFaultRig(ctx, t, "ratelimit", occs, mirrorSpec{api: "v1", finishAfter: "5s", fastRetry: true},
		kubetest.WithEventRateLimit(10, 10))
	c := rig.collector(t)
	st := rig.storm(ctx, faultSpeed).wait(ctx, t)
	awaitIdle(t, c, 3*time.Minute)
	rig.awaitMirrored(ctx, t, "ratelimit")
	logPipeline(t, "before SIGTERM", c)
	throttled := retryable(c.scrape(t), "throttled")
	require.NoError(t, c.Stop(time.Minute))

	posts, patches, err := throttledEventWrites(ctx, rig.dst)
	require.NoError(t, err)
	t.Logf("storm: %d occurrences in %v; B answered 429 to %d creates and %d patches; the exporter counted %v throttled writes",
		st.Occurrences, st.Elapsed.Round(time.Millisecond), posts, patches, throttled)
	assert.Positive(t, posts, "creates must meet the rate limit")
	assert.Positive(t, patches, "patches must meet the rate limit")
	r, drops := rig.finishFault(ctx, t, "EventRateLimit 429s (10/s, burst 10) on core/v1", int64(st.Occurrences))
	assertFaultPromise(t, r, int64(st.Occurrences), drops)
}

// TestFaultCollectorKilledWithRetriesPending: with file_storage (receiver
// checkpoint, processor state, persistent queue), B goes down mid-storm;
// once writes are being retried the collector is SIGKILLed, started again
// at once while B is still down (it must retry what its queue kept), and B
// comes back 30 s after it went down, before the storm's last fifth is
// sent. finish_after is 10 s, as in the
// mid-storm test, so that most counts reach B through finished records,
// not the shutdown flush; after the storm, a SIGTERM flushes the series
// still open into the persistent queue and a third run writes them.
//
// With storage on the receiver and the processor, a crash loses and repeats
// nothing: the processor replays its write-ahead log over the state it
// saved last, and the receiver resumes from a checkpoint that covers only
// what the processor accepted. So the promise is the one of every fault
// test, exact totals per pair and no count ever seen going down; it holds
// however late the kill or a save comes, so the test runs in parallel.
func TestFaultCollectorKilledWithRetriesPending(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	occs := faultStorm(t, 10*time.Minute, 3*time.Minute, 12*time.Second)
	rig := newFaultRig(ctx, t, "kill", occs, mirrorSpec{api: "events.k8s.io/v1", storage: "on", finishAfter: "10s", fastRetry: true}, kubetest.OwnServer())
	first := rig.collector(t)
	run := rig.heldStorm(ctx, faultSpeed, len(occs)*4/5)

	eventually(t, time.Minute, func() (bool, string) {
		w := first.scrape(t).Pipeline().Writes
		return run.log.sent() >= int64(len(occs)/5) && w > 0, fmt.Sprintf("storm sent %d of %d, exporter writes %v", run.log.sent(), len(occs), w)
	})
	down := rig.stopDestination(ctx, t)
	m := awaitRetries(t, first, 0, faultOutage)
	t.Logf("at the kill: %v retryable failures, queue size %v", retryable(m), m.Sum("otelcol_exporter_queue_size"))
	first.Kill()
	killed := time.Now()
	second := rig.collector(t)
	awaitRetries(t, second, 0, faultOutage)
	awaitOutageEnd(ctx, t, down)
	outage := rig.restartDestination(t, down)
	sentAtRestart := run.log.sent()
	run.release()

	st := run.wait(ctx, t)
	t.Logf("storm: %d occurrences in %v; killed after %d sent, B back after %d (down %v)", st.Occurrences, st.Elapsed.Round(time.Millisecond),
		run.log.within(time.Time{}, killed), sentAtRestart, outage)
	require.Greater(t, int64(st.Occurrences), sentAtRestart, "the storm must go on after the outage")
	rig.awaitMirrored(ctx, t, "kill")
	logPipeline(t, "second collector, before SIGTERM", second)
	require.NoError(t, second.Stop(time.Minute), "SIGTERM: flush the open series into the persistent queue")
	third := rig.collector(t)
	rig.awaitMirrored(ctx, t, "kill-drained")
	logPipeline(t, "third collector (drains the flush)", third)
	require.NoError(t, third.Stop(time.Minute))

	r, drops := rig.finishFault(ctx, t, "collector SIGKILLed with retries pending", int64(st.Occurrences))
	assertFaultPromise(t, r, int64(st.Occurrences), drops)
}
