package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
)

// The in-cluster mirror as deploy/collector.yaml runs it: the
// ready configuration testdata/config/mirror.yaml (the ConfigMap's, byte for
// byte) as the one replica of a StatefulSet whose file_storage is a
// PersistentVolumeClaim. The pod that comes back after a rollout or a crash
// has the same name and the same volume, which here is: a new collector
// process on the same storage directory. The overlay only points the
// exporter at the destination B (so that A holds nothing but the storm),
// shortens the Lease (4 s instead of 15 s) and adds a file exporter (the
// non-API sink of the third property below).
//
// Each test asserts three properties: every (object, reason) of A
// is in B with exactly A's total; every series key has exactly one object
// in B (finish_after is the default 6m, so no series ends during a test and
// any second object is a defect, not a continuation); and the file sink got
// no occurrence counted twice and no record again (after a crash: at most
// the stated bound of records again).

// handoverSpeed replays the storm 10 times faster than recorded: about 18 s.
const handoverSpeed = 10

// handoverMirror is the mirror StatefulSet's one pod, run again and again
// on the same storage.
type handoverMirror struct {
	rig        *faultRig
	kubeconfig string // what the pod reaches A through (A, or a proxy)
	runs       int
}

func newHandoverMirror(ctx context.Context, t *testing.T, name string) *handoverMirror {
	t.Helper()
	occs := faultStorm(t, 3*time.Minute, 90*time.Second, 6*time.Second)
	rig := newFaultRig(ctx, t, "handover-"+name, occs, mirrorSpec{storage: "on"})
	return &handoverMirror{rig: rig, kubeconfig: rig.srcSrv.Kubeconfig(t)}
}

// heldStorm starts the storm with its last third held until run.release,
// which each test calls once its fault is in place: the fault comes
// mid-storm however long the pod takes to start and write on a loaded
// machine (awaitMidStorm waits for a third of it).
func (h *handoverMirror) heldStorm(ctx context.Context) *stormRun {
	return h.rig.heldStorm(ctx, handoverSpeed, len(h.rig.occs)*2/3)
}

// start runs the pod once more (the environment deploy/collector.yaml sets,
// with a kubeconfig instead of the in-cluster account).
func (h *handoverMirror) start(t *testing.T) *collector {
	t.Helper()
	h.runs++
	env := []string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + h.kubeconfig, "POD_NAMESPACE=default",
		"POD_NAME=otel-k8sevents-0", "STORAGE_DIR=" + h.rig.spec.storage}
	overlay := fmt.Sprintf(`extensions:
  k8s_leader_elector: {lease_duration: 4s, renew_deadline: 3s, retry_period: 500ms}
receivers:
  k8sevents: {initial: all}
exporters:
  k8sevents:
    kubeconfig: %q
    reporting_controller: %s
    qps: 100
    burst: 200
    retry_on_failure: {initial_interval: 1s, max_interval: 5s}
`, h.rig.spec.kubeB, h.rig.spec.controller)
	return startCollectorEnv(t, h.rig.dir, readyConfig(t, "mirror.yaml"), env, overlay,
		sinkOverlay(sinkFile(h.rig.dir, h.runs), "k8sevents", "debug"))
}

// sinkFiles are the file sink's outputs of every run so far, in order.
func (h *handoverMirror) sinkFiles() []string {
	var out []string
	for i := 1; i <= h.runs; i++ {
		out = append(out, sinkFile(h.rig.dir, i))
	}
	return out
}

// awaitEmitting waits until the receiver of c has emitted a record, and
// returns how long that took since from: the pause of a hand-over.
func awaitEmitting(t *testing.T, c *collector, from time.Time) time.Duration {
	t.Helper()
	eventually(t, time.Minute, func() (bool, string) {
		m := c.scrape(t)
		n := m.Sum("otelcol_receiver_k8sevents_events_received", "type=added") + m.Sum("otelcol_receiver_k8sevents_events_received", "type=modified")
		return n > 0, "the new pod's receiver has seen no Event yet"
	})
	return time.Since(from).Round(100 * time.Millisecond)
}

// finish lets the storm end, writes the markers, stops the pod (its
// shutdown flush waits in the persistent queue), runs it once more to write
// that, and compares A with B and with the file sink.
func (h *handoverMirror) finish(ctx context.Context, t *testing.T, c *collector, run *stormRun, name string) (mirrorResult, []string, sinkResult, int64) {
	t.Helper()
	st := run.wait(ctx, t)
	h.rig.awaitMirrored(ctx, t, name)
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute), "SIGTERM: the open series are flushed into the persistent queue")
	last := h.start(t) // the pod's next start writes the flush
	h.rig.awaitMirrored(ctx, t, name+"-drained")
	require.NoError(t, last.Stop(time.Minute))
	r, drops := h.rig.finishFault(ctx, t, name, int64(st.Occurrences))
	sink := readSink(t, h.sinkFiles()...)
	return r, drops, sink, int64(st.Occurrences)
}

// assertOneObjectPerSeries: every series key has exactly one object in B.
func assertOneObjectPerSeries(t *testing.T, r mirrorResult) {
	t.Helper()
	keys, multi := multiObjectKeys(r.bEvents)
	assert.Positive(t, keys)
	assert.Zero(t, multi, "series keys written as more than one object in B (of %d)", keys)
}

// assertSink checks the third column against the source's totals: nothing
// counted twice or missing, and at most bound records emitted again.
func assertSink(t *testing.T, sink sinkResult, r mirrorResult, bound int64) {
	t.Helper()
	extra, missing, diffs := sink.recounted(r.a.Pairs)
	t.Logf("file sink: %d records, %d series, %d re-emitted records (bound %d), %d occurrences counted twice, %d missing",
		sink.records, sink.series, sink.reemitted, bound, extra, missing)
	assert.Positive(t, sink.records, "the sink got the processor's records")
	assert.Zero(t, missing, "occurrences missing from the sink: %s", strings.Join(diffs[:min(5, len(diffs))], "; "))
	assert.Zero(t, extra, "occurrences the sink got twice: %s", strings.Join(diffs[:min(5, len(diffs))], "; "))
	assert.LessOrEqual(t, int64(sink.reemitted), bound, "records the sink got again")
}

// TestHandOverMirrorRollout: a rollout. SIGTERM mid-storm (the receiver
// saves its checkpoint, the processor flushes and saves its open series,
// the queue keeps what it has not written), and the pod starts again at
// once on the same volume, as a StatefulSet does; it waits for the Lease its
// predecessor did not release. Nothing lost, nothing twice, one object per
// series, nothing re-emitted to the sink.
func TestHandOverMirrorRollout(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := newHandoverMirror(ctx, t, "rollout")
	cost := h.viaProxy(t)
	c := h.start(t)
	run := h.heldStorm(ctx)
	awaitMidStorm(t, c, run, len(h.rig.occs))
	sentAtStop := run.log.sent()
	stop := time.Now()
	require.NoError(t, c.Stop(time.Minute), "SIGTERM")
	run.release()
	c = h.start(t)
	pause := awaitEmitting(t, c, stop)
	r, drops, sink, sent := h.finish(ctx, t, c, run, "rollout")
	t.Logf("rollout after %d of %d occurrences; pause (SIGTERM to the new pod's first record) %v", sentAtStop, sent, pause)
	cost.report(t, h)
	assertFaultPromise(t, r, sent, drops)
	assertOneObjectPerSeries(t, r)
	assertSink(t, sink, r, 0)
}

// TestHandOverMirrorCrash: SIGKILL of the active pod mid-storm, and the pod
// starts again on the same volume. What was queued is kept; the processor
// restores the state it saved last (at most 5 s old) and replays its
// write-ahead log, which holds every batch it accepted since; the
// receiver's checkpoint covers only batches the processor accepted, so it
// emits again only records the processor knows (no growth: counted
// none). The API server gets exact totals and one object per series; the
// sink gets nothing counted twice, and records again (what the replay
// decides, emitted before the kill too) at most for what reached A within
// crashWindow before the kill (each such record states at least one of
// those occurrences).
func TestHandOverMirrorCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := newHandoverMirror(ctx, t, "crash")
	c := h.start(t)
	run := h.heldStorm(ctx)
	awaitMidStorm(t, c, run, len(h.rig.occs))
	sentAtKill := run.log.sent()
	c.Kill()
	killed := time.Now()
	run.release()
	c = h.start(t)
	pause := awaitEmitting(t, c, killed)
	r, drops, sink, sent := h.finish(ctx, t, c, run, "crash")
	bound := run.log.within(killed.Add(-crashWindow), killed)
	t.Logf("crash after %d of %d occurrences sent: pause (SIGKILL to the new pod's first record) %v; %d occurrences reached A within %v before the kill",
		sentAtKill, sent, pause, bound, crashWindow)
	assertFaultPromise(t, r, sent, drops)
	assertOneObjectPerSeries(t, r)
	assertSink(t, sink, r, bound)
}

// TestHandOverMirrorLeaseLost: the active pod loses the API server while
// alive (a proxy in front of A resets every new request of the pod: Lease
// renewals, lists, new watches) mid-storm. Its elector gives up leading
// after the renew deadline, so the receiver stops; the Lease expires; the
// storm goes on in A with nobody leading; then the pod reaches A again,
// leads again and resumes from its own checkpoint. Its exporter still
// reaches B meanwhile. No other pod can lead in this design (one replica),
// so nothing is emitted twice.
func TestHandOverMirrorLeaseLost(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := newHandoverMirror(ctx, t, "leaselost")
	cost := h.viaProxy(t)
	proxy := cost.proxy

	c := h.start(t)
	run := h.heldStorm(ctx)
	awaitMidStorm(t, c, run, len(h.rig.occs))
	cut := proxy.Add(faultproxy.Rule{Action: faultproxy.Reset})
	cutAt, sentAtCut := time.Now(), run.log.sent()
	leases := h.rig.src.CoordinationV1().Leases("default")
	// The Lease expires: its holder stopped renewing it, and with a renew
	// deadline (3 s) below the lease duration (4 s) it stopped leading first.
	eventually(t, time.Minute, func() (bool, string) {
		l, err := leases.Get(ctx, "otel-k8sevents", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		expires := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		return time.Now().After(expires), fmt.Sprintf("lease renewed at %v", l.Spec.RenewTime.Format("15:04:05.000"))
	})
	// The storm goes on while nobody leads.
	run.release()
	eventually(t, time.Minute, func() (bool, string) {
		return run.log.sent() >= sentAtCut+100, fmt.Sprintf("sent %d since the cut", run.log.sent()-sentAtCut)
	})
	sentWhileCut := run.log.sent() - sentAtCut
	cut.Remove()
	restored := time.Now()
	eventually(t, time.Minute, func() (bool, string) {
		l, err := leases.Get(ctx, "otel-k8sevents", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(restored), "the pod has not renewed the Lease since it reaches A again"
	})
	leading := time.Since(restored).Round(100 * time.Millisecond)
	r, drops, sink, sent := h.finish(ctx, t, c, run, "leaselost")
	t.Logf("lease lost after %d of %d occurrences; cut %v, %d occurrences sent while cut (%d requests reset); leading again %v after the cut ended",
		sentAtCut, sent, restored.Sub(cutAt).Round(100*time.Millisecond), sentWhileCut, cut.Acted(), leading)
	require.Positive(t, cut.Acted(), "the proxy cut the pod's requests")
	cost.report(t, h)
	assertFaultPromise(t, r, sent, drops)
	assertOneObjectPerSeries(t, r)
	assertSink(t, sink, r, 0)
}

// awaitMidStorm returns once a third of the storm was sent and the exporter
// has written some of it: the fault comes after some but not all of it was
// mirrored.
func awaitMidStorm(t *testing.T, c *collector, run *stormRun, total int) {
	t.Helper()
	eventually(t, time.Minute, func() (bool, string) {
		w := c.scrape(t).Pipeline().Writes
		return run.log.sent() >= int64(total/3) && w > 0, fmt.Sprintf("storm sent %d of %d, exporter writes %v", run.log.sent(), total, w)
	})
	logPipeline(t, "before the fault", c)
}

// stateCost counts what the pod asks of A through a proxy: every write
// that is not the Lease's would be state kept in the API server.
type stateCost struct {
	proxy       *faultproxy.Proxy
	leaseWrites []*faultproxy.Handle
	start       time.Time
}

// viaProxy puts a proxy between the pod and A (no fault unless a test adds
// one) and counts the Lease writes: rules that match them but never act
// (their window starts past any request), so a fault rule still does.
func (h *handoverMirror) viaProxy(t *testing.T) *stateCost {
	t.Helper()
	proxy, err := faultproxy.NewForREST(h.rig.srcSrv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	h.kubeconfig = filepath.Join(h.rig.dir, "via-proxy.kubeconfig")
	require.NoError(t, proxy.WriteKubeconfig(h.kubeconfig))
	c := &stateCost{proxy: proxy, start: time.Now()}
	for _, r := range []faultproxy.Rule{
		{Verb: "PUT", Path: "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"},
		{Verb: "POST", Path: "/apis/coordination.k8s.io/v1/namespaces/*/leases"},
	} {
		r.From, r.Action = 1<<30, faultproxy.Forward
		c.leaseWrites = append(c.leaseWrites, proxy.Add(r))
	}
	return c
}

// report logs the pod's requests to A, its Lease writes per minute and the
// bytes its storage holds, and asserts that it wrote nothing else to A.
func (c *stateCost) report(t *testing.T, h *handoverMirror) {
	t.Helper()
	var lease, writes int
	for _, l := range c.leaseWrites {
		lease += l.Matched()
	}
	for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		writes += c.proxy.Seen(verb)
	}
	minutes := time.Since(c.start).Minutes()
	bytes, files := dirBytes(t, h.rig.spec.storage)
	t.Logf("state cost: the pod sent A %d requests (%d GET), %d writes of which %d Lease writes (%.1f a minute over %.1f min) and %d others; storage: %d bytes in %d files",
		c.proxy.Seen(""), c.proxy.Seen("GET"), writes, lease, float64(lease)/minutes, minutes, writes-lease, bytes, files)
	assert.Positive(t, lease, "the Lease writes were counted")
	assert.Equal(t, lease, writes, "writes to the API server other than the Lease: state kept there")
}

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) (bytes int64, files int) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		bytes += info.Size()
		files++
		return nil
	}))
	return bytes, files
}
