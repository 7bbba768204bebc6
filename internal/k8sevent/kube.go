package k8sevent

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FromCoreV1 reads a core/v1 Event. Time is its latest occurrence.
func FromCoreV1(in *corev1.Event) Event {
	ev := Event{
		Name:                   in.Name,
		Namespace:              in.Namespace,
		UID:                    string(in.UID),
		Type:                   in.Type,
		Reason:                 in.Reason,
		Action:                 in.Action,
		Note:                   in.Message,
		Regarding:              refFromKube(in.InvolvedObject),
		ReportingController:    in.ReportingController,
		ReportingInstance:      in.ReportingInstance,
		SourceComponent:        in.Source.Component,
		SourceHost:             in.Source.Host,
		EventTime:              in.EventTime.Time,
		FirstTimestamp:         in.FirstTimestamp.Time,
		LastTimestamp:          in.LastTimestamp.Time,
		Count:                  int64(in.Count),
		SeriesCount:            seriesCount(in.Series),
		SeriesLastObservedTime: seriesLastObserved(in.Series),
	}
	if in.Related != nil {
		ev.Related = refFromKube(*in.Related)
	}
	ev.Time = ev.LatestTime()
	return ev
}

// FromEventsV1 reads an events.k8s.io/v1 Event. Time is its latest occurrence.
func FromEventsV1(in *eventsv1.Event) Event {
	ev := Event{
		Name:                   in.Name,
		Namespace:              in.Namespace,
		UID:                    string(in.UID),
		Type:                   in.Type,
		Reason:                 in.Reason,
		Action:                 in.Action,
		Note:                   in.Note,
		Regarding:              refFromKube(in.Regarding),
		ReportingController:    in.ReportingController,
		ReportingInstance:      in.ReportingInstance,
		SourceComponent:        in.DeprecatedSource.Component,
		SourceHost:             in.DeprecatedSource.Host,
		EventTime:              in.EventTime.Time,
		FirstTimestamp:         in.DeprecatedFirstTimestamp.Time,
		LastTimestamp:          in.DeprecatedLastTimestamp.Time,
		Count:                  int64(in.DeprecatedCount),
		SeriesCount:            eventsSeriesCount(in.Series),
		SeriesLastObservedTime: eventsSeriesLastObserved(in.Series),
	}
	if in.Related != nil {
		ev.Related = refFromKube(*in.Related)
	}
	ev.Time = ev.LatestTime()
	return ev
}

// ToCoreV1 builds the core/v1 Event. Fields core/v1 lacks are dropped; the
// namespace is ObjectNamespace.
func (e *Event) ToCoreV1() *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.objectMeta(),
		InvolvedObject:      e.Regarding.toKube(),
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              corev1.EventSource{Component: e.SourceComponent, Host: e.SourceHost},
		FirstTimestamp:      metav1.NewTime(e.FirstTimestamp),
		LastTimestamp:       metav1.NewTime(e.LastTimestamp),
		Count:               clampInt32(e.Count),
		Type:                e.Type,
		EventTime:           metav1.NewMicroTime(e.EventTime),
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if !e.Related.IsZero() {
		rel := e.Related.toKube()
		out.Related = &rel
	}
	if e.SeriesCount > 0 {
		out.Series = &corev1.EventSeries{
			Count:            clampInt32(e.SeriesCount),
			LastObservedTime: metav1.NewMicroTime(e.SeriesLastObservedTime),
		}
	}
	return out
}

// ToEventsV1 builds the events.k8s.io/v1 Event.
func (e *Event) ToEventsV1() *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               e.objectMeta(),
		EventTime:                metav1.NewMicroTime(e.EventTime),
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.Regarding.toKube(),
		Note:                     e.Note,
		Type:                     e.Type,
		DeprecatedSource:         corev1.EventSource{Component: e.SourceComponent, Host: e.SourceHost},
		DeprecatedFirstTimestamp: metav1.NewTime(e.FirstTimestamp),
		DeprecatedLastTimestamp:  metav1.NewTime(e.LastTimestamp),
		DeprecatedCount:          clampInt32(e.Count),
	}
	if !e.Related.IsZero() {
		rel := e.Related.toKube()
		out.Related = &rel
	}
	if e.SeriesCount > 0 {
		out.Series = &eventsv1.EventSeries{
			Count:            clampInt32(e.SeriesCount),
			LastObservedTime: metav1.NewMicroTime(e.SeriesLastObservedTime),
		}
	}
	return out
}

// Annotations on an Event written for a record that states its cluster, so
// that a hub written to by many clusters tells their Events apart.
const (
	AnnotationSourceCluster    = "k8sevents.io/source-cluster"     // its name, else its uid
	AnnotationSourceClusterUID = "k8sevents.io/source-cluster-uid" // when known
)

func (e *Event) objectMeta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: e.Name, Namespace: e.ObjectNamespace(), UID: types.UID(e.UID)}
	if c := e.Cluster.String(); c != "" {
		m.Annotations = map[string]string{AnnotationSourceCluster: c}
		if e.Cluster.UID != "" {
			m.Annotations[AnnotationSourceClusterUID] = e.Cluster.UID
		}
	}
	return m
}

func refFromKube(r corev1.ObjectReference) ObjectRef {
	return ObjectRef{
		Kind:            r.Kind,
		Namespace:       r.Namespace,
		Name:            r.Name,
		UID:             string(r.UID),
		APIVersion:      r.APIVersion,
		FieldPath:       r.FieldPath,
		ResourceVersion: r.ResourceVersion,
	}
}

func (r ObjectRef) toKube() corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind:            r.Kind,
		Namespace:       r.Namespace,
		Name:            r.Name,
		UID:             types.UID(r.UID),
		APIVersion:      r.APIVersion,
		FieldPath:       r.FieldPath,
		ResourceVersion: r.ResourceVersion,
	}
}

func seriesCount(s *corev1.EventSeries) int64 {
	if s == nil {
		return 0
	}
	return int64(s.Count)
}

func seriesLastObserved(s *corev1.EventSeries) time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.LastObservedTime.Time
}

func eventsSeriesCount(s *eventsv1.EventSeries) int64 {
	if s == nil {
		return 0
	}
	return int64(s.Count)
}

func eventsSeriesLastObserved(s *eventsv1.EventSeries) time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.LastObservedTime.Time
}

func clampInt32(v int64) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < 0:
		return 0
	default:
		return int32(v)
	}
}

// CoreV1Occurrences is how many occurrences a stored core/v1 Event stands
// for (its series count, else its count, else one), as Event.Occurrences.
func CoreV1Occurrences(ev *corev1.Event) int64 {
	return (&Event{SeriesCount: seriesCount(ev.Series), Count: int64(ev.Count)}).Occurrences()
}

// EventsV1Occurrences is CoreV1Occurrences for an events.k8s.io/v1 Event.
func EventsV1Occurrences(ev *eventsv1.Event) int64 {
	return (&Event{SeriesCount: eventsSeriesCount(ev.Series), Count: int64(ev.DeprecatedCount)}).Occurrences()
}
