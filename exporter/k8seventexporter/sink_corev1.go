package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// coreSink writes through core/v1: count, first and last seen, no series.
type coreSink struct{ cs kubernetes.Interface }

func (coreSink) api() string { return k8sevent.APICoreV1 }

func (coreSink) adapt(ev *k8sevent.Event) {
	seriesBelowTwo(ev)
	ev.Count = max(ev.Count, ev.SeriesCount, 1)
	if ev.FirstTimestamp.IsZero() {
		ev.FirstTimestamp = ev.FirstTime()
	}
	ev.LastTimestamp = lastSeen(ev)
	ev.EventTime, ev.SeriesCount = time.Time{}, 0 // legacy fields only: no strict validation
	if ev.SourceComponent == "" {
		ev.SourceComponent = ev.ReportingController
	}
}

func (coreSink) occurrences(ev *k8sevent.Event) int64 { return max(ev.Count, 1) }

func (s coreSink) create(ctx context.Context, ev *k8sevent.Event, annotations map[string]string) (string, error) {
	out := ev.ToCoreV1()
	addAnnotations(&out.ObjectMeta, annotations)
	got, err := s.cs.CoreV1().Events(ev.ObjectNamespace()).Create(ctx, out, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return got.ResourceVersion, nil
}

func (s coreSink) patch(ctx context.Context, ev *k8sevent.Event) (bool, error) {
	data, err := json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": metav1.NewTime(ev.LastTimestamp), "message": ev.Note})
	if err != nil {
		return false, fmt.Errorf("patch body: %w", err)
	}
	_, err = s.cs.CoreV1().Events(ev.ObjectNamespace()).Patch(ctx, ev.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return true, err
}

func (s coreSink) patchShared(ctx context.Context, ev *k8sevent.Event, p sharedPatch) (objState, error) {
	fields := map[string]any{"count": p.total, "lastTimestamp": metav1.NewTime(p.last)}
	if p.latest {
		fields["message"] = ev.Note
	}
	data, err := p.body(fields)
	if err != nil {
		return objState{}, err
	}
	got, err := s.cs.CoreV1().Events(ev.ObjectNamespace()).Patch(ctx, p.name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return objState{}, err
	}
	stored := k8sevent.FromCoreV1(got)
	return stateOf(&got.ObjectMeta, &stored), nil
}

// lastSeen is the latest occurrence a record states: the processor's
// k8s.event.last_timestamp (legacy mode) or series lastObservedTime, which
// never move backwards; the record's own time only when it states neither
// (with out-of-order input, it may be older than an occurrence already
// written).
func lastSeen(ev *k8sevent.Event) time.Time {
	last := ev.LastTimestamp
	if ev.SeriesLastObservedTime.After(last) {
		last = ev.SeriesLastObservedTime
	}
	if last.IsZero() {
		return ev.Time
	}
	return last
}
