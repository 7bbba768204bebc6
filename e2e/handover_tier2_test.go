package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The OTLP-ingestion shape as deploy/otlp-tier{1,2}.yaml runs it:
// the ready tier1-loadbalancer.yaml and tier2-processor.yaml. Each tier-2
// collector is a StatefulSet pod: a fixed address (its stable name; here a
// fixed loopback port), its own storage directory (its volume claim) kept
// across its restarts, and its reporting instance (the pod name). Tier 1
// routes by the static list of those addresses.

// tier2Pod is one tier-2 StatefulSet pod, started again and again with the
// same address and storage.
type tier2Pod struct {
	index      int
	grpc, http string
	dir        string
	runs       int
	c          *collector
	removed    bool // scaled away: not started again
}

// tier2Rig is one API server, the tier-2 pods and the storm's truth.
type tier2Rig struct {
	srv         *kubetest.Server
	cs          kubernetes.Interface
	controller  string
	finishAfter string   // the processor's series.finish_after; "": the default (6m)
	env         []string // more environment for the tier-2 pods
	acc         tierAccess
	pods        []*tier2Pod
	occs        []storm.Occurrence
	truth       map[objectReason]int64
}

// newTier2Rig starts the API server and the first pods.
func newTier2Rig(ctx context.Context, t *testing.T, name string, pods int, finishAfter string) *tier2Rig {
	t.Helper()
	binary(t)
	rig := &tier2Rig{srv: kubetest.Start(t), controller: "k8sevents.io/e2e-handover-" + name, finishAfter: finishAfter,
		occs: faultStorm(t, 3*time.Minute, 90*time.Second, 6*time.Second), truth: map[objectReason]int64{}}
	rig.cs = rig.srv.Clientset()
	rig.acc = newTierAccess(t, rig.srv)
	require.NoError(t, stormsend.EnsureNamespaces(ctx, rig.cs, rig.occs))
	for i := range rig.occs {
		o := &rig.occs[i]
		rig.truth[objectReason{o.Regarding.Namespace + "/" + o.Regarding.Kind + "/" + o.Regarding.Name, o.Reason}]++
	}
	for i := range pods {
		rig.start(t, rig.addPod(t, i))
	}
	return rig
}

func (rig *tier2Rig) addPod(t *testing.T, i int) *tier2Pod {
	t.Helper()
	p := &tier2Pod{index: i, grpc: loopback(t), http: loopback(t), dir: t.TempDir()}
	rig.pods = append(rig.pods, p)
	return p
}

// start runs pod p once more, as deploy/otlp-tier2.yaml does, plus a file sink.
func (rig *tier2Rig) start(t *testing.T, p *tier2Pod) {
	t.Helper()
	p.runs++
	env := []string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + rig.srv.Kubeconfig(t), "K8S_QPS=1000", "K8S_BURST=1000",
		"OTLP_GRPC_ENDPOINT=" + p.grpc, "OTLP_HTTP_ENDPOINT=" + p.http, "STORAGE_DIR=" + filepath.Join(p.dir, "storage"),
		"REPORTING_CONTROLLER=" + rig.controller, fmt.Sprintf("REPORTING_INSTANCE=otelcol-tier2-%d", p.index)}
	env = append(env, slices.Concat(rig.acc.tls.env(), rig.acc.tier1.env())...)
	overlays := []string{sinkOverlay(sinkFile(p.dir, p.runs), "k8sevents")}
	if rig.finishAfter != "" {
		// adopt_window is finish_after in the records' time: the replay
		// runs handoverSpeed times faster than the processor's clock.
		d, err := time.ParseDuration(rig.finishAfter)
		require.NoError(t, err)
		overlays = append(overlays, fmt.Sprintf("processors:\n  eventseries:\n    series: {finish_after: %s}\nexporters:\n  k8sevents:\n    adopt_window: %s\n",
			rig.finishAfter, d*handoverSpeed))
	}
	env = append(env, rig.env...)
	p.c = startCollectorEnv(t, p.dir, readyConfig(t, "tier2-processor.yaml"), env, overlays...)
}

// tier1 starts a tier-1 collector routing to the pods given.
func (rig *tier2Rig) tier1(t *testing.T, pods ...*tier2Pod) (*collector, string) {
	t.Helper()
	var ring []string
	for _, p := range pods {
		ring = append(ring, p.grpc)
	}
	endpoint := loopback(t)
	c := startCollectorEnv(t, t.TempDir(), readyConfig(t, "tier1-loadbalancer.yaml"), append([]string{"OTLP_GRPC_ENDPOINT=" + endpoint,
		"OTLP_HTTP_ENDPOINT=" + loopback(t), "TIER2_ENDPOINTS=[" + strings.Join(ring, ", ") + "]",
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + rig.srv.Kubeconfig(t)}, rig.acc.ingestEnv()...))
	return c, endpoint
}

// send replays occs to a tier-1 collector at handoverSpeed, in the
// background; the storm's timestamps are kept (one occurrence each). With
// hold not nil, occurrence holdAt and the rest wait until it is closed.
func send(ctx context.Context, endpoint string, occs []storm.Occurrence, log *sendLog, hold <-chan struct{}, holdAt int) chan error {
	done := make(chan error, 1)
	go func() {
		st, err := stormsend.OTLP(ctx, endpoint, occs, stormsend.Options{Speed: handoverSpeed, MaxDuration: 2 * time.Minute,
			Progress: log.record, Hold: hold, HoldAt: holdAt})
		if err == nil && st.Writes != int64(len(occs)) {
			err = fmt.Errorf("%d of %d records accepted", st.Writes, len(occs))
		}
		done <- err
	}()
	return done
}

// drain stops every pod (each flushes its open series into its persistent
// queue), starts each once more to write that, waits until the API server
// holds at least every occurrence sent (nothing can be written after that
// but a count twice, which the comparison shows), and stops them.
// slack: occurrences a crash may have lost, which never arrive.
func (rig *tier2Rig) drain(t *testing.T, slack int64) {
	t.Helper()
	var live []*tier2Pod
	for _, p := range rig.pods {
		if !p.removed {
			live = append(live, p)
		}
	}
	for _, p := range live {
		require.NoError(t, p.c.Stop(time.Minute), "tier-2 pod %d", p.index)
	}
	for _, p := range live {
		rig.start(t, p)
	}
	awaitOccurrences(t, rig.cs, rig.controller, rig.truth, slack)
	for _, p := range live {
		require.NoError(t, p.c.Stop(time.Minute), "tier-2 pod %d", p.index)
	}
}

// awaitOccurrences waits until the Events of controller count at least the
// occurrences of truth in all, less slack: after that, nothing more can be
// written but a count twice, which the comparison shows.
func awaitOccurrences(t *testing.T, cs kubernetes.Interface, controller string, truth map[objectReason]int64, slack int64) {
	t.Helper()
	want := -slack
	for _, n := range truth {
		want += n
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		var got int64
		for _, n := range readScaleOut(t, cs, controller).counts {
			got += n
		}
		return got >= want, fmt.Sprintf("the API server holds %d of %d occurrences", got, want)
	})
}

// tier2Result is the API server's Events and the file sinks after a run.
type tier2Result struct {
	out         scaleOutResult
	keys, multi int                               // series keys, and those written as more than one object
	overlapping []string                          // objects of one series key claiming the same occurrences
	movedKeys   int                               // series keys written by more than one tier-2 pod
	owners      map[eventSeriesKey]map[string]int // series key -> writing pod (k8sevents.io/written-by) -> objects
	sink        sinkResult
	sinkPairs   map[objectReason]int64
}

func (rig *tier2Rig) result(ctx context.Context, t *testing.T) tier2Result {
	t.Helper()
	r := tier2Result{out: readScaleOut(t, rig.cs, rig.controller), sinkPairs: map[objectReason]int64{}}
	evs, err := listEvents(ctx, rig.cs, byController(rig.controller))
	require.NoError(t, err)
	r.keys, r.multi = multiObjectKeys(evs)
	r.overlapping = overlappingObjects(evs, len(evs), false)
	r.owners = map[eventSeriesKey]map[string]int{}
	for i := range evs {
		k := seriesKeyOf(&evs[i])
		if r.owners[k] == nil {
			r.owners[k] = map[string]int{}
		}
		writer := evs[i].Annotations[k8sevent.AnnotationWrittenBy]
		assert.NotEmpty(t, writer, "%s names no writing pod", evs[i].Name)
		r.owners[k][writer]++
	}
	for _, in := range r.owners {
		if len(in) > 1 {
			r.movedKeys++
		}
	}
	var files []string
	for _, p := range rig.pods {
		for i := 1; i <= p.runs; i++ {
			files = append(files, sinkFile(p.dir, i))
		}
	}
	r.sink = readSink(t, files...)
	for p, n := range r.sink.pairs {
		r.sinkPairs[objectReasonOf(p)] += n
	}
	t.Logf("API server: %d Events, %d series keys, %d with more than one object, %d overlapping, %d written by more than one pod; sink: %d records, %d re-emitted",
		r.out.events, r.keys, r.multi, len(r.overlapping), r.movedKeys, r.sink.records, r.sink.reemitted)
	return r
}

// objectReasonOf is the sink's pair as the truth counts it: the UID left out.
func objectReasonOf(p eventPair) objectReason {
	return objectReason{p.Namespace + "/" + p.Kind + "/" + p.Name, p.Reason}
}

// assertExactTier2 checks the first column on the API server and in the
// sink: every (object, reason) with exactly the occurrences sent.
func (rig *tier2Rig) assertExact(t *testing.T, r tier2Result) {
	t.Helper()
	rig.explain(t, r)
	assert.Equal(t, rig.truth, r.out.counts, "API server: final counts per (object, reason) = occurrences sent")
	assert.Equal(t, rig.truth, r.sinkPairs, "file sink: highest counts per (object, reason) = occurrences sent")
}

// explain logs each (object, reason) whose total on the API server or in
// the sink is not what was sent, with the sink's records of its series:
// what a failure needs, before the long diffs.
func (rig *tier2Rig) explain(t *testing.T, r tier2Result) {
	t.Helper()
	var lines []string
	for k, want := range rig.truth {
		api, sink := r.out.counts[k], r.sinkPairs[k]
		if api == want && sink == want {
			continue
		}
		var trails []string
		for name, p := range r.sink.pairOf {
			if objectReasonOf(p) == k {
				trails = append(trails, fmt.Sprintf("%s %v", name, r.sink.trail[name]))
			}
		}
		slices.Sort(trails)
		lines = append(lines, fmt.Sprintf("%v: sent %d, API server %d, sink %d; its series in the sink: %s", k, want, api, sink, strings.Join(trails, "; ")))
	}
	for k, n := range r.sinkPairs {
		if _, sent := rig.truth[k]; !sent {
			lines = append(lines, fmt.Sprintf("%v: sent none, sink %d", k, n))
		}
	}
	if len(lines) == 0 {
		return
	}
	slices.Sort(lines)
	t.Logf("sink files: %v", r.sink.files)
	t.Logf("%d (object, reason) not as sent:\n%s", len(lines), strings.Join(lines[:min(len(lines), 20)], "\n"))
}

// tier2Restart runs the storm through tier 1 and three tier-2 pods and
// restarts pod 1 a third of the way in (SIGTERM, or SIGKILL with crash), at
// once on the same address and volume, while tier 1 goes on routing to it.
// bound is what tier 1 sent in crashWindow before a kill (0 for SIGTERM).
func tier2Restart(t *testing.T, name string, crash bool) (rig *tier2Rig, r tier2Result, bound int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rig = newTier2Rig(ctx, t, name, 3, "")
	lb, endpoint := rig.tier1(t, rig.pods...)
	// The storm's second half waits until pod 1 has written, and the stop
	// comes once it flows: the pod goes down while records reach it, and
	// half a storm is left for tier 1 to keep for it, however long a loaded
	// machine takes to start the pods.
	var log sendLog
	hold, half := make(chan struct{}), len(rig.occs)/2
	done := send(rig.acc.withToken(ctx), endpoint, rig.occs, &log, hold, half)

	victim := rig.pods[1]
	eventually(t, time.Minute, func() (bool, string) {
		w := victim.c.scrape(t).Pipeline().Writes
		return log.sent() >= int64(len(rig.occs)/3) && w > 0, fmt.Sprintf("storm sent %d of %d, pod 1 writes %v", log.sent(), len(rig.occs), w)
	})
	close(hold)
	eventually(t, time.Minute, func() (bool, string) {
		return log.sent() > int64(half), fmt.Sprintf("storm sent %d of %d", log.sent(), len(rig.occs))
	})
	sentAtStop, stop := log.sent(), time.Now()
	if crash {
		victim.c.Kill()
		bound = log.within(stop.Add(-crashWindow), stop)
	} else {
		require.NoError(t, victim.c.Stop(time.Minute), "SIGTERM tier-2 pod 1")
	}
	rig.start(t, victim)
	eventually(t, time.Minute, func() (bool, string) {
		n := victim.c.scrape(t).Sum("otelcol_processor_eventseries_occurrences")
		return n > 0, "the restarted pod has counted nothing yet"
	})
	pause := time.Since(stop).Round(100 * time.Millisecond)
	require.NoError(t, <-done, "storm")
	require.NoError(t, lb.Stop(time.Minute), "tier 1 drains its queues")
	rig.drain(t, 0) // a crash loses nothing: every occurrence arrives
	r = rig.result(ctx, t)
	t.Logf("tier-2 pod 1 stopped (crash %v) after %d of %d occurrences; pause (the stop to its first count after the restart) %v; bound %d",
		crash, sentAtStop, len(rig.occs), pause, bound)
	return rig, r, bound
}

// TestHandOverTier2Rollout: a tier-2 pod rolls mid-storm: its records wait
// in tier 1 (retried until it is back) and it goes on with the series it
// had open. Exact counts, one object per series key (finish_after is the
// default 6m: no series ends during the test), each object written by one
// pod, nothing emitted twice to the sink.
func TestHandOverTier2Rollout(t *testing.T) {
	parallel(t)
	rig, r, _ := tier2Restart(t, "tier2-rollout", false)
	rig.assertExact(t, r)
	assert.Empty(t, r.overlapping, "objects of one series claiming the same occurrences")
	assert.Zero(t, r.multi, "series keys written as more than one object")
	assert.Zero(t, r.movedKeys, "series keys written by more than one pod")
	assert.Zero(t, r.sink.reemitted, "records the sink got again")
	for obj, in := range r.out.writers {
		assert.Len(t, in, 1, "%s written by more than one tier-2 pod", obj)
	}
}

// TestHandOverTier2Crash: a tier-2 pod is killed mid-storm. Tier 2 has
// nothing to read again: tier 1 resends only the request the pod had not
// answered. The processor's write-ahead log (deploy/otlp-tier2.yaml) holds
// every request it answered since its last save, and the restarted pod
// replays it: exact counts on the API server and in the sink, no
// occurrence lost or counted twice, one object per series key, each
// written by one pod. What the replay emits again reaches the sink twice:
// at most one record per record the pod received since its last save (5
// s), so at most the bound, what tier 1 sent within crashWindow (8 s)
// before the kill.
func TestHandOverTier2Crash(t *testing.T) {
	rig, r, bound := tier2Restart(t, "tier2-crash", true)
	var lost, twice int64
	for k, want := range rig.truth {
		got := r.out.counts[k]
		lost += max(0, want-got)
		twice += max(0, got-want)
	}
	t.Logf("tier-2 crash: %d occurrences lost, %d counted twice, %d series keys with more than one object, %d records again in the sink; bound %d",
		lost, twice, r.multi, r.sink.reemitted, bound)
	require.Positive(t, bound, "the pod was killed mid-storm")
	rig.assertExact(t, r)
	assert.Zero(t, lost, "occurrences lost")
	assert.Zero(t, twice, "occurrences counted twice")
	assert.Zero(t, r.multi, "series keys with a second object")
	assert.Empty(t, r.overlapping, "objects of one series claiming the same occurrences")
	assert.LessOrEqual(t, int64(r.sink.reemitted), bound, "records the sink got again")
	assert.Zero(t, r.movedKeys, "series keys written by more than one pod")
}

// TestHandOverTier2Scale: tier 2 goes from 3 pods to 4 and back to 3 mid
// storm. Tier 1 is rolled each time with the new list (the old one drains
// its queues first, so each object's records stay in order); the removed
// pod is scaled away only once it holds nothing (its series finished, its
// queue written): the scale-down procedure of docs/scaling.md. The
// ring moves about 1/N of the objects each time, most with their series
// still open on the old owner (finish_after 60 s, longer than any gap of
// the storm at 10x and than the pause between two phases on a loaded
// machine, so no series ends of itself and every second object would be a
// ring change's). The new owner's processor starts a series of
// its own; its exporter (adopt_open_series, as tier2-processor.yaml sets
// it) writes it into the open object, each series counting in its own
// slot. Exact counts on the API server and in the file sink, no series key
// with a second object, some objects written by two series (adopted), no
// record emitted twice. ADOPT_OPEN_SERIES=false in the environment runs
// it without adoption, which fails the second-object assertion.
func TestHandOverTier2Scale(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rig := newTier2Rig(ctx, t, "tier2-scale", 0, "60s")
	if v := os.Getenv("ADOPT_OPEN_SERIES"); v != "" {
		rig.env = append(rig.env, "ADOPT_OPEN_SERIES="+v)
	}
	for i := range 3 {
		rig.start(t, rig.addPod(t, i))
	}
	before, err := kubetest.EventRequests(ctx, rig.cs)
	require.NoError(t, err)
	third := len(rig.occs) / 3
	parts := [][]storm.Occurrence{rig.occs[:third], rig.occs[third : 2*third], rig.occs[2*third:]}
	var log sendLog
	phase := func(parts []storm.Occurrence, pods ...*tier2Pod) {
		lb, endpoint := rig.tier1(t, pods...)
		require.NoError(t, <-send(rig.acc.withToken(ctx), endpoint, parts, &log, nil, 0))
		require.NoError(t, lb.Stop(time.Minute), "tier 1 drains its queues")
	}
	phase(parts[0], rig.pods...)
	fourth := rig.addPod(t, 3)
	rig.start(t, fourth)
	phase(parts[1], rig.pods...)
	phase(parts[2], rig.pods[:3]...)
	// Scale-down: the removed pod gets nothing more; once it holds nothing
	// open and its exporter has written all it emitted, it goes.
	got := fourth.c.scrape(t).Sum("otelcol_processor_eventseries_occurrences")
	adoptedByFourth := fourth.c.scrape(t).Sum("otelcol_exporter_k8sevents_writes", "outcome=adopted_series")
	awaitIdle(t, fourth.c, 3*time.Minute) // finish_after, then its last writes
	require.NoError(t, fourth.c.Stop(time.Minute))
	fourth.removed = true
	rig.drain(t, 0)
	after, err := kubetest.EventRequests(ctx, rig.cs)
	require.NoError(t, err)
	cost := after.Minus(before)

	r := rig.result(ctx, t)
	evs, err := listEvents(ctx, rig.cs, byController(rig.controller))
	require.NoError(t, err)
	shared := 0
	for i := range evs {
		n := 0
		for k := range evs[i].Annotations {
			if strings.HasPrefix(k, "eventseries.k8sevents.io/count.") {
				n++
			}
		}
		if n > 1 {
			shared++
		}
	}
	t.Logf("scale 3 -> 4 -> 3: the fourth pod counted %v occurrences and adopted %v series; %d of %d objects written by more than one series; %d series keys, %d written as more than one object",
		got, adoptedByFourth, shared, len(evs), r.keys, r.multi)
	t.Logf("API server requests for events during the run (verb code: count): %v", cost)
	rig.assertExact(t, r)
	require.Positive(t, got, "the fourth pod owned part of the ring")
	assert.Zero(t, r.multi, "series keys written as more than one object")
	assert.Empty(t, r.overlapping, "objects of one series claiming the same occurrences")
	assert.Positive(t, shared, "objects written by two series: the ring change moved open series")
	assert.Zero(t, r.sink.reemitted, "records the sink got again")
}
