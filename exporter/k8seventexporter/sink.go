package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// eventSink is what differs between the two Event APIs, one
// implementation each (as client-go has an EventSink per API): how a
// repaired record becomes that API's Event, the count it states, and its
// create and patch. Everything else (ownership, what the server holds,
// 404 and AlreadyExists) is the writer's, the same for both.
type eventSink interface {
	// api is the API's name (k8sevent.APIEventsV1 or k8sevent.APICoreV1).
	api() string
	// adapt fills and clears the fields of a repaired record as this API
	// writes them.
	adapt(ev *k8sevent.Event)
	// occurrences is the count an adapted Event states in this API.
	occurrences(ev *k8sevent.Event) int64
	// create makes the object, with annotations added to its own (nil:
	// none), and answers the resourceVersion it was created at.
	create(ctx context.Context, ev *k8sevent.Event, annotations map[string]string) (rv string, err error)
	// patch sends what changes between records of one object (absolute
	// values: sending it twice is harmless); sent is false when nothing
	// does.
	patch(ctx context.Context, ev *k8sevent.Event) (sent bool, err error)
	// patchShared writes one series' contribution to an object other
	// series write too (adopt_open_series), preconditioned on its
	// resourceVersion, and answers the object as the API server stored it.
	patchShared(ctx context.Context, ev *k8sevent.Event, p sharedPatch) (objState, error)
}

func newSink(cs kubernetes.Interface, api string) eventSink {
	if api == k8sevent.APICoreV1 {
		return coreSink{cs}
	}
	return eventsSink{cs}
}

// seriesBelowTwo drops a series the API server would reject (below 2) and
// gives a series its last observation when the record states none.
func seriesBelowTwo(ev *k8sevent.Event) {
	if ev.SeriesCount == 1 {
		ev.SeriesCount = 0
	}
	if ev.SeriesCount > 0 && ev.SeriesLastObservedTime.IsZero() {
		ev.SeriesLastObservedTime = ev.Time
	}
}

// addAnnotations adds annotations to an object about to be created.
func addAnnotations(m *metav1.ObjectMeta, annotations map[string]string) {
	if len(annotations) == 0 {
		return
	}
	if m.Annotations == nil {
		m.Annotations = make(map[string]string, len(annotations))
	}
	maps.Copy(m.Annotations, annotations)
}
