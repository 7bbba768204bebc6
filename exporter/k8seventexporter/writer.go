package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// errNamespace marks a record for a namespace outside the allowlist.
var errNamespace = errors.New("namespace not in the exporter's namespaces")

// knownNames bounds the names the writer remembers having written.
const knownNames = 16384

// outcome is what a write did.
type outcome int

const (
	created outcome = iota
	patched
	createdAfter404  // patch answered 404 (the object expired): created
	patchedAfter409  // create answered AlreadyExists (a retry, a restart): patched
	stale            // older than what was written: skipped
	unchanged        // the count already written: nothing to send
	droppedPermanent // the record cannot be written: counted, never retried
)

// writer turns Events into idempotent API writes: the first record of a
// name creates, later ones patch only what changes.
type writer struct {
	cs    kubernetes.Interface
	api   string
	cfg   *Config
	mu    sync.Mutex                    // guards known; never held across an API call
	known *simplelru.LRU[string, int64] // namespace/name written -> its count
}

// remember notes the count written for key.
func (w *writer) remember(key string, count int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.known.Add(key, count)
}

// recall is the count last written for key, if known.
func (w *writer) recall(key string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.known.Get(key)
}

func newWriter(cs kubernetes.Interface, api string, cfg *Config) *writer {
	known, _ := simplelru.NewLRU[string, int64](knownNames, nil)
	return &writer{cs: cs, api: api, cfg: cfg, known: known}
}

// learn remembers the Events this exporter's reporting controller wrote
// before (a restart), so that a record for one of them patches it instead
// of trying to create a twin: the "reconstruct activeSeries from a list" of
// the events redesign. Both APIs share storage; core/v1 lists by
// reportingComponent.
func (w *writer) learn(ctx context.Context, controller string, pageSize int64) (int, error) {
	opts := metav1.ListOptions{FieldSelector: "reportingComponent=" + controller, Limit: pageSize}
	n := 0
	for {
		l, err := w.cs.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("list events of %s: %w", controller, err)
		}
		for i := range l.Items {
			ev := &l.Items[i]
			count := int64(ev.Count)
			if ev.Series != nil {
				count = int64(ev.Series.Count)
			}
			w.remember(ev.Namespace+"/"+ev.Name, max(count, 1))
			n++
		}
		if l.Continue == "" {
			return n, nil
		}
		opts.Continue = l.Continue
	}
}

// prepare repairs and completes ev for the API, or says why it cannot be
// written (a permanent error).
func (w *writer) prepare(ev *k8sevent.Event, instance string) error {
	if _, fatal := k8sevent.Sanitize(ev, time.Now()); fatal != 0 {
		return consumererror.NewPermanent(fmt.Errorf("invalid event record (%s)", fatal))
	}
	ns := ev.ObjectNamespace()
	if len(w.cfg.Namespaces) > 0 && !slices.Contains(w.cfg.Namespaces, ns) {
		return consumererror.NewPermanent(fmt.Errorf("%w: %q", errNamespace, ns))
	}
	if w.cfg.ReportingController != "" && (w.cfg.OverrideReporting || ev.ReportingController == "") {
		ev.ReportingController = w.cfg.ReportingController
	}
	if ev.ReportingController == "" {
		ev.ReportingController = ev.SourceComponent
	}
	if ev.ReportingController == "" || len(validation.IsQualifiedName(ev.ReportingController)) > 0 {
		ev.ReportingController = "k8sevents.io/exporter"
	}
	if ev.ReportingInstance == "" || w.cfg.OverrideReporting && w.cfg.ReportingController != "" {
		ev.ReportingInstance = instance
	}
	if ev.Action == "" {
		ev.Action = ev.Reason // events.k8s.io requires one; the reason is the closest
	}
	ev.Note = k8sevent.Truncate(ev.Note, w.cfg.MaxNoteBytes)
	if len(validation.IsDNS1123Subdomain(ev.Name)) > 0 {
		ev.Name = k8sevent.GenerateName(ev.Regarding.Name, ev.FirstTime(), ev.Reason+"\x00"+ev.Regarding.UID+"\x00"+ev.UID)
	}
	ev.EventTime = ev.FirstTime()
	if ev.SeriesCount == 1 {
		ev.SeriesCount = 0 // the API server rejects a series below 2
	}
	if ev.SeriesCount > 0 && ev.SeriesLastObservedTime.IsZero() {
		ev.SeriesLastObservedTime = ev.Time
	}
	if w.api == k8sevent.APICoreV1 {
		ev.Count = max(ev.Count, ev.SeriesCount, 1)
		if ev.FirstTimestamp.IsZero() {
			ev.FirstTimestamp = ev.FirstTime()
		}
		ev.LastTimestamp = ev.Time
		ev.EventTime, ev.SeriesCount = time.Time{}, 0 // legacy fields only: no strict validation
		if ev.SourceComponent == "" {
			ev.SourceComponent = ev.ReportingController
		}
	}
	if err := k8sevent.Validate(ev, w.api); err != nil {
		return consumererror.NewPermanent(fmt.Errorf("event %s/%s would be rejected: %w", ns, ev.Name, err))
	}
	return nil
}

// write makes the API write for a prepared Event.
func (w *writer) write(ctx context.Context, ev *k8sevent.Event) (outcome, error) {
	key, count := ev.ObjectNamespace()+"/"+ev.Name, max(ev.Count, ev.SeriesCount, 1)
	if last, ok := w.recall(key); ok {
		if count < last {
			return stale, nil // an older record after a newer one: never lower a count
		}
		if count == last {
			// The same occurrences as the last write (a shutdown flush or a
			// finish after it, a replayed queue): the patch would change
			// nothing, and an unchanged patch does not even refresh the TTL.
			return unchanged, nil
		}
		w.remember(key, count)
		err := w.patch(ctx, ev)
		if apierrors.IsNotFound(err) {
			if err = w.create(ctx, ev); err == nil {
				return createdAfter404, nil
			}
		}
		return patched, w.classify(err, "patch", ev)
	}
	err := w.create(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		if err = w.patch(ctx, ev); err == nil {
			w.remember(key, count)
			return patchedAfter409, nil
		}
	}
	if err == nil {
		w.remember(key, count)
	}
	return created, w.classify(err, "create", ev)
}

func (w *writer) create(ctx context.Context, ev *k8sevent.Event) error {
	var err error
	if w.api == k8sevent.APICoreV1 {
		_, err = w.cs.CoreV1().Events(ev.ObjectNamespace()).Create(ctx, ev.ToCoreV1(), metav1.CreateOptions{})
	} else {
		out := ev.ToEventsV1()
		out.DeprecatedSource, out.DeprecatedCount = corev1.EventSource{}, 0
		out.DeprecatedFirstTimestamp, out.DeprecatedLastTimestamp = metav1.Time{}, metav1.Time{}
		_, err = w.cs.EventsV1().Events(ev.ObjectNamespace()).Create(ctx, out, metav1.CreateOptions{})
	}
	return err
}

// patch writes only what changes between records of one object.
func (w *writer) patch(ctx context.Context, ev *k8sevent.Event) error {
	var body map[string]any
	if w.api == k8sevent.APICoreV1 {
		body = map[string]any{"count": ev.Count, "lastTimestamp": metav1.NewTime(ev.LastTimestamp), "message": ev.Note}
	} else {
		if ev.SeriesCount == 0 {
			return nil // a singleton again: nothing changes
		}
		body = map[string]any{"series": map[string]any{
			"count": ev.SeriesCount, "lastObservedTime": metav1.NewMicroTime(ev.SeriesLastObservedTime),
		}}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("patch body: %w", err)
	}
	ns := ev.ObjectNamespace()
	if w.api == k8sevent.APICoreV1 {
		_, err = w.cs.CoreV1().Events(ns).Patch(ctx, ev.Name, types.MergePatchType, data, metav1.PatchOptions{})
	} else {
		_, err = w.cs.EventsV1().Events(ns).Patch(ctx, ev.Name, types.MergePatchType, data, metav1.PatchOptions{})
	}
	return err
}

// classify decides what a failed write means: retry later (honouring
// Retry-After on 429), or drop for good.
func (w *writer) classify(err error, verb string, ev *k8sevent.Event) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s event %s/%s: %w", verb, ev.ObjectNamespace(), ev.Name, err)
	switch {
	case apierrors.IsTooManyRequests(err):
		if delay, ok := apierrors.SuggestsClientDelay(err); ok && delay > 0 {
			return exporterhelper.NewThrottleRetry(err, time.Duration(delay)*time.Second)
		}
		return err // exporterhelper's exponential backoff
	case apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsInvalid(err),
		apierrors.IsNotFound(err) && verb == "create", apierrors.IsMethodNotSupported(err):
		return consumererror.NewPermanent(err)
	}
	return err // 5xx, timeouts, connection refused: exporterhelper retries
}
