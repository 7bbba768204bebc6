package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"

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
	create(ctx context.Context, ev *k8sevent.Event) error
	// patch sends what changes between records of one object (absolute
	// values: sending it twice is harmless); sent is false when nothing
	// does.
	patch(ctx context.Context, ev *k8sevent.Event) (sent bool, err error)
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
