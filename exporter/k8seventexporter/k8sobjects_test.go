package k8seventexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/k8sobjects"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestWritesK8sObjectsRecords: records of contrib's k8sobjects receiver,
// straight from it, are written as contrib's k8s_events records are: the
// watched object's name and cumulative count, in both APIs, from objects
// of both API groups and both of the receiver's modes; a DELETED watch
// event carries no Event and is dropped, counted.
func TestWritesK8sObjectsRecords(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	eachAPI(t, r, func(t *testing.T, suffix string, exp exporter.Logs, tel *componenttest.Telemetry) {
		core := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web-1.core-" + suffix, Namespace: "shop", UID: types.UID("core-uid-" + suffix)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-1", UID: "uid-web-1"},
			Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0), Count: 1,
		}
		series := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1.series-" + suffix, Namespace: "shop", UID: types.UID("series-uid-" + suffix)},
			EventTime:  metav1.NewMicroTime(t0), ReportingController: "default-scheduler", ReportingInstance: "scheduler-1",
			Action: "Scheduling", Reason: "FailedScheduling", Note: "0/3 nodes are available", Type: corev1.EventTypeWarning,
			Regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-1", UID: "uid-web-1"},
			Series:    &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))},
		}
		sendObject(t, exp, watch.Added, core)
		core.Count, core.LastTimestamp = 3, metav1.NewTime(t0.Add(30*time.Second))
		sendObject(t, exp, watch.Modified, core)
		sendObject(t, exp, watch.Deleted, core)
		sendObject(t, exp, "", series) // pull mode
		require.Eventually(t, func() bool {
			return createdOrAdopted(t, tel) == 2 && counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 1
		}, 30*time.Second, 20*time.Millisecond)
		assert.Equal(t, int64(1), counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "invalid"),
			"the DELETED watch event")

		events := r.srv.Clientset().CoreV1().Events("shop")
		got, err := events.Get(context.Background(), core.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(3), k8sevent.CoreV1Occurrences(got))
		assert.Equal(t, core.Message, got.Message)
		assert.Equal(t, "web-1", got.InvolvedObject.Name)
		got, err = events.Get(context.Background(), series.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(4), k8sevent.CoreV1Occurrences(got))
		assert.Equal(t, series.Note, got.Message)
		assert.Equal(t, "FailedScheduling", got.Reason)
	})
}

// sendObject hands the exporter what the receiver makes of obj: a watch
// event of type typ, or ("") a pull.
func sendObject(t *testing.T, exp exporter.Logs, typ watch.EventType, obj runtime.Object) {
	t.Helper()
	var ld plog.Logs
	var err error
	if typ == "" {
		ld, err = k8sobjects.Pull(obj)
	} else {
		ld, err = k8sobjects.Watch(typ, obj)
	}
	require.NoError(t, err)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
}
