package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// The mirror as a user writes it from the component READMEs: storage on
// the receiver and the processor, one file_storage, nothing else set (the
// exporter has no queue: a push is answered once written, and the
// processor's saved outbox holds what is not). One API server is source
// and destination: the receiver leaves out what the exporter wrote by its
// reporting controller, as mirror.yaml does.
const (
	sigkillNS         = "sigkill"
	sigkillController = "k8sevents.io/e2e-sigkill"
	sigkillConfig     = `extensions:
  file_storage:
    directory: %q
receivers:
  k8sevents:
    auth_type: kubeConfig
    kubeconfig: %[2]q
    storage: file_storage
    field_selector: reportingController!=%[3]s
processors:
  eventseries:
    storage: file_storage
exporters:
  k8sevents:
    auth_type: kubeConfig
    kubeconfig: %[4]q
    reporting_controller: %[3]s
service:
  extensions: [file_storage, health_check]
  pipelines:
    logs:
      receivers: [k8sevents]
      processors: [eventseries]
      exporters: [k8sevents]
`
)

// TestExactSigkillLosesAndRepeatsNothing: the collector above is killed
// (SIGKILL) five times while Events are written, each time at another
// moment, and started again on the same storage:
//
//   - right after the processor accepted the batch of a series' last
//     occurrence (its count of occurrences shows it), after a save of
//     its state that covers the writes before;
//   - right after the API server took a series' last occurrence, its
//     record somewhere between the receiver and the exporter;
//   - in the middle of the writes, which go on while it is down;
//   - with the exporter behind: a burst of new Events (a CronJob's Jobs
//     created and completed) counted by the processor, not all written;
//   - while the API server refuses the exporter's writes (a proxy in front
//     of it answers 500) for longer than the processor's save interval,
//     and after more Events: what the processor handed to the exporter
//     before its save is not written, so the exporter has not answered
//     that push and the saved outbox still holds it (an exporter queue in
//     memory answers at once, and a kill then loses it); the Events
//     written after it wait in the receiver.
//
// Open series go on across the kills, and Events are written while it is
// down. In the end the open series are flushed (SIGTERM, and a last run
// writes what the flush left), and the exporter's objects must hold,
// per (object, reason), exactly the occurrences written; every series
// must be one object; and no object's count may ever go down (a watch
// sees every version). A receiver that skipped a record after a restart
// loses occurrences of Events never changed again; a processor that lost
// what it accepted before the kill (its write-ahead log off) too, and it
// starts a second object for a series it forgot; a processor without
// storage counts again what the receiver emits again.
func TestExactSigkillLosesAndRepeatsNothing(t *testing.T) {
	binary(t)
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rig := newSigkillRig(ctx, t)
	src := rig.src
	for round, moment := range []string{"accepted", "in flight", "mid-writes", "exporter behind", "exporter refused"} {
		last := fmt.Sprintf("last-%d", round+1)
		base := rig.c.scrape(t).Pipeline().Occurrences
		switch moment {
		case "accepted":
			// A save covers the first writes, and the last occurrences
			// are accepted after it: the next start restores the state
			// and replays the log written since.
			n := src.paced(ctx, t, 24, "")
			rig.counted(base, n)
			rig.awaitSave()
			rig.counted(base+float64(n), src.paced(ctx, t, 0, last))
		case "in flight":
			src.paced(ctx, t, 24, last)
		case "mid-writes":
			src.paced(ctx, t, 12, "")
		case "exporter behind":
			rig.counted(base, src.burst(ctx, t, 160, last))
		case "exporter refused":
			rig.refuseExporterWrites()
			src.paced(ctx, t, 12, "")
			// The exporter retries a refused write after at least 2.5 s,
			// then 3.75 s (its default backoff): by the third refusal the
			// processor saved its state (every 5 s) after it handed over
			// what the exporter holds. The exporter has not answered that
			// push, so the saved outbox holds it; the processor takes
			// nothing more meanwhile, and the Events written after it wait
			// in the receiver, which has not checkpointed them.
			eventually(t, time.Minute, func() (bool, string) {
				refused := rig.refusedWrites()
				return refused >= 3, fmt.Sprintf("exporter writes refused: %d", refused)
			})
			src.paced(ctx, t, 6, last)
		}
		rig.c.Kill()
		t.Logf("SIGKILL %d (%s) after %d occurrences written", round+1, moment, src.written)
		rig.allowExporterWrites()
		if moment == "mid-writes" {
			src.paced(ctx, t, 12, last)
		}
		src.whileDown(ctx, t)
		rig.start()
		src.awaitMirrored(ctx, t, fmt.Sprintf("after-kill-%d", round+1))
	}

	// The open series' counts reach the API server with the shutdown
	// flush; what of it is not written waits in the processor's saved
	// outbox for the next run.
	logPipeline(t, "before SIGTERM", rig.c)
	require.NoError(t, rig.c.Stop(time.Minute), "SIGTERM: the open series are flushed")
	rig.start()
	src.awaitMirrored(ctx, t, "drained")
	require.NoError(t, rig.c.Stop(time.Minute))

	written, err := listEvents(ctx, src.cs, func(ev *corev1.Event) bool {
		return ev.Namespace == sigkillNS && ev.ReportingController != sigkillController
	})
	require.NoError(t, err)
	mirrored, err := listEvents(ctx, src.cs, byController(sigkillController))
	require.NoError(t, err)
	want, got := tallyEvents(written), tallyEvents(mirrored)
	require.Equal(t, src.written, want.Occurrences, "the API server holds every occurrence written")
	lines, missing, extra := diffTallies(want, got, 10)
	keys, multi := multiObjectKeys(mirrored)
	replayed, afterSave := rig.replays()
	t.Logf("%d occurrences written in %d Events; mirrored: %d occurrences in %d objects of %d series keys; of %d starts, %d replayed the log, %d of them after a saved state",
		want.Occurrences, want.Objects, got.Occurrences, got.Objects, keys, rig.runs, replayed, afterSave)
	assert.Zero(t, missing, "occurrences lost: %s", strings.Join(lines, "; "))
	assert.Zero(t, extra, "occurrences counted twice: %s", strings.Join(lines, "; "))
	assert.Zero(t, multi, "series written as more than one object")
	assert.Empty(t, rig.drops(), "counts that went down")
	assert.Positive(t, replayed, "a kill came after the processor accepted a batch and before it saved its state")
	assert.Positive(t, afterSave, "a start restored a saved state and replayed the log written after it")
}

// sigkillRig is the API server, the Events written to it, and the
// collector started again and again on one storage directory.
type sigkillRig struct {
	t      *testing.T
	src    *sigkillSource
	proxy  *faultproxy.Proxy // in front of the API server for the exporter
	faults []*faultproxy.Handle
	drops  func() []string
	dir    string
	cfg    string
	runs   int
	c      *collector // the run under way
}

func newSigkillRig(ctx context.Context, t *testing.T) *sigkillRig {
	t.Helper()
	srv := kubetest.Start(t)
	proxy, err := faultproxy.NewForREST(srv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	rig := &sigkillRig{t: t, src: &sigkillSource{cs: srv.Clientset(), counts: map[string]int32{}}, proxy: proxy, dir: t.TempDir()}
	require.NoError(t, stormsend.CreateNamespaces(ctx, rig.src.cs, sigkillNS))
	rig.drops = watchDrops(ctx, t, srv.WatchClientset(t))
	storage, viaProxy := filepath.Join(rig.dir, "storage"), filepath.Join(rig.dir, "exporter.kubeconfig")
	require.NoError(t, os.MkdirAll(storage, 0o700))
	require.NoError(t, proxy.WriteKubeconfig(viaProxy))
	rig.cfg = fmt.Sprintf(sigkillConfig, storage, srv.Kubeconfig(t), sigkillController, viaProxy)
	rig.start()
	rig.c.awaitWatchOpen(t)
	return rig
}

// start runs the collector once more, with a directory of its own for its
// configuration and log.
func (rig *sigkillRig) start() {
	rig.runs++
	rig.c = startCollector(rig.t, filepath.Join(rig.dir, fmt.Sprintf("run-%d", rig.runs)), rig.cfg)
}

// counted waits until the processor has counted n occurrences more than
// base: it accepted the batch of the last write.
func (rig *sigkillRig) counted(base float64, n int64) {
	rig.t.Helper()
	eventually(rig.t, time.Minute, func() (bool, string) {
		p := rig.c.scrape(rig.t).Pipeline()
		return p.Occurrences >= base+float64(n), fmt.Sprintf("processor counted %v of %d", p.Occurrences-base, n)
	})
}

// awaitSave waits until the processor has saved its state once more:
// what it counted before the call is in storage, not only in its log.
func (rig *sigkillRig) awaitSave() {
	rig.t.Helper()
	saves := rig.c.scrape(rig.t).Sum("otelcol_processor_eventseries_state", "operation=save", "outcome=ok")
	eventually(rig.t, time.Minute, func() (bool, string) {
		n := rig.c.scrape(rig.t).Sum("otelcol_processor_eventseries_state", "operation=save", "outcome=ok")
		return n > saves, fmt.Sprintf("processor state saves: %v", n)
	})
}

// refuseExporterWrites makes the API server answer 500 to the exporter's
// creates and patches, until allowExporterWrites.
func (rig *sigkillRig) refuseExporterWrites() {
	rig.faults = append(rig.faults,
		rig.proxy.Add(faultproxy.Rule{Verb: "POST", Path: "/apis/events.k8s.io/v1/namespaces/*/events", Action: faultproxy.Fail}),
		rig.proxy.Add(faultproxy.Rule{Verb: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/*/events/*", Action: faultproxy.Fail}))
}

// refusedWrites is how many of the exporter's writes were refused.
func (rig *sigkillRig) refusedWrites() int {
	n := 0
	for _, h := range rig.faults {
		n += h.Acted()
	}
	return n
}

func (rig *sigkillRig) allowExporterWrites() {
	for _, h := range rig.faults {
		h.Remove()
	}
	rig.faults = nil
}

// replays is how many runs replayed the processor's write-ahead log at
// their start, and how many of those first restored a state it had saved.
func (rig *sigkillRig) replays() (replayed, afterSave int) {
	rig.t.Helper()
	for i := 1; i <= rig.runs; i++ {
		b, err := os.ReadFile(filepath.Join(rig.dir, fmt.Sprintf("run-%d", i), "collector.log"))
		require.NoError(rig.t, err)
		if log := string(b); strings.Contains(log, "Write-ahead log replayed") {
			replayed++
			if strings.Contains(log, "State restored") {
				afterSave++
			}
		}
	}
	return replayed, afterSave
}
