package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// mirrorSpec is a collector that watches the Events of cluster A and writes
// the compressed result to cluster B: k8sevents → eventseries → k8sevents.
type mirrorSpec struct {
	kubeA, kubeB string
	controller   string   // the exporter's reporting controller: names what it wrote in B
	namespaces   []string // watched in A; empty: all
	storage      string   // file_storage directory for the checkpoint, the state and the exporter's queue; "": none (no queue)
	api          string   // the exporter's api; "": its default (auto)
	finishAfter  string   // the processor's series.finish_after; "": its default (6m)
	fastRetry    bool     // retry failed writes after 1 s, backing off to at most 5 s
}

// config is the collector configuration. The processor keeps its defaults
// (series mode, processing time, finish_after 6m): no series ends during a
// test, so the open ones reach B only through the shutdown flush, which is
// what a SIGTERM must deliver. The exporter's QPS cap is raised only to keep
// the test short. initial: all, because A is empty when the collector
// starts and nothing written before the first watch may be missed.
func (s mirrorSpec) config() string {
	var b strings.Builder
	exts := "health_check"
	if s.storage != "" {
		exts += ", file_storage"
		fmt.Fprintf(&b, "extensions:\n  file_storage: {directory: %q, create_directory: true}\n", s.storage)
	}
	fmt.Fprintf(&b, "receivers:\n  k8sevents:\n    auth_type: kubeConfig\n    kubeconfig: %q\n    initial: all\n", s.kubeA)
	if len(s.namespaces) > 0 {
		fmt.Fprintf(&b, "    namespaces: [%s]\n", strings.Join(s.namespaces, ", "))
	}
	if s.storage != "" {
		b.WriteString("    storage: file_storage\n")
	}
	b.WriteString("processors:\n  eventseries:\n")
	if s.storage != "" {
		b.WriteString("    storage: file_storage\n")
	}
	if s.finishAfter != "" {
		fmt.Fprintf(&b, "    series: {finish_after: %s}\n", s.finishAfter)
	}
	fmt.Fprintf(&b, "exporters:\n  k8sevents:\n    auth_type: kubeConfig\n    kubeconfig: %q\n"+
		"    reporting_controller: %s\n    reporting_instance: e2e-mirror\n    qps: 100\n    burst: 200\n", s.kubeB, s.controller)
	if s.storage != "" {
		b.WriteString("    sending_queue: {storage: file_storage}\n")
	}
	if s.api != "" {
		fmt.Fprintf(&b, "    api: %s\n", s.api)
	}
	if s.fastRetry {
		// exporterhelper's default backoff grows to 30 s: after an outage
		// the first retry could wait that long, which only lengthens a test.
		b.WriteString("    retry_on_failure: {initial_interval: 1s, max_interval: 5s}\n")
	}
	fmt.Fprintf(&b, "service:\n  extensions: [%s]\n  pipelines:\n    logs:\n"+
		"      receivers: [k8sevents]\n      processors: [eventseries]\n      exporters: [k8sevents]\n", exts)
	return b.String()
}

// stormWindow is the first d of a built-in scenario.
func stormWindow(t *testing.T, name string, d time.Duration) []storm.Occurrence {
	t.Helper()
	occs, err := storm.Scenario(name)
	require.NoError(t, err)
	end := storm.Start.Add(d)
	for i, o := range occs {
		if !o.Time.Before(end) { // scenarios are in time order
			return occs[:i]
		}
	}
	return occs
}

// mergeStorms interleaves storms in time order.
func mergeStorms(storms ...[]storm.Occurrence) []storm.Occurrence {
	var out []storm.Occurrence
	for _, s := range storms {
		out = append(out, s...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// awaitMirrored writes a marker Event into every namespace in A and waits
// until all of them are in B: one watch per namespace keeps order only
// within its namespace, so each namespace needs its own marker.
func awaitMirrored(ctx context.Context, t *testing.T, a, b kubernetes.Interface, nss []string, id string, timeout time.Duration) {
	t.Helper()
	pod := "e2e-marker-" + id
	for _, ns := range nss {
		require.NoError(t, writeMarker(ctx, a, ns, pod))
	}
	eventually(t, timeout, func() (bool, string) {
		for _, ns := range nss {
			ok, err := hasMarker(ctx, b, ns, pod)
			if err != nil || !ok {
				return false, fmt.Sprintf("marker %s/%s not mirrored yet (%v)", ns, pod, err)
			}
		}
		return true, ""
	})
}

// awaitWatchStarted is awaitMirrored for a collector that just started.
// Its receiver (initial: none) begins at the resourceVersion of its first
// list, a moment after the collector reports healthy, and a marker written
// in between is never mirrored. Markers go into each namespace every 2 s
// until one per namespace is in B; the earlier ones still not in B then
// are deleted from A, so that A and B still tally: one namespace's records
// are written in order, so the receiver never saw them.
func awaitWatchStarted(ctx context.Context, t *testing.T, a, b kubernetes.Interface, nss []string, id string, timeout time.Duration) {
	t.Helper()
	written := map[string][]string{} // marker pods per namespace, oldest first
	seen := map[string]int{}         // per namespace, the index of a marker in B
	var last time.Time
	eventually(t, timeout, func() (bool, string) {
		var waiting []string
		for _, ns := range nss {
			if _, ok := seen[ns]; ok {
				continue
			}
			for i, pod := range written[ns] {
				ok, err := hasMarker(ctx, b, ns, pod)
				require.NoError(t, err)
				if ok {
					seen[ns] = i
					break
				}
			}
			if _, ok := seen[ns]; !ok {
				waiting = append(waiting, ns)
			}
		}
		if len(waiting) == 0 {
			return true, ""
		}
		if time.Since(last) >= 2*time.Second {
			for _, ns := range waiting {
				pod := fmt.Sprintf("e2e-marker-%s-%d", id, len(written[ns]))
				require.NoError(t, writeMarker(ctx, a, ns, pod))
				written[ns] = append(written[ns], pod)
			}
			last = time.Now()
		}
		return false, fmt.Sprintf("no marker in B yet in %v", waiting)
	})
	for ns, i := range seen {
		for _, pod := range written[ns][:i] {
			// Asked again now that a later marker is in B: had the
			// receiver seen this one, it would be there too.
			ok, err := hasMarker(ctx, b, ns, pod)
			require.NoError(t, err)
			if !ok {
				require.NoError(t, a.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{},
					metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod}))
			}
		}
	}
}

// mirrorResult is A and B after a mirror run.
type mirrorResult struct {
	a, b       eventTally
	bEvents    []corev1.Event
	aWrites    int64 // Event writes A answered (the recorders' and the markers')
	bWrites    int64 // Event writes B answered: the exporter's
	lines      []string
	missing    int64 // occurrences of A not in B
	extra      int64 // occurrences in B beyond A's
	overlapped []string
}

// eventWritesOf reads how many Event writes A and B have answered so far.
func eventWritesOf(ctx context.Context, t *testing.T, a, b kubernetes.Interface) [2]int64 {
	t.Helper()
	var n [2]int64
	for i, cs := range []kubernetes.Interface{a, b} {
		var err error
		n[i], err = eventWrites(ctx, cs, "200", "201")
		require.NoError(t, err)
	}
	return n
}

// compareMirror reads A's and B's Events of the namespaces (B's: those the
// controller wrote), and compares them per (regarding object, reason). The
// mirror also copies what the API server reports in other namespaces at
// moments of its own; those are not the storm's. before is what
// eventWritesOf said when the run started.
func compareMirror(ctx context.Context, t *testing.T, a, b kubernetes.Interface, nss []string, controller string, before [2]int64) mirrorResult {
	t.Helper()
	aEvents, err := listEvents(ctx, a, inNamespaces(nss...))
	require.NoError(t, err)
	bEvents, err := listEvents(ctx, b, ourEventsIn(controller, nss))
	require.NoError(t, err)
	r := mirrorResult{a: tallyEvents(aEvents), b: tallyEvents(bEvents), bEvents: bEvents}
	r.lines, r.missing, r.extra = diffTallies(r.a, r.b, 20)
	r.overlapped = overlappingObjects(bEvents, 20, false)
	after := eventWritesOf(ctx, t, a, b)
	r.aWrites, r.bWrites = after[0]-before[0], after[1]-before[1]
	if len(r.lines) > 0 {
		logObjects(t, aEvents, bEvents, r.a, r.b, 3)
	}
	keys, multi := multiObjectKeys(bEvents)
	t.Logf("A: %d occurrences of %d pairs in %d objects, %d event writes; B: %d occurrences of %d pairs in %d objects (%d series keys, %d with more than one object), %d event writes; missing %d, extra %d",
		r.a.Occurrences, len(r.a.Pairs), r.a.Objects, r.aWrites, r.b.Occurrences, len(r.b.Pairs), r.b.Objects, keys, multi, r.bWrites, r.missing, r.extra)
	return r
}

// logObjects shows, for the first n pairs whose totals differ, the objects
// behind them in A and in B: which object counts what.
func logObjects(t *testing.T, aEvents, bEvents []corev1.Event, a, b eventTally, n int) {
	t.Helper()
	var pairs []eventPair
	for p, want := range a.Pairs {
		if b.Pairs[p] != want {
			pairs = append(pairs, p)
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].String() < pairs[j].String() })
	describe := func(evs []corev1.Event, p eventPair) string {
		var out []string
		for i := range evs {
			if pairOf(&evs[i]) == p {
				first, last := eventSpan(&evs[i])
				out = append(out, fmt.Sprintf("%s count %d [%s .. %s]", evs[i].Name, k8sevent.CoreV1Occurrences(&evs[i]),
					first.Format("15:04:05.000"), last.Format("15:04:05.000")))
			}
		}
		return strings.Join(out, "; ")
	}
	for _, p := range pairs[:min(n, len(pairs))] {
		t.Logf("%v\n  A: %s\n  B: %s", p, describe(aEvents, p), describe(bEvents, p))
	}
}

// logPipeline logs what the collector's components counted.
func logPipeline(t *testing.T, name string, c *collector) {
	t.Helper()
	p := c.scrape(t).Pipeline()
	t.Logf("%s: %+v", name, p)
	assert.Zero(t, p.PermanentFailures, "%s: no record may be dropped for good", name)
}

// assertExact checks what a mirror promises: per (object, reason) B holds
// exactly A's total (nothing lost, nothing counted twice), and no two
// objects in B claim the same occurrences.
func assertExact(t *testing.T, r mirrorResult) {
	t.Helper()
	assert.Zero(t, r.missing, "occurrences of A lost on the way to B")
	assert.Zero(t, r.extra, "occurrences counted more than once in B")
	assert.Empty(t, r.lines, "per (object, reason): A's total count must be B's")
	assert.Empty(t, r.overlapped, "duplicate objects in B")
}

// TestMirror is end-to-end test 2: client-go's recorders write a storm into
// API server A (tools/record: core/v1 Events with counts, for the crashloop
// and cronjob storms; tools/events: events.k8s.io series, for the image pull
// and failed scheduling storms, at the same time); the collector mirrors A
// into B. Every (regarding object, reason) of A must be in B with exactly
// A's total count, and no two objects in B may claim the same occurrences.
//
// Exact counts need the SIGTERM: open series (finish_after 6m) reach B
// with their full count only through the processor's shutdown flush, so
// waiting for B to stop changing would leave them at count 2. The markers
// say when everything written to A went through before the SIGTERM.
func TestMirror(t *testing.T) {
	parallel(t)
	binary(t) // skips before starting API servers when the collector is not built
	start := time.Now()
	srvA, srvB := kubetest.Start(t), kubetest.Start(t)
	a, b := srvA.Clientset(), srvB.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	legacy := mergeStorms(stormWindow(t, "crashloop", 4*time.Minute), stormWindow(t, "cronjob", 4*time.Minute))
	series := mergeStorms(stormWindow(t, "imagepull", 4*time.Minute), stormWindow(t, "failedscheduling", 6*time.Minute))
	nss := storm.Namespaces(legacy, series)
	for _, cs := range []kubernetes.Interface{a, b} {
		require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, legacy))
		require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, series))
	}

	const controller = "k8sevents.io/e2e-mirror"
	dir := t.TempDir()
	spec := mirrorSpec{kubeA: srvA.Kubeconfig(t), kubeB: srvB.Kubeconfig(t), controller: controller}
	c := startCollector(t, dir, spec.config())

	// Both recorders at once, each about 15-25 s of accelerated storm.
	var wg sync.WaitGroup
	var stats [2]stormsend.Stats
	var errs [2]error
	for i, run := range []struct {
		occs     []storm.Occurrence
		recorder string
	}{{legacy, stormsend.RecorderLegacy}, {series, stormsend.RecorderEvents}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = stormsend.Record(ctx, srvA.RESTConfig(), run.occs, stormsend.Options{Speed: 16, MaxDuration: 2 * time.Minute}, run.recorder)
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0], "tools/record storm")
	require.NoError(t, errs[1], "tools/events storm")
	t.Logf("storm: record %d occurrences, %d writes, %d failures in %v; events %d occurrences, %d writes, %d failures in %v",
		stats[0].Occurrences, stats[0].Writes, stats[0].Failures, stats[0].Elapsed.Round(time.Millisecond),
		stats[1].Occurrences, stats[1].Writes, stats[1].Failures, stats[1].Elapsed.Round(time.Millisecond))

	awaitMirrored(ctx, t, a, b, nss, "mirror", 2*time.Minute)
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute), "SIGTERM: the processor flushes its open series, the queue drains")

	r := compareMirror(ctx, t, a, b, nss, controller, [2]int64{})
	assertExact(t, r)
	assert.Equal(t, len(r.a.Pairs), len(r.b.Pairs), "every pair of A, and nothing else, in B")
	t.Logf("took %v", time.Since(start).Round(time.Second))
}
