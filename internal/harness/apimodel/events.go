// Events: the one storage of both Event APIs (core/v1 is the stored
// form, as the API server's internal type is), the conversion to and from
// events.k8s.io/v1, the fields each API selects on, and the validation of
// kube-apiserver's pkg/apis/core/validation/events.go, with its field
// paths (the internal type's names, whichever API was asked).

package apimodel

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's limits on Event fields (core/validation/events.go).
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// eventsToCore is events.k8s.io/v1's Event as stored (as
// pkg/apis/events/v1/conversion.go converts it).
func eventsToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		InvolvedObject:      in.Regarding,
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
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	return out
}

// coreToEvents is a stored Event as events.k8s.io/v1 shows it.
func coreToEvents(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	return out
}

// eventFields is what a field selector of either API matches an Event on
// (the registry's ToSelectableFields, in core/v1's names).
func eventFields(obj runtime.Object) fields.Set {
	ev := obj.(*corev1.Event)
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	return fields.Set{
		"metadata.name":                  ev.Name,
		"metadata.namespace":             ev.Namespace,
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

// coreEventFieldLabel accepts core/v1's Event field labels.
func coreEventFieldLabel(label string) (string, error) {
	switch label {
	case "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
		"metadata.namespace", "metadata.name":
		return label, nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// eventsFieldLabels maps events.k8s.io/v1's field labels to core/v1's.
var eventsFieldLabels = map[string]string{
	"reason":                    "reason",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reportingController":       "reportingComponent",
	"type":                      "type",
	"metadata.namespace":        "metadata.namespace",
	"metadata.name":             "metadata.name",
}

func eventsEventFieldLabel(label string) (string, error) {
	if mapped, ok := eventsFieldLabels[label]; ok {
		return mapped, nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// validateEventCreate is ValidateEventCreate: legacy validation always,
// strict validation for events.k8s.io/v1.
func validateEventCreate(obj runtime.Object, strict bool) field.ErrorList {
	ev := obj.(*corev1.Event)
	errs := legacyValidateEvent(ev, strict)
	if !strict {
		return errs
	}
	errs = append(errs, apivalidation.ValidateObjectMeta(&ev.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, validateEventSeries(ev)...)
	if ev.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	if !ev.FirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !ev.LastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if ev.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if ev.Source.Component != "" || ev.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// validateEventUpdate is ValidateEventUpdate: legacy validation always;
// for events.k8s.io/v1 also metadata, the series when it changed, and
// every other field immutable.
func validateEventUpdate(obj, oldObj runtime.Object, strict bool) field.ErrorList {
	ev, old := obj.(*corev1.Event), oldObj.(*corev1.Event)
	errs := legacyValidateEvent(ev, strict)
	if !strict {
		return errs
	}
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&ev.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if !reflect.DeepEqual(ev.Series, old.Series) {
		errs = append(errs, validateEventSeries(ev)...)
	}
	immutable := func(n, o any, path string) {
		errs = append(errs, apivalidation.ValidateImmutableField(n, o, field.NewPath(path))...)
	}
	// Structs are compared as core/v1's and shown as the internal types
	// (no JSON names), as the API server's message shows them.
	immutableShown := func(n, o, shown any, path string) {
		if !apiequality.Semantic.DeepEqual(n, o) {
			errs = append(errs, field.Invalid(field.NewPath(path), shown, "field is immutable"))
		}
	}
	immutableShown(ev.InvolvedObject, old.InvolvedObject, internalReference(&ev.InvolvedObject), "involvedObject")
	immutable(ev.Reason, old.Reason, "reason")
	immutable(ev.Message, old.Message, "message")
	immutableShown(ev.Source, old.Source, internalSource(ev.Source), "source")
	immutable(ev.FirstTimestamp, old.FirstTimestamp, "firstTimestamp")
	immutable(ev.LastTimestamp, old.LastTimestamp, "lastTimestamp")
	immutable(ev.Count, old.Count, "count")
	immutable(ev.Reason, old.Reason, "reason")
	immutable(ev.Type, old.Type, "type")
	// Sub-microsecond changes of eventTime are tolerated, as the API server does.
	if !ev.EventTime.Truncate(time.Microsecond).UTC().Equal(old.EventTime.Truncate(time.Microsecond).UTC()) {
		immutable(ev.EventTime, old.EventTime, "eventTime")
	}
	immutable(ev.Action, old.Action, "action")
	immutableShown(ev.Related, old.Related, internalReference(ev.Related), "related")
	immutable(ev.ReportingController, old.ReportingController, "reportingController")
	immutable(ev.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

// internalObjectReference and internalEventSource are core/v1's
// ObjectReference and EventSource as the API server's internal types
// (without JSON names), for error messages.
type internalObjectReference struct {
	Kind, Namespace, Name string
	UID                   string
	APIVersion            string
	ResourceVersion       string
	FieldPath             string
}

type internalEventSource struct{ Component, Host string }

func internalReference(r *corev1.ObjectReference) *internalObjectReference {
	if r == nil {
		return nil
	}
	return &internalObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
		APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
}

func internalSource(s corev1.EventSource) internalEventSource {
	return internalEventSource{Component: s.Component, Host: s.Host}
}

func validateEventSeries(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.Series != nil {
		if ev.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if ev.Series.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

// legacyValidateEvent is the validation every Event write passes.
func legacyValidateEvent(ev *corev1.Event, strict bool) field.ErrorList {
	var errs field.ErrorList
	controllerField := "reportingComponent"
	if strict {
		controllerField = "reportingController"
	}
	objNamespace := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		// An Event without eventTime (an old client's): only the namespaces.
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(objNamespace, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(objNamespace, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(objNamespace, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if ev.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath(controllerField), ""))
		}
		for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath(controllerField), ev.ReportingController, msg))
		}
		errs = append(errs, requiredAtMost(ev.ReportingInstance, "reportingInstance", reportingInstanceLengthLimit, true)...)
		errs = append(errs, requiredAtMost(ev.Action, "action", actionLengthLimit, true)...)
		errs = append(errs, requiredAtMost(ev.Reason, "reason", reasonLengthLimit, true)...)
		errs = append(errs, requiredAtMost(ev.Message, "message", noteLengthLimit, false)...)
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return errs
}

// requiredAtMost checks a string field's presence (when required) and its
// length limit.
func requiredAtMost(value, path string, limit int, required bool) field.ErrorList {
	var errs field.ErrorList
	if required && value == "" {
		errs = append(errs, field.Required(field.NewPath(path), ""))
	}
	if len(value) > limit {
		errs = append(errs, field.Invalid(field.NewPath(path), "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}
