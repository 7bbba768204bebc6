package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Why a record is refused (the refused_records metric's reason).
const (
	reasonForbidden   = "forbidden"
	reasonInvalid     = "invalid"
	reasonNoNamespace = "no_namespace"
	reasonNamespaces  = "too_many_namespaces"
)

// Why a request is refused whole before its records are read (the
// refused_requests metric's reason).
const (
	reasonNoToken = "no_token"
	reasonTooDeep = "too_deep"
)

// maxNamedNamespaces: forbidden namespaces named in a partial success
// message at most.
const maxNamedNamespaces = 3

// refusals are one request's records refused for good.
type refusals struct {
	client      string
	forbidden   int
	invalid     int
	noNamespace int      // in a namespace that does not exist
	overCap     int      // in namespaces past max_namespaces_per_request
	namespaces  []string // forbidden ones, at most maxNamedNamespaces
}

func (r *refusals) count() int { return r.forbidden + r.invalid + r.noNamespace + r.overCap }

// message is the partial success's error_message: what was refused, why.
func (r *refusals) message(total int) string {
	var parts []string
	if r.forbidden > 0 {
		parts = append(parts, fmt.Sprintf("%d forbidden (%s may not create events in namespace %s)",
			r.forbidden, r.client, strings.Join(r.namespaces, ", ")))
	}
	if r.invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d invalid (no Kubernetes Event that could be written)", r.invalid))
	}
	if r.noNamespace > 0 {
		parts = append(parts, fmt.Sprintf("%d in a namespace that does not exist", r.noNamespace))
	}
	if r.overCap > 0 {
		parts = append(parts, fmt.Sprintf("%d in namespaces past the request's first max_namespaces_per_request", r.overCap))
	}
	return fmt.Sprintf("k8seventsotlp: %d of %d records refused: %s", r.count(), total, strings.Join(parts, "; "))
}

// consume takes one request's records: the caller's identity, its budget,
// each record's namespace authorized for it; the records it may write are
// passed on re-encoded from their Events (see forward), the others
// answered in refusals. An error refuses the whole request (a gRPC
// status): nothing was passed on.
func (r *otlpReceiver) consume(ctx context.Context, ld plog.Logs) (refusals, error) {
	id, ok := k8sauth.FromAuth(client.FromContext(ctx).Auth)
	if !ok {
		return refusals{}, status.Error(codes.Unauthenticated, "k8seventsotlp: the request carries no Kubernetes identity (set auth on the protocol)")
	}
	out := refusals{client: id.Username}
	total := ld.LogRecordCount()
	if total == 0 {
		return out, nil
	}
	records := decodeRecords(ld)
	r.screen(records)
	namespaces := namespacesOf(records)
	key := identityKey(&id)
	// Each review not answered from the cache is charged too: a client
	// naming namespaces it is not known in pays for the reviews it costs.
	cost := total + r.access.uncached(key, namespaces)*r.cfg.PerClient.ReviewCost
	if wait, ok := r.budgets.take(id.Username, cost, r.now()); !ok {
		r.telemetry.ReceiverK8seventsotlpThrottledRequests.Add(ctx, 1)
		return out, throttled(wait)
	}
	allowed, err := r.authorize(ctx, &id, key, namespaces)
	if err != nil {
		r.budgets.give(id.Username, cost) // the sender retries it: charged then
		return out, status.Error(codes.Unavailable, "k8seventsotlp: cannot authorize the records now: "+err.Error())
	}
	fwd := plog.NewLogs()
	lrs := fwd.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	received := r.now()
	for i := range records {
		rec := &records[i]
		switch {
		case rec.refusal == reasonInvalid:
			out.invalid++
		case rec.refusal == reasonNoNamespace:
			out.noNamespace++
		case rec.refusal == reasonNamespaces:
			out.overCap++
		case !allowed[rec.ns]:
			out.forbidden++
			if len(out.namespaces) < maxNamedNamespaces && !slices.Contains(out.namespaces, rec.ns) {
				out.namespaces = append(out.namespaces, rec.ns)
			}
		default:
			r.forward(rec, id.Username, received, lrs.AppendEmpty())
		}
	}
	if lrs.Len() > 0 {
		if err := r.next.ConsumeLogs(ctx, fwd); err != nil {
			// The sender retries the whole request: its refusals are
			// counted, and its budget charged, when it is taken.
			r.budgets.give(id.Username, cost)
			return out, nextError(err)
		}
	}
	r.countRefused(ctx, reasonForbidden, out.forbidden)
	r.countRefused(ctx, reasonInvalid, out.invalid)
	r.countRefused(ctx, reasonNoNamespace, out.noNamespace)
	r.countRefused(ctx, reasonNamespaces, out.overCap)
	return out, nil
}

// record is one record's Event as decoded, the namespace an exporter
// would write it in ("": no Event, or one that cannot be made valid), and
// why it is refused before any review ("": it is not).
type record struct {
	ev      k8sevent.Event
	ns      string
	refusal string
}

// screen refuses, before any review, the records that cannot be written
// (invalid), those in a namespace that does not exist, and those in
// namespaces past the request's first max_namespaces_per_request.
func (r *otlpReceiver) screen(records []record) {
	seen := map[string]bool{}
	for i := range records {
		rec := &records[i]
		switch {
		case rec.ns == "":
			rec.refusal = reasonInvalid
		case seen[rec.ns]:
		case r.namespaces.missing(rec.ns):
			rec.refusal = reasonNoNamespace
		case len(seen) >= r.cfg.MaxNamespacesPerRequest:
			rec.refusal = reasonNamespaces
		default:
			seen[rec.ns] = true
		}
	}
}

// decodeRecords decodes each record of ld, in order.
func decodeRecords(ld plog.Logs) []record {
	out := make([]record, 0, ld.LogRecordCount())
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				var rec record
				var found bool
				rec.ev, _, found = k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
				if found {
					rec.ns = eventNamespace(rec.ev)
				}
				out = append(out, rec)
			}
		}
	}
	return out
}

// namespacesOf is the distinct namespaces of the records not refused, in
// their order (at most max_namespaces_per_request).
func namespacesOf(records []record) []string {
	var out []string
	for i := range records {
		if ns := records[i].ns; records[i].refusal == "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// eventNamespace is the namespace an exporter writes ev in: the
// k8sevents exporter repairs a record with k8sevent.Sanitize first, as
// here, and writes it in its ObjectNamespace. "": an Event that cannot be
// made valid.
func eventNamespace(ev k8sevent.Event) string {
	if _, fatal := k8sevent.Sanitize(&ev, time.Time{}); fatal != 0 {
		return ""
	}
	return ev.ObjectNamespace()
}

// authorize asks, for each distinct namespace, whether id may create
// Events there, within the configured timeout.
func (r *otlpReceiver) authorize(ctx context.Context, id *k8sauth.Identity, key string, namespaces []string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	allowed := map[string]bool{}
	for _, ns := range namespaces {
		if _, done := allowed[ns]; done || ns == "" {
			continue
		}
		ok, err := r.access.mayCreate(ctx, id, key, ns)
		if err != nil {
			return nil, err
		}
		allowed[ns] = ok
	}
	return allowed, nil
}

func (r *otlpReceiver) refusedRequest(ctx context.Context, reason string) {
	r.telemetry.ReceiverK8seventsotlpRefusedRequests.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
}

func (r *otlpReceiver) countRefused(ctx context.Context, reason string, n int) {
	if n > 0 {
		r.telemetry.ReceiverK8seventsotlpRefusedRecords.Add(ctx, int64(n), metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
	}
}

// throttled is the retryable refusal of a client over its budget, with
// the time to wait (RetryInfo: OTLP exporters retry ResourceExhausted only
// with it; HTTP answers it as Retry-After).
func throttled(wait time.Duration) error {
	st := status.New(codes.ResourceExhausted, fmt.Sprintf("k8seventsotlp: this client is over its budget of records (per_client); retry in %s", wait.Round(time.Millisecond)))
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}); err == nil {
		st = withInfo
	}
	return st.Err()
}

// retryAfter is the Retry-After of a status, in whole seconds, at least 1;
// 0 when it has no RetryInfo.
func retryAfter(st *status.Status) int {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return max(1, int(math.Ceil(ri.GetRetryDelay().AsDuration().Seconds())))
		}
	}
	return 0
}

// nextError is the status of the next consumer's refusal: retryable
// unless it is permanent, as the otlp receiver answers it.
func nextError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if consumererror.IsPermanent(err) {
		return status.Error(codes.Internal, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}
