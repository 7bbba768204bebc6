package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The mirror as a user writes it from the component READMEs: storage on
// each component that has it, one file_storage, nothing tuned. One API
// server is source and destination: the receiver leaves out what the
// exporter wrote by its reporting controller, as mirror.yaml does.
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
    sending_queue:
      storage: file_storage
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
//     occurrence (its count of occurrences shows it);
//   - right after the API server took a series' last occurrence, its
//     record somewhere between the receiver and the exporter;
//   - in the middle of the writes, which go on while it is down;
//   - with the exporter behind: a burst of new Events (a CronJob's Jobs
//     created and completed) counted by the processor, not all written;
//   - while the API server refuses the exporter's writes (a proxy in front
//     of it answers 500), for longer than the processor's save interval:
//     the records it handed to the exporter are no longer in its state.
//
// Open series go on across the kills, and Events are written while it is
// down. In the end the open series are flushed (SIGTERM, and a last run
// writes what the flush queued), and the exporter's objects must hold,
// per (object, reason), exactly the occurrences written; every series
// must be one object; and no object's count may ever go down (a watch
// sees every version). A receiver that skipped a record after a restart
// loses occurrences of Events never changed again; a processor that lost
// what it accepted before the kill (its write-ahead log off) too, and it
// starts a second object for a series it forgot; a processor without
// storage counts again what the receiver emits again.
func TestExactSigkillLosesAndRepeatsNothing(t *testing.T) {
	binary(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rig := newSigkillRig(ctx, t)
	src := rig.src
	for round, moment := range []string{"accepted", "in flight", "mid-writes", "exporter behind", "exporter refused"} {
		last := fmt.Sprintf("last-%d", round+1)
		base := rig.c.scrape(t).Pipeline().Occurrences
		switch moment {
		case "accepted":
			rig.counted(base, src.paced(ctx, t, 24, last))
		case "in flight":
			src.paced(ctx, t, 24, last)
		case "mid-writes":
			src.paced(ctx, t, 12, "")
		case "exporter behind":
			rig.counted(base, src.burst(ctx, t, 160, last))
		case "exporter refused":
			rig.refuseExporterWrites()
			rig.counted(base, src.paced(ctx, t, 12, last))
			// The exporter retries a refused write after at least 2.5 s,
			// then 3.75 s (its default backoff): by the third refusal the
			// processor saved its state (every 5 s) after it handed over
			// what the exporter holds.
			eventually(t, time.Minute, func() (bool, string) {
				n := rig.refusedWrites()
				return n >= 3, fmt.Sprintf("exporter writes refused: %d", n)
			})
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
	// flush, which waits in the persistent queue for the next run.
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
	replayed := rig.replays()
	t.Logf("%d occurrences written in %d Events; mirrored: %d occurrences in %d objects of %d series keys; the log replayed at %d of %d starts",
		want.Occurrences, want.Objects, got.Occurrences, got.Objects, keys, replayed, rig.runs)
	assert.Zero(t, missing, "occurrences lost: %s", strings.Join(lines, "; "))
	assert.Zero(t, extra, "occurrences counted twice: %s", strings.Join(lines, "; "))
	assert.Zero(t, multi, "series written as more than one object")
	assert.Empty(t, rig.drops(), "counts that went down")
	assert.Positive(t, replayed, "a kill came after the processor accepted a batch and before it saved its state")
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
	eventually(t, time.Minute, func() (bool, string) {
		n := rig.c.scrape(t).Sum("otelcol_receiver_k8sevents_watches_open")
		return n == 1, fmt.Sprintf("receiver watches open: %v", n)
	})
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
// their start.
func (rig *sigkillRig) replays() int {
	rig.t.Helper()
	n := 0
	for i := 1; i <= rig.runs; i++ {
		b, err := os.ReadFile(filepath.Join(rig.dir, fmt.Sprintf("run-%d", i), "collector.log"))
		require.NoError(rig.t, err)
		if strings.Contains(string(b), "Write-ahead log replayed") {
			n++
		}
	}
	return n
}

// sigkillSource writes the Events: series of core/v1 Events whose count is
// updated at each occurrence (tools/record's way), and new Events (a
// CronJob's SuccessfulCreate, a series of one that never changes again).
type sigkillSource struct {
	cs      kubernetes.Interface
	counts  map[string]int32 // count written of each series' Event
	jobs    int
	written int64 // occurrences written, markers included
}

// occur writes one more occurrence of the series about pod.
func (s *sigkillSource) occur(ctx context.Context, t *testing.T, pod string) {
	t.Helper()
	name := pod + ".backoff"
	s.counts[name]++
	now := metav1.NewTime(time.Now())
	events := s.cs.CoreV1().Events(sigkillNS)
	var err error
	if n := s.counts[name]; n == 1 {
		_, err = events.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: sigkillNS},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: sigkillNS, Name: pod, UID: types.UID("uid-" + pod)},
			Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
	} else {
		patch := fmt.Sprintf(`{"count":%d,"lastTimestamp":%q}`, n, now.UTC().Format(time.RFC3339))
		_, err = events.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	require.NoError(t, err)
	s.written++
}

// job writes a new Event that is never changed again, for a Job of the
// CronJob nightly: the CronJob's SuccessfulCreate (one series of the
// CronJob's, as client-go's series key leaves the note out), or the Job's
// Completed (a series of one).
func (s *sigkillSource) job(ctx context.Context, t *testing.T) {
	t.Helper()
	s.jobs++
	job := fmt.Sprintf("nightly-%d", s.jobs)
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "nightly." + job, Namespace: sigkillNS},
		InvolvedObject: corev1.ObjectReference{Kind: "CronJob", APIVersion: "batch/v1", Namespace: sigkillNS, Name: "nightly", UID: "uid-nightly"},
		Reason:         "SuccessfulCreate", Message: "Created job " + job, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "cronjob-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if s.jobs%2 == 0 {
		ev.Name = job + ".completed"
		ev.InvolvedObject = corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: sigkillNS, Name: job, UID: types.UID("uid-" + job)}
		ev.Reason, ev.Message, ev.Source.Component = "Completed", "Job completed", "job-controller"
	}
	_, err := s.cs.CoreV1().Events(sigkillNS).Create(ctx, ev, metav1.CreateOptions{})
	require.NoError(t, err)
	s.written++
}

// paced writes n occurrences, one every 100 ms (so the receiver saves its
// checkpoint during them): every third a new Event, the others in the
// series of three pods that go on through the whole test; then, unless
// last is "", the series about pod last, three occurrences of which the
// final one is the last write. It returns the occurrences written.
func (s *sigkillSource) paced(ctx context.Context, t *testing.T, n int, last string) int64 {
	t.Helper()
	before := s.written
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		if i%3 == 2 {
			s.job(ctx, t)
		} else {
			s.occur(ctx, t, fmt.Sprintf("crashloop-%d", i/3%3))
		}
		<-tick.C
	}
	if last != "" {
		for range 3 {
			s.occur(ctx, t, last)
		}
	}
	return s.written - before
}

// burst writes n new Events at once, more than the exporter's burst of
// writes, then the three occurrences of the series about pod last.
func (s *sigkillSource) burst(ctx context.Context, t *testing.T, n int, last string) int64 {
	t.Helper()
	before := s.written
	for range n {
		s.job(ctx, t)
	}
	for range 3 {
		s.occur(ctx, t, last)
	}
	return s.written - before
}

// whileDown writes while the collector is down: the long series go on
// and a new Event comes.
func (s *sigkillSource) whileDown(ctx context.Context, t *testing.T) {
	t.Helper()
	s.occur(ctx, t, "crashloop-0")
	s.occur(ctx, t, "crashloop-1")
	s.job(ctx, t)
}

// awaitMirrored writes a marker Event and waits until the exporter wrote
// its object: the receiver emits in the API server's order and the
// exporter writes one namespace's records in order, so everything written
// before it went through the pipeline.
func (s *sigkillSource) awaitMirrored(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	pod := "e2e-marker-" + id
	require.NoError(t, writeMarker(ctx, s.cs, sigkillNS, pod))
	s.written++
	eventually(t, 2*time.Minute, func() (bool, string) {
		l, err := s.cs.CoreV1().Events(sigkillNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if l.Items[i].ReportingController == sigkillController {
				return true, ""
			}
		}
		return false, "marker " + pod + " not mirrored yet"
	})
}

// watchDrops watches the exporter's objects from now on and returns a
// function that lists every object whose count went down from one version
// to the next. A watch that ends is opened again where it stopped.
func watchDrops(ctx context.Context, t *testing.T, cs kubernetes.Interface) func() []string {
	t.Helper()
	events := cs.CoreV1().Events(sigkillNS)
	l, err := events.List(ctx, metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	var mu sync.Mutex
	var drops []string
	last := map[string]int64{}
	rv := l.ResourceVersion
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	seen := func(ev *corev1.Event) {
		if ev.ReportingController != sigkillController {
			return
		}
		n := k8sevent.CoreV1Occurrences(ev)
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := last[ev.Name]; ok && n < prev {
			drops = append(drops, fmt.Sprintf("%s: %d then %d", ev.Name, prev, n))
		}
		last[ev.Name] = n
	}
	retry := func() { // after a failed request, before the next one
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if rv == "" { // after a watch error: go on from a list
				l, err := events.List(ctx, metav1.ListOptions{})
				if err != nil {
					retry()
					continue
				}
				for i := range l.Items {
					seen(&l.Items[i])
				}
				rv = l.ResourceVersion
			}
			w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				rv = ""
				retry()
				continue
			}
			for e := range w.ResultChan() {
				ev, ok := e.Object.(*corev1.Event)
				if !ok {
					rv = "" // a watch error (410 Gone)
					break
				}
				rv = ev.ResourceVersion
				if e.Type != watch.Deleted {
					seen(ev)
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), drops...)
	}
}
