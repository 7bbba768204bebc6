package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// eventsSink writes through events.k8s.io/v1: the series is the count.
type eventsSink struct{ cs kubernetes.Interface }

func (eventsSink) api() string { return k8sevent.APIEventsV1 }

func (eventsSink) adapt(ev *k8sevent.Event) {
	if ev.SeriesCount == 0 && ev.Count >= 2 {
		// A count without a series (mode: legacy, an app's count):
		// events.k8s.io/v1 has no writable count but the series, which both
		// APIs and both kubectl commands show.
		ev.SeriesCount, ev.SeriesLastObservedTime = ev.Count, ev.LastTimestamp
		if ev.SeriesLastObservedTime.IsZero() {
			ev.SeriesLastObservedTime = ev.Time
		}
	}
	seriesBelowTwo(ev)
}

func (eventsSink) occurrences(ev *k8sevent.Event) int64 { return max(ev.SeriesCount, 1) }

func (s eventsSink) create(ctx context.Context, ev *k8sevent.Event, annotations map[string]string) (string, error) {
	out := ev.ToEventsV1()
	out.DeprecatedSource, out.DeprecatedCount = corev1.EventSource{}, 0
	out.DeprecatedFirstTimestamp, out.DeprecatedLastTimestamp = metav1.Time{}, metav1.Time{}
	addAnnotations(&out.ObjectMeta, annotations)
	got, err := s.cs.EventsV1().Events(ev.ObjectNamespace()).Create(ctx, out, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return got.ResourceVersion, nil
}

func (s eventsSink) patch(ctx context.Context, ev *k8sevent.Event) (bool, error) {
	if ev.SeriesCount == 0 {
		return false, nil // a singleton again: nothing changes
	}
	data, err := json.Marshal(map[string]any{"series": map[string]any{
		"count": ev.SeriesCount, "lastObservedTime": metav1.NewMicroTime(ev.SeriesLastObservedTime),
	}})
	if err != nil {
		return false, fmt.Errorf("patch body: %w", err)
	}
	_, err = s.cs.EventsV1().Events(ev.ObjectNamespace()).Patch(ctx, ev.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return true, err
}

func (s eventsSink) patchShared(ctx context.Context, ev *k8sevent.Event, p sharedPatch) (objState, error) {
	data, err := p.body(map[string]any{"series": map[string]any{
		"count": p.total, "lastObservedTime": metav1.NewMicroTime(p.last),
	}})
	if err != nil {
		return objState{}, err
	}
	got, err := s.cs.EventsV1().Events(ev.ObjectNamespace()).Patch(ctx, p.name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return objState{}, err
	}
	stored := k8sevent.FromEventsV1(got)
	return stateOf(&got.ObjectMeta, &stored), nil
}
