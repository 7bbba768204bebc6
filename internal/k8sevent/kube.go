package k8sevent

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FromCoreV1 reads a core/v1 Event. Time is its latest occurrence.
func FromCoreV1(in *corev1.Event) Event {
	ev := Event{
		Name:                in.Name,
		Namespace:           in.Namespace,
		UID:                 string(in.UID),
		Type:                in.Type,
		Reason:              in.Reason,
		Action:              in.Action,
		Note:                in.Message,
		Regarding:           refFromKube(in.InvolvedObject),
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
		SourceComponent:     in.Source.Component,
		SourceHost:          in.Source.Host,
		EventTime:           in.EventTime.Time,
		FirstTimestamp:      in.FirstTimestamp.Time,
		LastTimestamp:       in.LastTimestamp.Time,
		Count:               int64(in.Count),
	}
	if s := in.Series; s != nil {
		ev.SeriesCount, ev.SeriesLastObservedTime = int64(s.Count), s.LastObservedTime.Time
	}
	if in.Related != nil {
		ev.Related = refFromKube(*in.Related)
	}
	ev.Time = ev.LatestTime()
	return ev
}

// FromEventsV1 reads an events.k8s.io/v1 Event, the core/v1 one with its
// fields renamed. Time is its latest occurrence.
func FromEventsV1(in *eventsv1.Event) Event {
	core := corev1.Event{
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Related:             in.Related,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if s := in.Series; s != nil {
		core.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return FromCoreV1(&core)
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

// ToEventsV1 builds the events.k8s.io/v1 Event, ToCoreV1's with its fields
// renamed.
func (e *Event) ToEventsV1() *eventsv1.Event {
	core := e.ToCoreV1()
	out := &eventsv1.Event{
		ObjectMeta:               core.ObjectMeta,
		EventTime:                core.EventTime,
		ReportingController:      core.ReportingController,
		ReportingInstance:        core.ReportingInstance,
		Action:                   core.Action,
		Reason:                   core.Reason,
		Regarding:                core.InvolvedObject,
		Related:                  core.Related,
		Note:                     core.Message,
		Type:                     core.Type,
		DeprecatedSource:         core.Source,
		DeprecatedFirstTimestamp: core.FirstTimestamp,
		DeprecatedLastTimestamp:  core.LastTimestamp,
		DeprecatedCount:          core.Count,
	}
	if s := core.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

// Annotations on an Event written for a record that states its cluster, so
// that a hub written to by many clusters tells their Events apart.
const (
	AnnotationSourceCluster    = "k8sevents.io/source-cluster"     // its name, else its uid
	AnnotationSourceClusterUID = "k8sevents.io/source-cluster-uid" // when known
)

// AnnotationWrittenBy names the collector that created an Event whose
// reporting instance names the app it reports for (the exporter's
// keep_record_instance).
const AnnotationWrittenBy = "k8sevents.io/written-by"

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
	e := Event{Count: int64(ev.Count)}
	if ev.Series != nil {
		e.SeriesCount = int64(ev.Series.Count)
	}
	return e.Occurrences()
}

// EventsV1Occurrences is CoreV1Occurrences for an events.k8s.io/v1 Event.
func EventsV1Occurrences(ev *eventsv1.Event) int64 {
	e := Event{Count: int64(ev.DeprecatedCount)}
	if ev.Series != nil {
		e.SeriesCount = int64(ev.Series.Count)
	}
	return e.Occurrences()
}
