// The verbs on a stored resource: get, create, update and delete, in the
// order the API server checks them (decoding, namespace and name, the
// NamespaceLifecycle admission, validation, storage), and the answers they
// give. list and watch are in list.go and watch.go, patch in patch.go.

package apimodel

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// call is one request on a resource.
type call struct {
	s     *Server
	rt    *resourceType
	info  requestInfo
	body  []byte
	query url.Values
	req   *http.Request
}

// key is the storage key of the request's object.
func (c *call) key(name string) string {
	if c.rt.namespaced {
		return c.info.ns + "/" + name
	}
	return name
}

// kind is the group and kind a 422 names: the API server's internal kind
// (core's Event for both Event APIs).
func (c *call) kind() schema.GroupKind {
	if c.rt.store == storeEvents {
		return schema.GroupKind{Kind: "Event"}
	}
	return schema.GroupKind{Group: c.rt.gv.Group, Kind: c.rt.kind}
}

// objectResponse is a stored object as the request's API shows it.
func (c *call) objectResponse(code int, stored runtime.Object) response {
	out := c.rt.fromStored(stored)
	out.GetObjectKind().SetGroupVersionKind(c.rt.gv.WithKind(c.rt.kind))
	return jsonResponse(code, out)
}

func (c *call) get() response {
	c.s.mu.Lock()
	c.s.maintainLocked()
	obj := c.s.st.get(c.rt.store, c.key(c.info.name))
	c.s.mu.Unlock()
	if obj == nil {
		return errorResponse(apierrors.NewNotFound(c.rt.groupResource(), c.info.name))
	}
	return c.objectResponse(http.StatusOK, obj)
}

// decode reads the request's object in its API's version.
func (c *call) decode() (runtime.Object, error) {
	into := c.rt.newObject()
	gvk := c.rt.gv.WithKind(c.rt.kind)
	obj, got, err := scheme.Codecs.UniversalDeserializer().Decode(c.body, &gvk, into)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if got.GroupVersion() != c.rt.gv {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%v)", got.GroupVersion(), c.rt.gv))
	}
	if got.Kind != c.rt.kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, c.rt.kind))
	}
	return obj, nil
}

// namespaceMatches is EnsureObjectNamespaceMatchesRequestNamespace.
func (c *call) namespaceMatches(m metav1.Object) error {
	switch {
	case !c.rt.namespaced:
		m.SetNamespace("")
	case m.GetNamespace() == "":
		m.SetNamespace(c.info.ns)
	case m.GetNamespace() != c.info.ns:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

func (c *call) create() response {
	obj, err := c.decode()
	if err != nil {
		return errorResponse(err)
	}
	m := objectMeta(obj)
	wipeSystemFields(m)
	if err := c.namespaceMatches(m); err != nil {
		return errorResponse(err)
	}
	stored := c.rt.toStored(obj)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.maintainLocked()
	if err := c.createLocked(stored); err != nil {
		return errorResponse(err)
	}
	return c.objectResponse(http.StatusCreated, stored)
}

// createLocked admits, completes, validates and stores a new object.
func (c *call) createLocked(stored runtime.Object) error {
	if c.rt.namespaced && c.s.st.get(storeNamespaces, c.info.ns) == nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, c.info.ns)
	}
	m := objectMeta(stored)
	c.s.fillSystemFieldsLocked(m)
	if m.GetName() == "" && m.GetGenerateName() != "" {
		for {
			m.SetName(c.s.generateNameLocked(m.GetGenerateName()))
			if c.s.st.get(c.rt.store, c.key(m.GetName())) == nil {
				break
			}
		}
	}
	c.rt.prepareCreate(stored)
	if errs := c.rt.validateCreate(stored); len(errs) > 0 {
		return apierrors.NewInvalid(c.kind(), m.GetName(), errs)
	}
	if errs := apivalidation.ValidateObjectMetaAccessor(m, c.rt.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata")); len(errs) > 0 {
		return apierrors.NewInvalid(c.kind(), m.GetName(), errs)
	}
	if m.GetResourceVersion() != "" {
		return errors.New("resourceVersion should not be set on objects to be created") // etcd3 store's, a plain 500
	}
	key := c.key(m.GetName())
	if c.s.st.get(c.rt.store, key) != nil {
		return apierrors.NewAlreadyExists(c.rt.groupResource(), m.GetName())
	}
	stored.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // stored objects carry no kind
	rv := c.s.st.put(c.rt.store, key, stored, c.expiry())
	if c.rt.store == storeEvents {
		c.s.journalLocked("create", c.rt.gv.Group, nil, stored, rv)
	}
	return nil
}

// expiry is when an object written now expires (zero: never).
func (c *call) expiry() time.Time {
	if !c.rt.ttl || c.s.opts.EventTTL <= 0 {
		return time.Time{}
	}
	return c.s.opts.Now().Add(c.s.opts.EventTTL)
}

func (c *call) update() response {
	obj, err := c.decode()
	if err != nil {
		return errorResponse(err)
	}
	m := objectMeta(obj)
	if m.GetName() != c.info.name {
		return errorResponse(apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), c.info.name)))
	}
	if c.rt.namespaced && m.GetNamespace() != "" && m.GetNamespace() != c.info.ns {
		return errorResponse(apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", m.GetNamespace(), c.info.ns)))
	}
	stored := c.rt.toStored(obj)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.maintainLocked()
	if c.s.st.get(c.rt.store, c.key(c.info.name)) == nil {
		if !c.rt.createOnUpdate {
			return errorResponse(apierrors.NewNotFound(c.rt.groupResource(), c.info.name))
		}
		sm := objectMeta(stored)
		wipeSystemFields(sm)
		sm.SetResourceVersion("")
		if err := c.namespaceMatches(sm); err != nil {
			return errorResponse(err)
		}
		if err := c.createLocked(stored); err != nil {
			return errorResponse(err)
		}
		return c.objectResponse(http.StatusCreated, stored)
	}
	out, err := c.updateLocked(stored, "update")
	if err != nil {
		return errorResponse(err)
	}
	return c.objectResponse(http.StatusOK, out)
}

// updateLocked checks the resourceVersion precondition, validates the
// update and stores it; an update that changes nothing is not written (the
// object keeps its resourceVersion and its TTL). It answers what is stored.
func (c *call) updateLocked(stored runtime.Object, verb string) (runtime.Object, error) {
	key := c.key(c.info.name)
	old := c.s.st.get(c.rt.store, key)
	if old == nil {
		return nil, apierrors.NewNotFound(c.rt.groupResource(), c.info.name)
	}
	m, oldMeta := objectMeta(stored), objectMeta(old)
	switch rv := m.GetResourceVersion(); {
	case rv == "" && !c.rt.unconditionalUpdate:
		gk := schema.GroupKind{Group: c.rt.gv.Group, Kind: c.rt.resource}
		return nil, apierrors.NewInvalid(gk, c.info.name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), int64(0), "must be specified for an update")})
	case rv == "":
		m.SetResourceVersion(oldMeta.GetResourceVersion()) // unconditional: on the latest
	case rv != oldMeta.GetResourceVersion():
		return nil, apierrors.NewConflict(c.rt.groupResource(), c.info.name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if err := c.namespaceMatches(m); err != nil {
		return nil, err
	}
	m.SetGeneration(oldMeta.GetGeneration())
	if m.GetUID() == "" {
		m.SetUID(oldMeta.GetUID())
	}
	if ct := oldMeta.GetCreationTimestamp(); !ct.IsZero() {
		m.SetCreationTimestamp(ct)
	}
	errs := apivalidation.ValidateObjectMetaAccessor(m, c.rt.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(m, oldMeta, field.NewPath("metadata"))...)
	errs = append(errs, c.rt.validateUpdate(stored, old)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(c.kind(), c.info.name, errs)
	}
	m.SetResourceVersion(oldMeta.GetResourceVersion())
	stored.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if apiequality.Semantic.DeepEqual(stored, old) {
		return old, nil // etcd is not written: the same bytes
	}
	rv := c.s.st.put(c.rt.store, key, stored, c.expiry())
	if c.rt.store == storeEvents {
		c.s.journalLocked(verb, c.rt.gv.Group, old, stored, rv)
	}
	return stored, nil
}

func (c *call) delete() response {
	var opts metav1.DeleteOptions
	if len(c.body) > 0 {
		if err := decodeInto(c.body, &opts); err != nil {
			return errorResponse(err)
		}
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.maintainLocked()
	key := c.key(c.info.name)
	old := c.s.st.get(c.rt.store, key)
	if old == nil {
		return errorResponse(apierrors.NewNotFound(c.rt.groupResource(), c.info.name))
	}
	m := objectMeta(old)
	if p := opts.Preconditions; p != nil {
		gk := c.kind()
		gr := schema.GroupResource{Group: gk.Group, Resource: gk.Kind} // BeforeDelete names the kind
		if p.UID != nil && *p.UID != m.GetUID() {
			return errorResponse(apierrors.NewConflict(gr, c.info.name, fmt.Errorf(
				"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID())))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
			return errorResponse(apierrors.NewConflict(gr, c.info.name, fmt.Errorf(
				"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion())))
		}
	}
	rv := c.s.st.put(c.rt.store, key, nil, time.Time{})
	if c.rt.store == storeEvents {
		c.s.journalLocked("delete", c.rt.gv.Group, old, nil, rv)
	}
	gr := c.rt.groupResource()
	return jsonResponse(http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: c.info.name, Group: gr.Group, Kind: gr.Resource, UID: m.GetUID()},
	})
}

// decodeInto decodes a request body (JSON or protobuf, as client-go's
// typed clients send) into obj.
func decodeInto(body []byte, obj runtime.Object) error {
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, obj); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// wipeSystemFields is WipeObjectMetaSystemFields: what a client may not set.
func wipeSystemFields(m metav1.Object) {
	m.SetCreationTimestamp(metav1.Time{})
	m.SetUID("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
}
