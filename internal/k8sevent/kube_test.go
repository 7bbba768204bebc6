package k8sevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

var (
	tFirst    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tLast     = time.Date(2026, 3, 1, 12, 5, 30, 0, time.UTC)
	tEvent    = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	tObserved = time.Date(2026, 3, 1, 12, 6, 1, 654321000, time.UTC)
)

// throughRecord encodes ev into a fresh log record (with an empty resource)
// and decodes it back with the default options.
func throughRecord(t *testing.T, ev k8sevent.Event) k8sevent.Event {
	t.Helper()
	lr := plog.NewLogRecord()
	k8sevent.Encode(&ev, lr)
	got, problems, found := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	require.True(t, found, "encoded event not found on decode")
	require.Zero(t, problems, "problems decoding an encoded event: %v", problems)
	return got
}

func fullCoreV1() *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0.18a2b3c4d5e6f708", Namespace: "prod", UID: "ev-uid-1"},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "pod-uid-1",
			APIVersion: "v1", ResourceVersion: "4711", FieldPath: "spec.containers{app}",
		},
		Reason:              "BackOff",
		Message:             "Back-off restarting failed container app in pod web-0",
		Source:              corev1.EventSource{Component: "kubelet", Host: "node-a"},
		FirstTimestamp:      metav1.NewTime(tFirst),
		LastTimestamp:       metav1.NewTime(tLast),
		Count:               7,
		Type:                corev1.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(tEvent),
		Series:              &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(tObserved)},
		Action:              "Restarting",
		Related:             relatedRef(),
		ReportingController: "kubernetes.io/kubelet",
		ReportingInstance:   "kubelet-node-a",
	}
}

func fullEventsV1() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web-0.18a2b3c4d5e6f708", Namespace: "prod", UID: "ev-uid-1"},
		EventTime:           metav1.NewMicroTime(tEvent),
		Series:              &eventsv1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(tObserved)},
		ReportingController: "kubernetes.io/kubelet",
		ReportingInstance:   "kubelet-node-a",
		Action:              "Restarting",
		Reason:              "BackOff",
		Regarding: corev1.ObjectReference{
			Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "pod-uid-1",
			APIVersion: "v1", ResourceVersion: "4711", FieldPath: "spec.containers{app}",
		},
		Related:                  relatedRef(),
		Note:                     "Back-off restarting failed container app in pod web-0",
		Type:                     corev1.EventTypeWarning,
		DeprecatedSource:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
		DeprecatedFirstTimestamp: metav1.NewTime(tFirst),
		DeprecatedLastTimestamp:  metav1.NewTime(tLast),
		DeprecatedCount:          7,
	}
}

// relatedRef has every field set except ResourceVersion: the log-record
// contract has no key for the related object's resourceVersion (see
// TestRecordDropsRelatedResourceVersion).
func relatedRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind: "Node", Namespace: "", Name: "node-a", UID: "node-uid-1",
		APIVersion: "v1", FieldPath: "status.conditions",
	}
}

func TestCoreV1RoundTripFull(t *testing.T) {
	in := fullCoreV1()
	ev := k8sevent.FromCoreV1(in)
	assert.True(t, ev.Time.Equal(tObserved), "Time is the latest occurrence (series lastObservedTime), got %v", ev.Time)

	// Directly, without a record.
	assert.Equal(t, in, ev.ToCoreV1())

	// Through a log record.
	got := throughRecord(t, ev)
	assert.Equal(t, in, got.ToCoreV1())
	assert.True(t, got.Time.Equal(ev.Time))
}

func TestEventsV1RoundTripFull(t *testing.T) {
	in := fullEventsV1()
	ev := k8sevent.FromEventsV1(in)
	assert.True(t, ev.Time.Equal(tObserved))

	assert.Equal(t, in, ev.ToEventsV1())

	got := throughRecord(t, ev)
	assert.Equal(t, in, got.ToEventsV1())
	assert.True(t, got.Time.Equal(ev.Time))
	require.NoError(t, k8sevent.Validate(&got, k8sevent.APIEventsV1))
}

// Related.ResourceVersion has its own key (an addition to the contract).
func TestRecordKeepsRelatedResourceVersion(t *testing.T) {
	in := fullCoreV1()
	in.Related.ResourceVersion = "99"
	ev := k8sevent.FromCoreV1(in)
	assert.Equal(t, "99", ev.Related.ResourceVersion)
	assert.Equal(t, in, ev.ToCoreV1())

	got := throughRecord(t, ev)
	assert.Equal(t, "99", got.Related.ResourceVersion)
	assert.Equal(t, in, got.ToCoreV1())
}

func TestCoreV1RoundTripPartial(t *testing.T) {
	tests := map[string]func(e *corev1.Event){
		"no related": func(e *corev1.Event) { e.Related = nil },
		"no series":  func(e *corev1.Event) { e.Series = nil },
		"no related no series no eventTime": func(e *corev1.Event) {
			e.Related, e.Series, e.EventTime = nil, nil, metav1.MicroTime{}
			e.Action, e.ReportingController, e.ReportingInstance = "", "", ""
		},
		"cluster-scoped regarding in default": func(e *corev1.Event) {
			e.Namespace = "default"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-uid-1", APIVersion: "v1"}
		},
		"cluster-scoped regarding in kube-system": func(e *corev1.Event) {
			e.Namespace = "kube-system"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-uid-1", APIVersion: "v1"}
		},
		"only eventTime": func(e *corev1.Event) {
			e.FirstTimestamp, e.LastTimestamp, e.Count, e.Series = metav1.Time{}, metav1.Time{}, 0, nil
			e.Source = corev1.EventSource{}
		},
		"no times at all": func(e *corev1.Event) {
			e.FirstTimestamp, e.LastTimestamp, e.EventTime, e.Series = metav1.Time{}, metav1.Time{}, metav1.MicroTime{}, nil
		},
		"no metadata name or uid": func(e *corev1.Event) { e.Name, e.UID = "", "" },
		"normal type no message":  func(e *corev1.Event) { e.Type, e.Message = corev1.EventTypeNormal, "" },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			in := fullCoreV1()
			mutate(in)
			ev := k8sevent.FromCoreV1(in)
			assert.True(t, ev.Time.Equal(ev.LatestTime()))
			assert.Equal(t, in, ev.ToCoreV1())
			got := throughRecord(t, ev)
			assert.Equal(t, in, got.ToCoreV1())
			assert.Equal(t, in.Namespace, got.ObjectNamespace())
			if !ev.Time.IsZero() {
				assert.True(t, got.Time.Equal(ev.Time), "time %v != %v", got.Time, ev.Time)
			}
		})
	}
}

func TestEventsV1RoundTripPartial(t *testing.T) {
	tests := map[string]func(e *eventsv1.Event){
		"no related": func(e *eventsv1.Event) { e.Related = nil },
		"no series":  func(e *eventsv1.Event) { e.Series = nil },
		"no deprecated": func(e *eventsv1.Event) {
			e.DeprecatedSource, e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp, e.DeprecatedCount = corev1.EventSource{}, metav1.Time{}, metav1.Time{}, 0
		},
		"only eventTime": func(e *eventsv1.Event) {
			e.Series, e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = nil, metav1.Time{}, metav1.Time{}
		},
		"cluster-scoped regarding in default": func(e *eventsv1.Event) {
			e.Namespace = "default"
			e.Regarding = corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-uid-1", APIVersion: "v1"}
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			in := fullEventsV1()
			mutate(in)
			ev := k8sevent.FromEventsV1(in)
			assert.Equal(t, in, ev.ToEventsV1())
			got := throughRecord(t, ev)
			assert.Equal(t, in, got.ToEventsV1())
			assert.True(t, got.Time.Equal(ev.Time))
			assert.NoError(t, k8sevent.Validate(&got, k8sevent.APIEventsV1))
		})
	}
}

func TestOnlyEventTimeSetsTime(t *testing.T) {
	in := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "x.1", Namespace: "ns"},
		EventTime:  metav1.NewMicroTime(tEvent),
		Regarding:  corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "x"},
		Reason:     "R",
	}
	ev := k8sevent.FromEventsV1(in)
	assert.True(t, ev.Time.Equal(tEvent))
	assert.True(t, ev.FirstTime().Equal(tEvent))
	assert.Equal(t, int64(1), ev.Occurrences())
	got := throughRecord(t, ev)
	assert.True(t, got.Time.Equal(tEvent))
	assert.True(t, got.EventTime.Equal(tEvent))
	assert.True(t, got.FirstTimestamp.IsZero())
	assert.True(t, got.LastTimestamp.IsZero())
}

func TestCrossAPICoreToEvents(t *testing.T) {
	in := fullCoreV1()
	ev := k8sevent.FromCoreV1(in)
	out := ev.ToEventsV1()

	assert.Equal(t, in.ObjectMeta, out.ObjectMeta)
	assert.Equal(t, in.Message, out.Note)
	assert.Equal(t, in.InvolvedObject, out.Regarding)
	require.NotNil(t, out.Related)
	assert.Equal(t, *in.Related, *out.Related)
	require.NotNil(t, out.Series)
	assert.Equal(t, in.Series.Count, out.Series.Count)
	assert.Equal(t, in.Series.LastObservedTime, out.Series.LastObservedTime)
	assert.Equal(t, in.ReportingController, out.ReportingController)
	assert.Equal(t, in.ReportingInstance, out.ReportingInstance)
	assert.Equal(t, in.Reason, out.Reason)
	assert.Equal(t, in.Action, out.Action)
	assert.Equal(t, in.Type, out.Type)
	assert.Equal(t, in.EventTime, out.EventTime)
	assert.Equal(t, in.Source, out.DeprecatedSource)
	assert.Equal(t, in.FirstTimestamp, out.DeprecatedFirstTimestamp)
	assert.Equal(t, in.LastTimestamp, out.DeprecatedLastTimestamp)
	assert.Equal(t, in.Count, out.DeprecatedCount)

	// And back again.
	back := k8sevent.FromEventsV1(out)
	assert.Equal(t, in, back.ToCoreV1())

	// Through a record in between as well.
	viaRecord := throughRecord(t, ev)
	assert.Equal(t, out, viaRecord.ToEventsV1())
}

func TestCountClamp(t *testing.T) {
	ev := k8sevent.Event{Count: 1 << 40, SeriesCount: 1 << 40}
	out := ev.ToCoreV1()
	assert.Equal(t, int32(1<<31-1), out.Count)
	assert.Equal(t, int32(1<<31-1), out.Series.Count)
	ev = k8sevent.Event{Count: -3}
	assert.Equal(t, int32(0), ev.ToCoreV1().Count)
	assert.Nil(t, ev.ToCoreV1().Series)
}

func TestModelHelpers(t *testing.T) {
	var ev k8sevent.Event
	assert.Equal(t, "default", ev.ObjectNamespace())
	assert.True(t, ev.LatestTime().IsZero())
	assert.True(t, ev.FirstTime().IsZero())
	assert.Equal(t, int64(1), ev.Occurrences())
	assert.True(t, ev.Regarding.IsZero())

	ev.Regarding.Namespace = "r"
	assert.Equal(t, "r", ev.ObjectNamespace())
	ev.Namespace = "own"
	assert.Equal(t, "own", ev.ObjectNamespace())

	ev.Time = tLast
	assert.True(t, ev.FirstTime().Equal(tLast))
	ev.FirstTimestamp = tFirst
	assert.True(t, ev.FirstTime().Equal(tFirst))
	assert.True(t, ev.LatestTime().Equal(tFirst))
	ev.EventTime = tEvent
	assert.True(t, ev.FirstTime().Equal(tEvent))
	assert.True(t, ev.LatestTime().Equal(tEvent))
	ev.LastTimestamp = tLast
	assert.True(t, ev.LatestTime().Equal(tLast))
	ev.SeriesLastObservedTime = tObserved
	assert.True(t, ev.LatestTime().Equal(tObserved))

	ev.Count = 3
	assert.Equal(t, int64(3), ev.Occurrences())
	ev.SeriesCount = 5
	assert.Equal(t, int64(5), ev.Occurrences())
}
