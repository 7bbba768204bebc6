package recorder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	ref "k8s.io/client-go/tools/reference"
)

// LegacyRecorder is a tools/record.EventRecorder: Event, Eventf and
// AnnotatedEventf, as client-go's recorder from a broadcaster's
// NewRecorder(scheme, EventSource{Component: controller, Host: host}).
type LegacyRecorder struct {
	r                    *Recorder
	scheme               *runtime.Scheme
	controller, instance string
}

// EventsRecorder is a tools/events.EventRecorder: Eventf with regarding,
// related, type, reason, action and note, as client-go's recorder from an
// events broadcaster's NewRecorder(scheme, controller).
type EventsRecorder struct {
	r                    *Recorder
	scheme               *runtime.Scheme
	controller, instance string
}

var (
	_ record.EventRecorder = (*LegacyRecorder)(nil)
	_ events.EventRecorder = (*EventsRecorder)(nil)
)

// LegacyRecorder hands out a tools/record.EventRecorder reporting as
// controller (empty: Options.ReportingController); sch resolves the kind
// of typed objects (nil: client-go's scheme.Scheme).
func (r *Recorder) LegacyRecorder(sch *runtime.Scheme, controller string) *LegacyRecorder {
	c, s := r.who(sch, controller)
	return &LegacyRecorder{r: r, scheme: s, controller: c, instance: r.legacyInstance()}
}

// EventsRecorder hands out a tools/events.EventRecorder reporting as
// controller (empty: Options.ReportingController).
func (r *Recorder) EventsRecorder(sch *runtime.Scheme, controller string) *EventsRecorder {
	c, s := r.who(sch, controller)
	return &EventsRecorder{r: r, scheme: s, controller: c, instance: r.opts.ReportingInstance}
}

func (r *Recorder) who(sch *runtime.Scheme, controller string) (string, *runtime.Scheme) {
	if controller == "" {
		controller = r.opts.ReportingController
	}
	if sch == nil {
		sch = scheme.Scheme
	}
	return controller, sch
}

// legacyInstance is what client-go's tools/record reports as instance: the
// source host. Ours reports the configured instance, so that the pipeline
// can tell replicas apart, unless a source host is set.
func (r *Recorder) legacyInstance() string {
	if r.opts.SourceHost != "" {
		return r.opts.SourceHost
	}
	return r.opts.ReportingInstance
}

// Event is tools/record's Event.
func (l *LegacyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	l.record(object, nil, eventtype, reason, message)
}

// Eventf is tools/record's Eventf.
func (l *LegacyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	l.record(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf is tools/record's AnnotatedEventf; the annotations become
// attributes named AnnotationPrefix + key.
func (l *LegacyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	l.record(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (l *LegacyRecorder) record(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	l.r.calls.Add(1)
	regarding, ok := l.r.reference(l.scheme, object, eventtype)
	if !ok {
		return
	}
	e := entry{at: l.r.stamp(), regarding: regarding, eventType: eventtype, reason: reason, note: message,
		annotations: cloneAnnotations(annotations), controller: l.controller, instance: l.instance, legacy: true}
	l.r.enqueue(&e)
}

// Eventf is tools/events' Eventf. The related object is optional, as in
// client-go: one whose reference cannot be made is left out.
func (ev *EventsRecorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	ev.r.calls.Add(1)
	message := fmt.Sprintf(note, args...)
	reg, ok := ev.r.reference(ev.scheme, regarding, eventtype)
	if !ok {
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		rel, _ = ref.GetReference(ev.scheme, related)
	}
	e := entry{at: ev.r.stamp(), regarding: reg, related: rel, eventType: eventtype, reason: reason, action: action, note: message,
		controller: ev.controller, instance: ev.instance}
	ev.r.enqueue(&e)
}

// reference resolves the regarding object and checks the type, refusing
// (and counting) what client-go's recorders refuse with a log line.
func (r *Recorder) reference(sch *runtime.Scheme, object runtime.Object, eventtype string) (*corev1.ObjectReference, bool) {
	if object == nil || !util.ValidateEventType(eventtype) {
		r.invalid.Add(1)
		return nil, false
	}
	reg, err := ref.GetReference(sch, object)
	if err != nil {
		r.invalid.Add(1)
		return nil, false
	}
	return reg, true
}

// GetEventRecorderFor is controller-runtime's recorder.Provider method for
// the core/v1 API: a LegacyRecorder reporting as name.
func (r *Recorder) GetEventRecorderFor(name string) record.EventRecorder {
	return r.LegacyRecorder(nil, name)
}

// GetEventRecorder is controller-runtime's recorder.Provider method for
// the events.k8s.io API: an EventsRecorder reporting as name.
func (r *Recorder) GetEventRecorder(name string) events.EventRecorder {
	return r.EventsRecorder(nil, name)
}
