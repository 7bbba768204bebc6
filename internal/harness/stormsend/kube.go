package stormsend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A rest.Config without a rate limit gets this one instead of client-go's
// 5 requests a second, which would pace every replay at 5 writes a second.
const (
	defaultQPS   = 1000
	defaultBurst = 1000
)

// maxConsecutiveFailures ends a Raw replay that cannot write at all (no
// namespace, no permission) instead of failing every occurrence in turn.
const maxConsecutiveFailures = 20

// counting counts the writes of Events of either API: create, patch and
// update requests on an events resource. It sees what client-go's
// recorders do without changing them.
type counting struct {
	next http.RoundTripper
	c    *counters
}

func (t *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isEventWrite(req) {
		return t.next.RoundTrip(req)
	}
	t.c.inflight.Add(1)
	defer t.c.inflight.Add(-1)
	resp, err := t.next.RoundTrip(req)
	switch {
	case err == nil && resp.StatusCode < 300:
		t.c.writes.Add(1)
	case err != nil || resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		t.c.lastRetried.Store(time.Now().UnixNano())
		fallthrough
	default:
		t.c.failures.Add(1)
	}
	return resp, err
}

// isEventWrite: POST .../namespaces/NS/events, PATCH or PUT .../namespaces/NS/events/NAME.
func isEventWrite(req *http.Request) bool {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	k := len(segs) - 1 // where "events" must be
	switch req.Method {
	case http.MethodPost:
	case http.MethodPatch, http.MethodPut:
		k--
	default:
		return false
	}
	return k >= 2 && segs[k] == "events" && segs[k-2] == "namespaces"
}

// clientFor is a clientset on a copy of cfg whose event writes are counted in c.
func clientFor(cfg *rest.Config, c *counters) (*kubernetes.Clientset, error) {
	if cfg == nil {
		return nil, errors.New("no rest config")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &counting{next: rt, c: c} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return cs, nil
}

// rawKey is what makes two occurrences the same Event for an emitter that
// does not compress: everything it is asked to write but the time.
type rawKey struct {
	regarding                               storm.Ref
	typ, reason, note, controller, instance string
}

// rawEvent is an Event object Raw wrote.
type rawEvent struct {
	name, namespace string
	first           time.Time
	count           int64
}

// Raw writes what a recorder WITHOUT compression writes: one core/v1 Event
// per distinct (regarding, type, reason, note, controller, instance),
// created at its first occurrence and patched (count+1, lastTimestamp) at
// every later one, exactly one API write per occurrence, in stream order.
// An occurrence that cannot be written is counted as a failure; Raw returns
// an error when any was lost, and gives up after 20 failures in a row.
func Raw(ctx context.Context, cfg *rest.Config, occs []storm.Occurrence, opts Options) (Stats, error) {
	r, err := newReplay(occs, opts)
	if err != nil {
		return Stats{}, err
	}
	cs, err := clientFor(cfg, &r.c)
	if err != nil {
		return r.finish(ctx, err)
	}
	written := map[rawKey]*rawEvent{}
	var lost, inARow int
	var firstErr error
	for i := range r.occs {
		if err := r.wait(ctx, i); err != nil {
			return r.finish(ctx, err)
		}
		o := &r.occs[i]
		r.c.occurrences.Add(1)
		k := rawKey{o.Regarding, o.Type, o.Reason, o.Note, o.Controller, o.Instance}
		w := written[k]
		if w == nil {
			w = &rawEvent{}
			written[k] = w
		}
		if err := w.write(ctx, cs, o, r.stamp(o.Time), &r.c); err != nil {
			if ctx.Err() != nil {
				return r.finish(ctx, err)
			}
			lost++
			if firstErr == nil {
				firstErr = fmt.Errorf("occurrence %d: %w", i+1, err)
			}
			if inARow++; inARow >= maxConsecutiveFailures {
				return r.finish(ctx, fmt.Errorf("raw replay: %d writes failed in a row, giving up; first: %w", inARow, firstErr))
			}
			continue
		}
		inARow = 0
	}
	if firstErr != nil {
		return r.finish(ctx, fmt.Errorf("raw replay: %d of %d occurrences not written; first: %w", lost, len(r.occs), firstErr))
	}
	return r.finish(ctx, nil)
}

// write records one more occurrence of w at time at: a patch of the count
// once the Event exists, else (first time, or the Event is gone) a create.
// A failed write leaves w as it was.
func (w *rawEvent) write(ctx context.Context, cs kubernetes.Interface, o *storm.Occurrence, at time.Time, c *counters) error {
	count, first := w.count+1, w.first
	if w.name != "" {
		patch := fmt.Sprintf(`{"count":%d,"lastTimestamp":%q}`, count, at.UTC().Format(time.RFC3339))
		_, err := cs.CoreV1().Events(w.namespace).Patch(ctx, w.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
			w.count = count
		}
		if !apierrors.IsNotFound(err) {
			return wrapWrite(err, "patch", w.namespace, w.name)
		}
	}
	if first.IsZero() {
		first = at
	}
	ev := o.Event()
	ev.Count, ev.FirstTimestamp, ev.LastTimestamp, ev.Time = count, first, at, at
	// Named like client-go's (object name and the wall time), so that a
	// second replay of the same stream never meets the first one's objects.
	ev.Name = k8sevent.GenerateName(o.Regarding.Name, time.Now(), o.Type+"\x00"+o.Reason+"\x00"+o.Note+"\x00"+o.Controller+"\x00"+o.Instance)
	if _, fatal := k8sevent.Sanitize(&ev, at); fatal != 0 {
		c.failures.Add(1) // not a request: the API server would refuse it
		return fmt.Errorf("not a valid Event (%s)", fatal)
	}
	ns := ev.ObjectNamespace()
	if _, err := cs.CoreV1().Events(ns).Create(ctx, ev.ToCoreV1(), metav1.CreateOptions{}); err != nil {
		return wrapWrite(err, "create", ns, ev.Name)
	}
	w.name, w.namespace, w.first, w.count = ev.Name, ns, first, count
	return nil
}

func wrapWrite(err error, verb, namespace, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s event %s/%s: %w", verb, namespace, name, err)
}

// EnsureNamespaces creates the namespaces the occurrences' Events live in
// (storm.Namespaces), when missing.
func EnsureNamespaces(ctx context.Context, cs kubernetes.Interface, occs []storm.Occurrence) error {
	return CreateNamespaces(ctx, cs, storm.Namespaces(occs)...)
}

// CreateNamespaces creates each namespace unless it exists.
func CreateNamespaces(ctx context.Context, cs kubernetes.Interface, names ...string) error {
	for _, ns := range names {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return nil
}
