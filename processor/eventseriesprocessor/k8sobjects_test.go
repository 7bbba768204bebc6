package eventseriesprocessor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/k8sobjects"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// watchedObjects is a stream as contrib's k8sobjects receiver makes of
// watched Events, each update of an object one watch event, in both API
// groups: core/v1 Events whose count its emitter patches (sometimes by
// more than one, sometimes with the same count again), events.k8s.io
// series, a Node's Event in default; then two DELETED watch events,
// another kind, and a pull of every object as it ended. occurrences is
// the final count of each (regarding object, reason).
type watchedObjects struct {
	batches     []plog.Logs
	occurrences map[string]int64 // Kind/name/reason → final count
	total       int64
}

func newWatchedObjects(t *testing.T) watchedObjects {
	t.Helper()
	w := watchedObjects{occurrences: map[string]int64{}}
	add := func(typ watch.EventType, obj runtime.Object) {
		ld, err := k8sobjects.Watch(typ, obj)
		require.NoError(t, err)
		w.batches = append(w.batches, ld)
	}
	var last []runtime.Object
	// Counts each object is watched at, in order: a jump is patches the
	// receiver did not see one by one, a repeat an update of something else.
	for i, counts := range [][]int64{{1, 2, 3, 4, 5}, {1, 3, 3, 7}, {1, 2, 2, 2}} {
		pod := fmt.Sprintf("web-%d", i)
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: pod + ".17a", Namespace: "shop", UID: types.UID("core-uid-" + pod)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: pod, UID: types.UID("pod-" + pod)},
			Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: metav1.NewTime(t0),
		}
		for j, n := range counts {
			ev.Count, ev.LastTimestamp = int32(n), metav1.NewTime(t0.Add(time.Duration(j)*time.Second))
			add(map[bool]watch.EventType{true: watch.Added, false: watch.Modified}[j == 0], ev)
		}
		w.occurrences["Pod/"+pod+"/BackOff"] = counts[len(counts)-1]
		last = append(last, ev.DeepCopy())
	}
	for i, counts := range [][]int32{{1, 2, 4, 9}, {1, 2}} {
		pod := fmt.Sprintf("batch-%d", i)
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: pod + ".17b", Namespace: "jobs", UID: types.UID("events-uid-" + pod)},
			EventTime:  metav1.NewMicroTime(t0), ReportingController: "default-scheduler", ReportingInstance: "scheduler-1",
			Action: "Scheduling", Reason: "FailedScheduling", Note: "0/3 nodes are available", Type: corev1.EventTypeWarning,
			Regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "jobs", Name: pod, UID: types.UID("pod-" + pod)},
		}
		for j, n := range counts {
			if n > 1 {
				ev.Series = &eventsv1.EventSeries{Count: n, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Duration(j) * time.Second))}
			}
			add(map[bool]watch.EventType{true: watch.Added, false: watch.Modified}[j == 0], ev)
		}
		w.occurrences["Pod/"+pod+"/FailedScheduling"] = int64(counts[len(counts)-1])
		last = append(last, ev.DeepCopy())
	}
	node := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1.17c", Namespace: "default", UID: "events-uid-node-1"},
		Regarding:  corev1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"},
		Reason:     "NodeNotReady", Note: "Node node-1 status is now: NodeNotReady", Type: corev1.EventTypeNormal,
		DeprecatedSource: corev1.EventSource{Component: "node-controller"}, DeprecatedFirstTimestamp: metav1.NewTime(t0),
	}
	for j, n := range []int32{1, 2, 3} {
		node.DeprecatedCount, node.DeprecatedLastTimestamp = n, metav1.NewTime(t0.Add(time.Duration(j)*time.Second))
		add(map[bool]watch.EventType{true: watch.Added, false: watch.Modified}[j == 0], node)
	}
	w.occurrences["Node/node-1/NodeNotReady"] = 3
	last = append(last, node)

	// Gone objects, another kind and a pull of every object: no occurrence.
	add(watch.Deleted, last[0])
	add(watch.Deleted, last[3])
	add(watch.Added, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}})
	ld, err := k8sobjects.Pull(last...)
	require.NoError(t, err)
	w.batches = append(w.batches, ld)
	for _, n := range w.occurrences {
		w.total += n
	}
	return w
}

// TestK8sObjectsStreamIsExact: records of contrib's k8sobjects receiver,
// decoded by the codec alone, count exactly: per (regarding object,
// reason) the last count written is the watched object's, each series one
// object, the new occurrences add up; the DELETED records, the Pod and the
// pull count none.
func TestK8sObjectsStreamIsExact(t *testing.T) {
	for _, mode := range []string{modeSeries, modeLegacy} {
		t.Run(mode, func(t *testing.T) {
			w := newWatchedObjects(t)
			h := newHarness(t, func(cfg *Config) { cfg.Mode, cfg.NonEventRecords = mode, recordsDrop })
			for _, ld := range w.batches {
				h.consume(ld)
			}
			h.shutdown()

			d := collect(t, h.sink)
			d.requireExact(t, w.total)
			final := map[string]int64{}
			for name, counts := range d.counts {
				final[d.series[name]] += counts[len(counts)-1]
			}
			assert.Equal(t, w.occurrences, final, "final count per (regarding object, reason)")
			metadatatest.AssertEqualProcessorEventseriesOccurrences(t, h.tel, []metricdata.DataPoint[int64]{{Value: w.total}},
				metricdatatest.IgnoreTimestamp())
			assert.Equal(t, map[string]int64{"outcome=dropped,problem=not_event": 3},
				counterPoints(h.tel, "otelcol_processor_eventseries_input_problems", "problem=not_event"))
			for _, r := range h.records() {
				assert.Equal(t, pcommon.ValueTypeStr, r.lr.Body().Type(), "an emitted record is a contract record: its body the note")
			}
		})
	}
}

// TestK8sObjectsRecordsWithoutEventPass: with non_event_records: pass (the
// default), what carries no occurrence goes on byte for byte.
func TestK8sObjectsRecordsWithoutEventPass(t *testing.T) {
	gone, err := k8sobjects.Watch(watch.Deleted, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-0.17a", Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-0"}, Reason: "BackOff", Count: 5})
	require.NoError(t, err)
	want := plog.NewLogs()
	gone.CopyTo(want)
	h := newHarness(t, nil)
	h.consume(gone)
	require.Len(t, h.records(), 1)
	assert.Equal(t, want.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().AsRaw(), h.records()[0].lr.Body().AsRaw())
	assert.Zero(t, counterSum(h.tel, "otelcol_processor_eventseries_occurrences"))
}
