// The resources the model stores: what each API calls them, how a request's
// object becomes the stored one and back, how the registry prepares and
// validates it, and what discovery says of it.

package apimodel

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Storage spaces: the two Event APIs share one, as in etcd.
const (
	storeEvents     = "events"
	storeLeases     = "leases"
	storeNamespaces = "namespaces"
)

// resourceType is one resource of one API group version.
type resourceType struct {
	gv                  schema.GroupVersion
	resource, kind      string
	singular            string
	shortNames          []string
	namespaced          bool
	store               string
	verbs               []string                                      // as discovery lists them (the real server's)
	serves              []string                                      // what the model answers (405 for the rest)
	ttl                 bool                                          // the Event TTL applies
	createOnUpdate      bool                                          // a PUT of a missing object creates it
	unconditionalUpdate bool                                          // a PUT without a resourceVersion is accepted
	newObject           func() runtime.Object                         // the API's empty object
	toStored            func(runtime.Object) runtime.Object           // the API's object as stored (a copy)
	fromStored          func(runtime.Object) runtime.Object           // a stored object as the API shows it (a copy)
	prepareCreate       func(runtime.Object)                          // the registry's PrepareForCreate and Canonicalize
	validateCreate      func(runtime.Object) field.ErrorList          // the strategy's Validate
	validateUpdate      func(obj, old runtime.Object) field.ErrorList // the strategy's ValidateUpdate
	fieldLabel          func(label string) (string, error)            // the API's field label conversion
	fieldSet            func(runtime.Object) fields.Set               // a stored object's selectable fields
}

// groupResource is the resource as error messages qualify it.
func (rt *resourceType) groupResource() schema.GroupResource {
	return rt.gv.WithResource(rt.resource).GroupResource()
}

// listKind is the kind of a list of the resource.
func (rt *resourceType) listKind() string { return rt.kind + "List" }

var (
	eventVerbs  = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	eventServes = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// resourceTypes are the resources the model serves.
var resourceTypes = []*resourceType{
	{
		gv: corev1.SchemeGroupVersion, resource: "events", kind: "Event", singular: "event", shortNames: []string{"ev"},
		namespaced: true, store: storeEvents, verbs: eventVerbs, serves: eventServes, ttl: true, createOnUpdate: true, unconditionalUpdate: true,
		newObject:      func() runtime.Object { return &corev1.Event{} },
		toStored:       func(o runtime.Object) runtime.Object { return o.(*corev1.Event).DeepCopy() },
		fromStored:     func(o runtime.Object) runtime.Object { return o.(*corev1.Event).DeepCopy() },
		prepareCreate:  func(runtime.Object) {},
		validateCreate: func(o runtime.Object) field.ErrorList { return validateEventCreate(o, false) },
		validateUpdate: func(o, old runtime.Object) field.ErrorList { return validateEventUpdate(o, old, false) },
		fieldLabel:     coreEventFieldLabel,
		fieldSet:       eventFields,
	},
	{
		gv: eventsv1.SchemeGroupVersion, resource: "events", kind: "Event", singular: "event", shortNames: []string{"ev"},
		namespaced: true, store: storeEvents, verbs: eventVerbs, serves: eventServes, ttl: true, createOnUpdate: true, unconditionalUpdate: true,
		newObject:      func() runtime.Object { return &eventsv1.Event{} },
		toStored:       func(o runtime.Object) runtime.Object { return eventsToCore(o.(*eventsv1.Event)) },
		fromStored:     func(o runtime.Object) runtime.Object { return coreToEvents(o.(*corev1.Event)) },
		prepareCreate:  func(runtime.Object) {},
		validateCreate: func(o runtime.Object) field.ErrorList { return validateEventCreate(o, true) },
		validateUpdate: func(o, old runtime.Object) field.ErrorList { return validateEventUpdate(o, old, true) },
		fieldLabel:     eventsEventFieldLabel,
		fieldSet:       eventFields,
	},
	{
		gv: coordinationv1.SchemeGroupVersion, resource: "leases", kind: "Lease", singular: "lease",
		namespaced: true, store: storeLeases, verbs: eventVerbs, serves: eventServes, createOnUpdate: true,
		newObject:      func() runtime.Object { return &coordinationv1.Lease{} },
		toStored:       func(o runtime.Object) runtime.Object { return o.(*coordinationv1.Lease).DeepCopy() },
		fromStored:     func(o runtime.Object) runtime.Object { return o.(*coordinationv1.Lease).DeepCopy() },
		prepareCreate:  func(runtime.Object) {},
		validateCreate: validateLease,
		validateUpdate: func(o, old runtime.Object) field.ErrorList {
			l, ol := o.(*coordinationv1.Lease), old.(*coordinationv1.Lease)
			return append(apivalidation.ValidateObjectMetaUpdate(&l.ObjectMeta, &ol.ObjectMeta, field.NewPath("metadata")),
				validateLeaseSpec(&l.Spec)...)
		},
		fieldLabel: metaFieldLabel,
		fieldSet:   metaFields,
	},
	{
		gv: corev1.SchemeGroupVersion, resource: "namespaces", kind: "Namespace", singular: "namespace", shortNames: []string{"ns"},
		store: storeNamespaces, verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		serves:        []string{"create", "get", "list", "watch"}, // DeleteNamespace stands for a deletion
		newObject:     func() runtime.Object { return &corev1.Namespace{} },
		toStored:      func(o runtime.Object) runtime.Object { return o.(*corev1.Namespace).DeepCopy() },
		fromStored:    func(o runtime.Object) runtime.Object { return o.(*corev1.Namespace).DeepCopy() },
		prepareCreate: prepareNamespace,
		validateCreate: func(o runtime.Object) field.ErrorList {
			ns := o.(*corev1.Namespace)
			return apivalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
		},
		validateUpdate: func(o, old runtime.Object) field.ErrorList { return nil }, // never called: not served
		fieldLabel: func(label string) (string, error) {
			if label == "metadata.name" || label == "status.phase" {
				return label, nil
			}
			return "", fmt.Errorf("field label not supported: %s", label)
		},
		fieldSet: func(o runtime.Object) fields.Set {
			ns := o.(*corev1.Namespace)
			return fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}
		},
	},
}

// lookupResource finds the resource a request names.
func lookupResource(group, version, resource string) *resourceType {
	for _, rt := range resourceTypes {
		if rt.gv.Group == group && rt.gv.Version == version && rt.resource == resource {
			return rt
		}
	}
	return nil
}

// metaFieldLabel is the field labels every resource supports.
func metaFieldLabel(label string) (string, error) {
	if label == "metadata.name" || label == "metadata.namespace" {
		return label, nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

func metaFields(o runtime.Object) fields.Set {
	m := objectMeta(o)
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

func validateLease(o runtime.Object) field.ErrorList {
	l := o.(*coordinationv1.Lease)
	errs := apivalidation.ValidateObjectMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateLeaseSpec(&l.Spec)...)
}

// validateLeaseSpec is ValidateLeaseSpec without the coordinated leader
// election fields, which the model does not serve.
func validateLeaseSpec(spec *coordinationv1.LeaseSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(path.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	return errs
}

// prepareNamespace is the namespace strategy's PrepareForCreate and
// Canonicalize: active, the kubernetes finalizer, the name label.
func prepareNamespace(o runtime.Object) {
	ns := o.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	hasKube := false
	for _, f := range ns.Spec.Finalizers {
		hasKube = hasKube || f == corev1.FinalizerKubernetes
	}
	if !hasKube {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// objectMeta is the metadata of a stored or API object.
func objectMeta(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(fmt.Sprintf("apimodel: %T has no metadata: %v", o, err)) // only the model's own types get here
	}
	return m
}

// apiVersionOf is the apiVersion string of a group version.
func apiVersionOf(gv schema.GroupVersion) string { return gv.String() }

// splitKey splits a storage key namespace/name (or name).
func splitKey(key string) (namespace, name string) {
	if ns, n, ok := strings.Cut(key, "/"); ok {
		return ns, n
	}
	return "", key
}
