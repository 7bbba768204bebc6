package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// listed is one Event object as the API server gave it.
type listed struct {
	ev              k8sevent.Event
	resourceVersion string
	key             string // its place in a list: namespace/name, the order of the server's storage keys
}

// listKey is the place of object namespace/name in a list: lists come in
// the order of the API server's storage keys, which end in namespace/name
// (compared bytewise, as Go compares strings).
func listKey(namespace, name string) string { return namespace + "/" + name }

// eventAPI lists and watches Events of one API group, without a cache.
type eventAPI interface {
	list(ctx context.Context, ns string, opts metav1.ListOptions) (items []listed, rv, cont string, err error)
	watch(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error)
}

func newEventAPI(cs kubernetes.Interface, api string) eventAPI {
	if api == k8sevent.APICoreV1 {
		return coreAPI{cs}
	}
	return eventsAPI{cs}
}

type coreAPI struct{ cs kubernetes.Interface }

func (a coreAPI) list(ctx context.Context, ns string, opts metav1.ListOptions) ([]listed, string, string, error) {
	l, err := a.cs.CoreV1().Events(ns).List(ctx, opts)
	if err != nil {
		return nil, "", "", fmt.Errorf("list core/v1 events in %q: %w", ns, err)
	}
	items := make([]listed, len(l.Items))
	for i := range l.Items {
		o := &l.Items[i]
		items[i] = listed{k8sevent.FromCoreV1(o), o.ResourceVersion, listKey(o.Namespace, o.Name)}
	}
	return items, l.ResourceVersion, l.Continue, nil
}

func (a coreAPI) watch(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := a.cs.CoreV1().Events(ns).Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch core/v1 events in %q: %w", ns, err)
	}
	return w, nil
}

type eventsAPI struct{ cs kubernetes.Interface }

func (a eventsAPI) list(ctx context.Context, ns string, opts metav1.ListOptions) ([]listed, string, string, error) {
	l, err := a.cs.EventsV1().Events(ns).List(ctx, opts)
	if err != nil {
		return nil, "", "", fmt.Errorf("list events.k8s.io/v1 events in %q: %w", ns, err)
	}
	items := make([]listed, len(l.Items))
	for i := range l.Items {
		o := &l.Items[i]
		items[i] = listed{k8sevent.FromEventsV1(o), o.ResourceVersion, listKey(o.Namespace, o.Name)}
	}
	return items, l.ResourceVersion, l.Continue, nil
}

func (a eventsAPI) watch(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := a.cs.EventsV1().Events(ns).Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch events.k8s.io/v1 events in %q: %w", ns, err)
	}
	return w, nil
}

// fromWatch reads the Event of a watch event's object, of either group.
func fromWatch(obj runtime.Object) (listed, bool) {
	switch o := obj.(type) {
	case *corev1.Event:
		return listed{k8sevent.FromCoreV1(o), o.ResourceVersion, listKey(o.Namespace, o.Name)}, true
	case *eventsv1.Event:
		return listed{k8sevent.FromEventsV1(o), o.ResourceVersion, listKey(o.Namespace, o.Name)}, true
	}
	return listed{}, false
}

// resourceVersionOf reads the resourceVersion of a bookmark's object.
func resourceVersionOf(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}
