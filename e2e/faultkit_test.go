package e2e

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Support for the end-to-end fault tests (fault_test.go) and the crash
// subtest of TestRestart: a bounded storm, a record of how fast it was
// sent, a watch on the counts in the destination, and the promise checked
// and reported in one place.

// faultStorm is the storm of the fault tests: the first window of the
// crashloop and cronjob scenarios (counts that grow on 80 + a few dozen
// series) with the first burst of the replicaset scenario (one new Event per
// occurrence: singletons) moved to burstAt, so that it lands where a test
// puts its fault.
func faultStorm(t *testing.T, window, burstAt, burst time.Duration) []storm.Occurrence {
	t.Helper()
	rs := stormWindow(t, "replicaset", burst)
	for i := range rs {
		rs[i].Time = rs[i].Time.Add(burstAt)
	}
	return mergeStorms(stormWindow(t, "crashloop", window), stormWindow(t, "cronjob", window), rs)
}

// sendLog keeps the progress of a replay over time, to bound how many
// occurrences were sent around an instant (a crash).
type sendLog struct {
	mu      sync.Mutex
	samples []sendSample
}

type sendSample struct {
	at time.Time
	n  int64
}

// record is a stormsend.Options.Progress callback.
func (l *sendLog) record(s stormsend.Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples = append(l.samples, sendSample{time.Now(), int64(s.Occurrences)})
}

// sent is the latest count reported.
func (l *sendLog) sent() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.samples) == 0 {
		return 0
	}
	return l.samples[len(l.samples)-1].n
}

// within is an upper bound on the occurrences sent from from to to: the
// count of the first report at or after to (the last report when none is)
// minus that of the last report at or before from. Reports come once a
// second, so the bound is loose by at most a second's worth on each side.
func (l *sendLog) within(from, to time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lo, hi int64
	for _, s := range l.samples {
		if !s.at.After(from) {
			lo = s.n
		}
		hi = s.n
		if !s.at.Before(to) {
			break
		}
	}
	return hi - lo
}

// stormRun is a Raw replay of a storm into the source API server, under way.
type stormRun struct {
	log  sendLog
	hold chan struct{} // closed by release
	done chan struct{}
	st   stormsend.Stats
	err  error
}

// startRawStorm replays occs into cfg's API server as an emitter without
// compression does (stormsend.Raw: one Event per distinct event, its count
// patched at every occurrence, one write per occurrence), so the source
// holds exactly the occurrences sent. With holdAt positive, the replay
// waits before occurrence holdAt until release is called. The replay is
// bounded by its count, ctx and stormsend's default 10 minutes, not by a
// bound near the storm's schedule: a loaded machine writes slower than the
// schedule, and such a bound would end the replay before the part a test
// holds for after its fault.
func startRawStorm(ctx context.Context, cfg *rest.Config, occs []storm.Occurrence, speed float64, holdAt int) *stormRun {
	r := &stormRun{hold: make(chan struct{}), done: make(chan struct{})}
	opts := stormsend.Options{Speed: speed, Progress: r.log.record}
	if holdAt > 0 {
		opts.Hold, opts.HoldAt = r.hold, holdAt
	}
	go func() {
		defer close(r.done)
		r.st, r.err = stormsend.Raw(ctx, cfg, occs, opts)
	}()
	return r
}

// release lets a held replay go on.
func (r *stormRun) release() { close(r.hold) }

// wait is the replay's result once it ended; it fails the test on an error.
func (r *stormRun) wait(ctx context.Context, t *testing.T) stormsend.Stats {
	t.Helper()
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("storm did not end: %v", ctx.Err())
	}
	require.NoError(t, r.err, "storm into the source")
	require.Zero(t, r.st.Failures, "every occurrence written into the source")
	return r.st
}

// countMonitor follows the destination's Events that keep accepts (one
// reporting controller in the storm's namespaces: the set the final
// comparison reads, so an object outside it is not taken for one gone) and
// records every object whose count went down: a count never goes down,
// whatever fails. It lists them, then watches from the list's
// resourceVersion, so it sees every change the API server made, across
// a stop of the server too; when the watch cannot go on (the
// resourceVersion is too old after a restart) it lists again, once a
// second until the server answers, and compares the list with what it saw
// last.
type countMonitor struct {
	mu    sync.Mutex
	last  map[string]int64 // namespace/name → count last seen
	drops []string
	reads int // lists and watch events seen
	stop  context.CancelFunc
	done  chan struct{}
}

// watchCounts starts following cs's Events; cs needs no client timeout
// (kubetest.Server.WatchClientset).
func watchCounts(cs kubernetes.Interface, keep func(*corev1.Event) bool) *countMonitor {
	ctx, stop := context.WithCancel(context.Background())
	m := &countMonitor{last: map[string]int64{}, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			rv, err := m.list(ctx, cs, keep)
			if err == nil {
				err = m.watch(ctx, cs, keep, rv)
			}
			if err != nil {
				_ = ctxwait.Sleep(ctx, time.Second)
			}
		}
	}()
	return m
}

// list reads every Event keep accepts and returns the list's resourceVersion.
func (m *countMonitor) list(ctx context.Context, cs kubernetes.Interface, keep func(*corev1.Event) bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for i := range l.Items {
		if keep(&l.Items[i]) {
			m.see(&l.Items[i])
		}
	}
	return l.ResourceVersion, nil
}

// watch follows the Events from rv with client-go's RetryWatcher, which
// opens a new watch from the last resourceVersion seen whenever one ends,
// also while the server is down. Each watch asks the server to end it
// after watchSpan: a server being stopped waits for its open watches. It
// returns when the RetryWatcher gives up (rv is too old after a restart:
// the next list compares what it finds with what was seen) or ctx ends.
func (m *countMonitor) watch(ctx context.Context, cs kubernetes.Interface, keep func(*corev1.Event) bool, rv string) error {
	const watchSpan = int64(2) // seconds
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.TimeoutSeconds = ptr.To(watchSpan)
		return cs.CoreV1().Events("").Watch(ctx, opts)
	}}
	// Its "Watch failed" lines, once a second while the server is down,
	// would only bury a failing test's output.
	w, err := watchtools.NewRetryWatcherWithContext(klog.NewContext(ctx, logr.Discard()), rv, lw)
	if err != nil {
		return err
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		ev, ok := e.Object.(*corev1.Event)
		if !ok { // an error status: the RetryWatcher stops
			return fmt.Errorf("watch: %v", e.Object)
		}
		if e.Type == watch.Deleted || !keep(ev) {
			continue
		}
		m.mu.Lock()
		m.reads++
		m.see(ev)
		m.mu.Unlock()
	}
	return ctx.Err()
}

// see records ev's count, and a drop when it is below the last one seen.
// The caller holds m.mu.
func (m *countMonitor) see(ev *corev1.Event) {
	key, n := ev.Namespace+"/"+ev.Name, k8sevent.CoreV1Occurrences(ev)
	if prev, ok := m.last[key]; ok && n < prev {
		m.drops = append(m.drops, fmt.Sprintf("%s: %d then %d", key, prev, n))
	}
	m.last[key] = n
}

// objectCounts is the count of every Event keep accepts, by namespace/name.
func objectCounts(ctx context.Context, cs kubernetes.Interface, keep func(*corev1.Event) bool) (map[string]int64, error) {
	evs, err := listEvents(ctx, cs, keep)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(evs))
	for i := range evs {
		out[evs[i].Namespace+"/"+evs[i].Name] = k8sevent.CoreV1Occurrences(&evs[i])
	}
	return out, nil
}

// snapshot is the count of every object as last read.
func (m *countMonitor) snapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.last))
	for k, v := range m.last {
		out[k] = v
	}
	return out
}

// finish stops following and returns the drops seen and how many lists
// and watch events were read.
func (m *countMonitor) finish() (drops []string, reads int) {
	m.stop()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	sort.Strings(m.drops)
	return m.drops, m.reads
}

// belowSnapshot lists the objects whose final count in r is lower than in
// an earlier snapshot, or which are gone.
func belowSnapshot(r mirrorResult, snap map[string]int64) []string {
	final := map[string]int64{}
	for i := range r.bEvents {
		final[r.bEvents[i].Namespace+"/"+r.bEvents[i].Name] = k8sevent.CoreV1Occurrences(&r.bEvents[i])
	}
	var out []string
	for k, n := range snap {
		if final[k] < n {
			out = append(out, fmt.Sprintf("%s: %d before, %d at the end", k, n, final[k]))
		}
	}
	sort.Strings(out)
	return out
}

// markerOccurrences is what the marker Events add to a tally.
func markerOccurrences(t eventTally) int64 {
	var n int64
	for p, c := range t.Pairs {
		if p.Reason == markerReason {
			n += c
		}
	}
	return n
}

// faultReport is one row of the fault table.
type faultReport struct {
	name     string
	sent     int64 // occurrences the storm wrote into the source
	final    int64 // sum of the final counts in the destination, markers left out
	objects  int   // Event objects in the destination, markers left out
	twins    int   // objects of one series claiming the same occurrences
	writes   int64 // Event writes the destination accepted
	duration time.Duration
}

func newFaultReport(name string, sent int64, r mirrorResult, start time.Time) faultReport {
	markers := markerOccurrences(r.b)
	return faultReport{name: name, sent: sent, final: r.b.Occurrences - markers, objects: r.b.Objects - int(markers),
		twins: len(overlappingObjects(r.bEvents, math.MaxInt, false)), writes: r.bWrites, duration: time.Since(start).Round(time.Second)}
}

// log prints the row: | test | occurrences sent | sum of final counts | lost | objects | twins | writes | duration |.
func (f faultReport) log(t *testing.T) {
	t.Helper()
	t.Logf("fault table row: | %s | %d | %d | %d | %d | %d | %d | %v |",
		f.name, f.sent, f.final, f.sent-f.final, f.objects, f.twins, f.writes, f.duration)
}

// assertFaultPromise checks what the pipeline promises through a fault:
// the source holds exactly the occurrences sent (the premise), every
// (object, reason) of the source is in the destination with exactly the
// source's total, the sum of the final counts is the occurrences sent, no
// two objects of one series claim the same occurrences, no count was
// seen going down, and nothing was dropped for good.
func assertFaultPromise(t *testing.T, r mirrorResult, sent int64, drops []string) {
	t.Helper()
	require.Equal(t, sent, r.a.Occurrences-markerOccurrences(r.a), "the source holds every occurrence sent")
	var invisible []string
	for p := range r.a.Pairs {
		if r.b.Pairs[p] == 0 {
			invisible = append(invisible, p.String())
		}
	}
	sort.Strings(invisible)
	assert.Empty(t, invisible, "(object, reason) pairs of the source missing from the destination")
	assert.Equal(t, sent, r.b.Occurrences-markerOccurrences(r.b), "sum of the final counts = occurrences sent")
	assertExact(t, r)
	assert.Empty(t, drops, "counts that went down in the destination")
}

// throttledEventWrites is how many Event creates and patches an API server
// answered with 429.
func throttledEventWrites(ctx context.Context, cs kubernetes.Interface) (posts, patches int64, err error) {
	m, err := apiserverMetrics(ctx, cs)
	if err != nil {
		return 0, 0, err
	}
	posts = int64(m.Sum("apiserver_request_total", "resource=events", "verb=POST", "code=429"))
	patches = int64(m.Sum("apiserver_request_total", "resource=events", "verb=PATCH", "code=429"))
	return posts, patches, nil
}
