package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/consumer/consumererror"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// errNamespace marks a record for a namespace outside the allowlist.
var errNamespace = errors.New("namespace not in the exporter's namespaces")

// errForbidden marks a write a ready API server refused twice with 403
// that RBAC explains: the exporter's role does not let it write there.
var errForbidden = errors.New("forbidden by an API server that is ready (the exporter's RBAC lacks this namespace)")

// knownNames bounds the names the writer remembers having written.
const knownNames = 16384

// outcome is what a write did.
type outcome int

const (
	created outcome = iota
	patched
	createdAfter404 // patch answered 404 (the object expired): created
	patchedAfter409 // create answered AlreadyExists (a retry, a restart) with a lower count: patched
	adopted         // create answered AlreadyExists with this count already stored: nothing to send
	stale           // older than what was written: skipped
	adoptedSeries   // a series' first write, into the open object of its series another writer made (adopt_open_series)
	unchanged       // the count already written: nothing to send
)

// writer turns Events into idempotent API writes: the first record of a
// name creates, later ones patch only what changes. Its bookkeeping follows
// the API server: a count is remembered only once a write carrying it was
// accepted (or read back), so a failed or unanswered write is sent again
// when the record is retried. Its writes are made one at a time (the
// dispatcher's single writer), so the check of what an object holds and the
// write never interleave with another write of that object.
type writer struct {
	cs     kubernetes.Interface
	sink   eventSink // the chosen API's writes
	cfg    *Config
	self   string                       // this exporter's reporting instance
	mu     sync.Mutex                   // guards known; never held across an API call
	known  *simplelru.LRU[string, held] // namespace/name -> what the API server holds
	shared *adoption                    // adopt_open_series; nil: off
}

// held is what the API server holds under a name: the count, and whose
// object it is.
type held struct {
	count int64
	owner owner
}

// remember notes what the API server holds for key.
func (w *writer) remember(key string, count int64, o owner) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.known.Add(key, held{count: count, owner: o})
}

// recall is what the API server holds for key, if known.
func (w *writer) recall(key string) (held, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.known.Get(key)
}

// ownerOf is ev's owner as this writer compares owners (see owner).
func (w *writer) ownerOf(ev *k8sevent.Event) owner { return ownerOf(ev, w.cfg.KeepRecordInstance) }

// create makes ev's object with annotations; with keep_record_instance its
// reporting instance names the sender, so an annotation names this writer.
func (w *writer) create(ctx context.Context, ev *k8sevent.Event, annotations map[string]string) (string, error) {
	if w.cfg.KeepRecordInstance && w.self != "" {
		annotations = maps.Clone(annotations)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k8sevent.AnnotationWrittenBy] = w.self
	}
	return w.sink.create(ctx, ev, annotations)
}

func newWriter(cs kubernetes.Interface, api string, cfg *Config, self string) *writer {
	known, _ := simplelru.NewLRU[string, held](knownNames, nil)
	return &writer{cs: cs, sink: newSink(cs, api), cfg: cfg, self: self, known: known}
}

// learn remembers the Events this exporter's reporting controller wrote
// before (a restart), so that a record for one of them patches it instead
// of trying to create a twin: the "reconstruct activeSeries from a list" of
// the events redesign. Both APIs share storage; core/v1 lists by
// reportingComponent. With a namespaces allowlist it lists each namespace
// (a Role per namespace is enough), else the whole cluster.
func (w *writer) learn(ctx context.Context, controller string, pageSize int64) (int, error) {
	namespaces := w.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	n := 0
	for _, ns := range namespaces {
		opts := metav1.ListOptions{FieldSelector: "reportingComponent=" + controller, Limit: pageSize}
		for {
			l, err := w.cs.CoreV1().Events(ns).List(ctx, opts)
			if err != nil {
				return n, fmt.Errorf("list events of %s in namespace %q: %w", controller, ns, err)
			}
			for i := range l.Items {
				ev := k8sevent.FromCoreV1(&l.Items[i])
				w.remember(l.Items[i].Namespace+"/"+l.Items[i].Name, ev.Occurrences(), w.ownerOf(&ev))
				n++
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
	}
	return n, nil
}

// prepare repairs and completes ev for the API, or says why it cannot be
// written (a permanent error).
func (w *writer) prepare(ev *k8sevent.Event) error {
	if _, fatal := k8sevent.Sanitize(ev, time.Now()); fatal != 0 {
		return consumererror.NewPermanent(fmt.Errorf("invalid event record (%s)", fatal))
	}
	ev.Type = k8sevent.APIType(ev.Type) // records keep Error and Critical; the API takes Normal or Warning
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
	if ev.ReportingInstance == "" || w.cfg.OverrideReporting && w.cfg.ReportingController != "" && !w.cfg.KeepRecordInstance {
		ev.ReportingInstance = w.self
	}
	if w.cfg.OverrideReporting && w.cfg.ReportingController != "" {
		// kubectl describe shows source.component before the reporting
		// controller: a record that claims kubelet must not read as kubelet's.
		ev.SourceComponent, ev.SourceHost = ev.ReportingController, ev.ReportingInstance
	}
	if ev.Action == "" {
		ev.Action = ev.Reason // events.k8s.io requires one; the reason is the closest
	}
	ev.Note = k8sevent.Truncate(ev.Note, w.cfg.MaxNoteBytes)
	if len(validation.IsDNS1123Subdomain(ev.Name)) > 0 {
		ev.Name = k8sevent.GenerateName(ev.Regarding.Name, ev.FirstTime(), ev.Reason+"\x00"+ev.Regarding.UID+"\x00"+ev.UID)
	}
	ev.EventTime = ev.FirstTime()
	w.sink.adapt(ev)
	if err := k8sevent.Validate(ev, w.sink.api()); err != nil {
		return consumererror.NewPermanent(fmt.Errorf("event %s/%s would be rejected: %w", ns, ev.Name, err))
	}
	if err := checkSize(ev, w.sink.api()); err != nil {
		return consumererror.NewPermanent(fmt.Errorf("event %s/%s too large: %w", ns, ev.Name, err))
	}
	return nil
}

// write makes the API write for a prepared Event; the outcome means
// something only without an error. Every path is safe to retry: nothing is
// remembered until the API server accepted it, and a create that meets an
// existing object reads it and never lowers its count. An object under the
// record's name that is not the record's own (see owner) is never written:
// the record moves to a deterministic other name (renamed), at most
// maxRenames times, then it is dropped (errNameTaken).
func (w *writer) write(ctx context.Context, ev *k8sevent.Event) (outcome, error) {
	original := ev.Name
	for n := 0; ; n++ {
		out, err := w.writeName(ctx, ev)
		if !errors.Is(err, errNotOurs) {
			return out, err
		}
		if n == maxRenames {
			return 0, consumererror.NewPermanent(fmt.Errorf("event %s/%s: %w", ev.ObjectNamespace(), original, errNameTaken))
		}
		ev.Name = renamed(ev, w.ownerOf(ev), original, n+1)
	}
}

// writeName writes ev under its current name, or answers errNotOurs
// (without writing) when the object there is not its own.
func (w *writer) writeName(ctx context.Context, ev *k8sevent.Event) (outcome, error) {
	if w.shared != nil {
		return w.writeShared(ctx, ev)
	}
	key, count, own := ev.ObjectNamespace()+"/"+ev.Name, w.sink.occurrences(ev), w.ownerOf(ev)
	h, ok := w.recall(key)
	last := h.count
	switch {
	case !ok:
		return w.createOrAdopt(ctx, key, ev, count)
	case !h.owner.matches(own):
		return 0, errNotOurs
	case count < last:
		return stale, nil // an older record after a newer one: never lower a count
	case count == last:
		// The same occurrences as the last write (a shutdown flush or a
		// finish after it, a replayed queue): the patch would change
		// nothing, and an unchanged patch does not even refresh the TTL.
		return unchanged, nil
	}
	sent, err := w.sink.patch(ctx, ev)
	switch {
	case err == nil && !sent:
		return unchanged, nil
	case err == nil:
		w.remember(key, count, own)
		return patched, nil
	case !apierrors.IsNotFound(err):
		return patched, w.classify(err, "patch", ev)
	}
	// The object expired (its TTL): create it again.
	switch _, err = w.create(ctx, ev, nil); {
	case err == nil:
		w.remember(key, count, own)
		return createdAfter404, nil
	case apierrors.IsAlreadyExists(err):
		return w.adopt(ctx, key, ev, count)
	}
	return createdAfter404, w.classify(err, "create", ev)
}

// createOrAdopt writes an object this writer does not know.
func (w *writer) createOrAdopt(ctx context.Context, key string, ev *k8sevent.Event, count int64) (outcome, error) {
	_, err := w.create(ctx, ev, nil)
	switch {
	case err == nil:
		w.remember(key, count, w.ownerOf(ev))
		return created, nil
	case apierrors.IsAlreadyExists(err):
		return w.adopt(ctx, key, ev, count)
	}
	return created, w.classify(err, "create", ev)
}

// adopt takes over an object that exists although this writer does not
// know it (its own create whose answer was lost, a restart without the
// listing, another exporter of the same controller): it reads the object,
// answers errNotOurs when it is not the record's own, and patches only a
// higher count.
func (w *writer) adopt(ctx context.Context, key string, ev *k8sevent.Event, count int64) (outcome, error) {
	got, err := w.cs.CoreV1().Events(ev.ObjectNamespace()).Get(ctx, ev.Name, metav1.GetOptions{})
	if err != nil {
		// A 404 here: it expired since the create; the retry creates it.
		return patchedAfter409, w.classify(err, "read", ev)
	}
	stored := k8sevent.FromCoreV1(got)
	have, theirs := stored.Occurrences(), w.ownerOf(&stored)
	switch {
	case !theirs.matches(w.ownerOf(ev)):
		w.remember(key, have, theirs) // later records of this name skip the read
		return 0, errNotOurs
	case have > count:
		w.remember(key, have, theirs)
		return stale, nil
	case have == count:
		w.remember(key, have, theirs)
		return adopted, nil
	}
	if _, err := w.sink.patch(ctx, ev); err != nil {
		// A 404 here: it expired since the read; the retry creates it.
		return patchedAfter409, w.classify(err, "patch", ev)
	}
	w.remember(key, count, theirs)
	return patchedAfter409, nil
}

// writeTrusting403 is write, with a 403 believed only when RBAC explains
// it. One that is starting serves requests before its RBAC informers
// have synced and answers 403 to writes it allows a moment later;
// meanwhile its /readyz answers 403 itself (RBAC does not place the caller
// yet), then fails its checks until start-up is done. A ready server also
// answers 403 to what RBAC allows: a ResourceQuota on Events exceeded
// until old ones expire, an admission webhook that denies for a while, a
// load balancer's other member that is still starting. So on a 403 the
// writer reads /readyz: not ready (or unreadable), the 403 is returned as
// retryable and retry_on_failure's backoff tries the record again; ready,
// the record is written once more at once, and on a second 403 the writer
// asks the API server whether RBAC lets it write Events in the namespace
// (SelfSubjectAccessReview, which every authenticated user may create):
// denied, it is an RBAC gap, dropped for good (errForbidden) in this one
// attempt, so a namespace the exporter may not write holds its lane for
// no backoff; allowed (or unanswered), the 403 is retried like any other
// failure: a record the exporter may write is never dropped for a denial
// that passes.
func (w *writer) writeTrusting403(ctx context.Context, ev *k8sevent.Event) (outcome, error) {
	prepared := *ev
	out, err := w.write(ctx, ev)
	if !apierrors.IsForbidden(err) {
		return out, err
	}
	if _, rerr := w.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); rerr != nil {
		return out, fmt.Errorf("%w (the API server is not ready: %v)", err, rerr)
	}
	*ev = prepared // the second try starts from the prepared record, as a retry does
	out, err = w.write(ctx, ev)
	if !apierrors.IsForbidden(err) {
		return out, err
	}
	gap, rerr := w.rbacGap(ctx, ev.ObjectNamespace())
	switch {
	case rerr != nil:
		return out, fmt.Errorf("%w (RBAC could not be asked: %v)", err, rerr)
	case gap != "":
		return out, consumererror.NewPermanent(fmt.Errorf("%w (%s denied): %w", errForbidden, gap, err))
	}
	return out, fmt.Errorf("%w (RBAC allows the write: a quota, an admission webhook or a server still starting)", err)
}

// rbacGap asks whether RBAC lets this exporter create and patch Events in
// namespace through the API it writes; it names the verb RBAC denies, or
// "" when it allows both.
func (w *writer) rbacGap(ctx context.Context, namespace string) (string, error) {
	group := ""
	if w.sink.api() == k8sevent.APIEventsV1 {
		group = "events.k8s.io"
	}
	for _, verb := range []string{"create", "patch"} {
		review, err := w.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Group: group, Resource: "events"}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("self subject access review of %s events in %s: %w", verb, namespace, err)
		}
		if !review.Status.Allowed {
			return verb, nil
		}
	}
	return "", nil
}

// classify decides what a failed request means: retry later (honouring
// Retry-After on 429), or drop for good. Only a create's 404 is permanent
// (the namespace is gone); a patch's or a read's 404 means the object
// expired, and the retry creates it. A 403 is left to writeTrusting403.
func (w *writer) classify(err error, verb string, ev *k8sevent.Event) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s event %s/%s: %w", verb, ev.ObjectNamespace(), ev.Name, err)
	switch {
	case apierrors.IsTooManyRequests(err):
		if delay, ok := apierrors.SuggestsClientDelay(err); ok && delay > 0 {
			return retry.Throttled(err, time.Duration(delay)*time.Second)
		}
		return err // retry_on_failure's exponential backoff
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err), tooLarge(err),
		apierrors.IsNotFound(err) && verb == "create", apierrors.IsMethodNotSupported(err):
		return consumererror.NewPermanent(err)
	}
	return err // 5xx, timeouts, connection refused: retried
}
