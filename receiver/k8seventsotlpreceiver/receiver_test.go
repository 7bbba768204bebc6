package k8seventsotlpreceiver

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const (
	refusedRecords    = "otelcol_receiver_k8seventsotlp_refused_records"
	throttledRequests = "otelcol_receiver_k8seventsotlp_throttled_requests"
	accessReviews     = "otelcol_receiver_k8seventsotlp_access_reviews"
	appA              = "system:serviceaccount:a:app"
)

// TestAuthorizesEachRecord, on a real API server: ServiceAccount a/app
// may create Events in namespace a only. Over gRPC, HTTP protobuf and
// HTTP JSON, a request with records for a and b passes a's on, stamped
// with the client and the configured cluster (what the record claimed of
// both removed), and answers b's in partial success, counted as
// forbidden. A record that is no Event, or one that cannot be written,
// is refused as invalid. Each (identity, namespace) is reviewed once.
func TestAuthorizesEachRecord(t *testing.T) {
	r := newRig(t)
	token := r.serviceAccount(t, "a", "app", "", "a")
	r.start(t, nil)

	claims := events("a", "b")
	for _, rl := range claims.ResourceLogs().All() {
		k8sevent.PutOrigin(rl.Resource().Attributes(), "system:serviceaccount:kube-system:kubelet", k8sevent.Cluster{Name: "west", UID: "uid-west"})
		lr := rl.ScopeLogs().At(0).LogRecords().At(0)
		k8sevent.PutOrigin(lr.Attributes(), "system:serviceaccount:kube-system:kubelet", k8sevent.Cluster{Name: "west"})
	}
	resp, err := r.exportGRPC(t, token, claims)
	require.NoError(t, err)
	assert.Equal(t, int64(1), resp.PartialSuccess().RejectedLogRecords())
	assert.Contains(t, resp.PartialSuccess().ErrorMessage(), "1 forbidden ("+appA+" may not create events in namespace b)")
	assert.Equal(t, []string{"a " + appA + " east/uid-east"}, r.received())

	for _, json := range []bool{false, true} {
		code, resp, _ := r.exportHTTP(t, token, events("b", "a", "b"), json)
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, int64(2), resp.PartialSuccess().RejectedLogRecords(), "json %v", json)
	}
	assert.Len(t, r.received(), 3)
	assert.Equal(t, int64(5), r.counter(refusedRecords, "reason", reasonForbidden))
	assert.Equal(t, int64(1), r.counter(accessReviews, "outcome", "allowed"), "a: once")
	assert.Equal(t, int64(4), r.counter(accessReviews, "outcome", "denied"), "b: per API group, once before /readyz and once after")

	notAnEvent := plog.NewLogs()
	notAnEvent.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("a plain log")
	noReason := events("a")
	noReason.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().Remove(k8sevent.AttrReason)
	for name, ld := range map[string]plog.Logs{"not an event": notAnEvent, "no reason": noReason} {
		resp, err := r.exportGRPC(t, token, ld)
		require.NoError(t, err, name)
		assert.Equal(t, int64(1), resp.PartialSuccess().RejectedLogRecords(), name)
		assert.Contains(t, resp.PartialSuccess().ErrorMessage(), "1 invalid", name)
	}
	assert.Equal(t, int64(2), r.counter(refusedRecords, "reason", reasonInvalid))
	assert.Len(t, r.received(), 3, "nothing more passed on")
}

// TestRefusesUnauthenticated: no token, or one the API server does not
// authenticate for the audience: gRPC Unauthenticated, HTTP 401, nothing
// passed on.
func TestRefusesUnauthenticated(t *testing.T) {
	r := newRig(t)
	r.serviceAccount(t, "a", "app", "", "a")
	wrongAudience := r.srv.ServiceAccountToken(t, "a", "app", time.Hour, "someone-else")
	r.start(t, nil)
	for name, token := range map[string]string{"no token": "", "wrong audience": wrongAudience} {
		_, err := r.exportGRPC(t, token, events("a"))
		assert.Equal(t, codes.Unauthenticated, status.Code(err), name)
		code, _, _ := r.exportHTTP(t, token, events("a"), false)
		assert.Equal(t, http.StatusUnauthorized, code, name)
	}
	assert.Empty(t, r.received())
}

// TestEitherEventsAPIGroupAllows: a ServiceAccount allowed to create
// events only in events.k8s.io has its records passed on (both groups
// write the same objects), and one allowed in neither does not.
func TestEitherEventsAPIGroupAllows(t *testing.T) {
	r := newRig(t)
	eventsV1 := r.serviceAccount(t, "a", "recorder", "events.k8s.io", "a")
	none := r.serviceAccount(t, "a", "nobody", "")
	r.start(t, nil)
	resp, err := r.exportGRPC(t, eventsV1, events("a"))
	require.NoError(t, err)
	assert.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	resp, err = r.exportGRPC(t, none, events("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), resp.PartialSuccess().RejectedLogRecords())
	assert.Equal(t, []string{"a system:serviceaccount:a:recorder east/uid-east"}, r.received())
}

// TestRoleGrantedLaterTakesEffectAfterDenyTTL: records refused while the
// ServiceAccount has no Role; after it is granted, still refused from the
// cache until deny_ttl, passed on from then; revoked, passed on until
// allow_ttl, refused from then.
func TestRoleGrantedLaterTakesEffectAfterDenyTTL(t *testing.T) {
	r := newRig(t)
	token := r.serviceAccount(t, "a", "app", "")
	r.start(t, nil)
	rejected := func() int64 {
		t.Helper()
		resp, err := r.exportGRPC(t, token, events("a"))
		require.NoError(t, err)
		return resp.PartialSuccess().RejectedLogRecords()
	}
	require.Equal(t, int64(1), rejected())
	r.grant(t, "a", "a", "app", "")
	cfg := createDefaultConfig().Cache
	r.clock.add(cfg.DenyTTL - time.Second)
	assert.Equal(t, int64(1), rejected(), "within deny_ttl: the cached answer")
	r.clock.add(time.Second)
	assert.Zero(t, rejected(), "at deny_ttl: asked again, allowed")

	ctx := context.Background()
	require.NoError(t, r.srv.Clientset().RbacV1().RoleBindings("a").Delete(ctx, "events-a-app", metav1.DeleteOptions{}))
	r.clock.add(cfg.AllowTTL - time.Second)
	assert.Zero(t, rejected(), "within allow_ttl: the cached answer")
	r.clock.add(time.Second)
	assert.Equal(t, int64(1), rejected(), "at allow_ttl: asked again, denied")
}

// TestPerClientBudget: a client over its budget is refused whole, as
// retryable, with the time to wait (gRPC ResourceExhausted with
// RetryInfo, HTTP 429 with Retry-After), counted; another client's budget
// is its own; the budget refills at its rate.
func TestPerClientBudget(t *testing.T) {
	r := newRig(t)
	flooder := r.serviceAccount(t, "a", "app", "", "a")
	other := r.serviceAccount(t, "b", "app", "", "b")
	r.start(t, func(c *Config) { c.PerClient.RecordsPerSecond, c.PerClient.Burst, c.PerClient.ReviewCost = 1, 3, 0 })
	resp, err := r.exportGRPC(t, flooder, events("a", "a", "a"))
	require.NoError(t, err)
	require.Zero(t, resp.PartialSuccess().RejectedLogRecords())

	_, err = r.exportGRPC(t, flooder, events("a"))
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	var info *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			info = ri
		}
	}
	require.NotNil(t, info, "RetryInfo: OTLP senders retry ResourceExhausted only with it")
	assert.InDelta(t, time.Second, info.GetRetryDelay().AsDuration(), float64(10*time.Millisecond))
	code, _, header := r.exportHTTP(t, flooder, events("a"), false)
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Equal(t, "1", header.Get("Retry-After"))
	assert.Equal(t, int64(2), r.counter(throttledRequests, "", ""))

	resp, err = r.exportGRPC(t, other, events("b", "b", "b"))
	require.NoError(t, err, "another client's budget is its own")
	assert.Zero(t, resp.PartialSuccess().RejectedLogRecords())

	r.clock.add(time.Second)
	_, err = r.exportGRPC(t, flooder, events("a"))
	require.NoError(t, err, "refilled at 1 record/s")
	_, err = r.exportGRPC(t, flooder, events(slices.Repeat([]string{"a"}, 10)...))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "more than the burst needs a full bucket")
	r.clock.add(3 * time.Second)
	_, err = r.exportGRPC(t, flooder, events(slices.Repeat([]string{"a"}, 10)...))
	require.NoError(t, err, "with a full bucket, a request over the burst goes through")
	assert.Len(t, r.received(), 3+3+1+10)
}

// TestAPIServerUnavailableIsRetryable: when the API server cannot answer
// the SubjectAccessReview, the request is refused whole as retryable
// (gRPC Unavailable, HTTP 503), nothing passed on; once it is back, the
// same request goes through.
func TestAPIServerUnavailableIsRetryable(t *testing.T) {
	// It stops the API server, which closes the receiver's watch of
	// namespaces at once rather than waiting for it to end.
	r := newRig(t, kubetest.OwnServer(), kubetest.WithAPIServerFlags("--shutdown-watch-termination-grace-period=1s"))
	token := r.serviceAccount(t, "a", "app", "", "a")
	r.start(t, func(c *Config) { c.Timeout = 2 * time.Second })
	_, err := r.exportGRPC(t, token, events("b")) // the token is now cached by the authenticator
	require.NoError(t, err)
	require.NoError(t, r.srv.StopAPIServer())
	_, err = r.exportGRPC(t, token, events("a"))
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	code, _, _ := r.exportHTTP(t, token, events("a"), true)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Empty(t, r.received())
	require.NoError(t, r.srv.StartAPIServer())
	resp, err := r.exportGRPC(t, token, events("a"))
	require.NoError(t, err)
	assert.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	assert.Len(t, r.received(), 1)
	assert.Positive(t, r.counter(accessReviews, "outcome", "error"))
}

// TestNextConsumerRefusalIsRetryable: when the pipeline refuses a request's
// allowed records (a full queue, memory_limiter), the whole request is
// refused as retryable (gRPC Unavailable, HTTP 503) and its refusals are
// not counted yet; when the sender retries, the allowed records go on
// once and the refused ones are counted once.
func TestNextConsumerRefusalIsRetryable(t *testing.T) {
	r := newRig(t)
	token := r.serviceAccount(t, "a", "app", "", "a")
	r.start(t, nil)
	r.refuseNext.Store(2)
	_, err := r.exportGRPC(t, token, events("a", "b"))
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	code, _, _ := r.exportHTTP(t, token, events("a", "b"), false)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Empty(t, r.received())
	assert.Zero(t, r.counter(refusedRecords, "reason", reasonForbidden), "not counted before the request is taken")

	resp, err := r.exportGRPC(t, token, events("a", "b"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), resp.PartialSuccess().RejectedLogRecords())
	assert.Equal(t, []string{"a " + appA + " east/uid-east"}, r.received(), "the allowed record, once")
	assert.Equal(t, int64(1), r.counter(refusedRecords, "reason", reasonForbidden), "the refused record, once")
}

// TestExactRetryableRefusalsAreNotCharged: a request refused as
// retryable (here the pipeline refused it) costs its client no budget:
// a sender retrying through an outage would otherwise drain its own
// budget with the retries and be throttled, and a sender that retries
// for a bounded time would drop the batch. Only the request taken is
// charged.
func TestExactRetryableRefusalsAreNotCharged(t *testing.T) {
	r := newRig(t)
	token := r.serviceAccount(t, "a", "app", "", "a")
	r.start(t, func(c *Config) { c.PerClient.RecordsPerSecond, c.PerClient.Burst, c.PerClient.ReviewCost = 1, 2, 0 })
	r.refuseNext.Store(5)
	for i := range 5 {
		_, err := r.exportGRPC(t, token, events("a", "a"))
		require.Equal(t, codes.Unavailable, status.Code(err), "attempt %d: %v", i, err)
	}
	_, err := r.exportGRPC(t, token, events("a", "a"))
	require.NoError(t, err, "the retry that is taken finds the budget untouched")
	assert.Len(t, r.received(), 2)
	assert.Zero(t, r.counter(throttledRequests, "", ""))
}

// TestTimelessRecordsAreStampedWhenReceived: a record that came without
// any time is passed on with the time its request was received, so two
// requests of the same timeless record are two batches, not one and its
// resend; a record with a time keeps it.
func TestTimelessRecordsAreStampedWhenReceived(t *testing.T) {
	r := newRig(t)
	token := r.serviceAccount(t, "a", "app", "", "a")
	r.start(t, nil)

	timeless := func() plog.Logs {
		ld := events("a")
		ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).SetTimestamp(0)
		return ld
	}
	for range 2 {
		_, err := r.exportGRPC(t, token, timeless())
		require.NoError(t, err)
		r.clock.add(time.Nanosecond)
	}
	timed := events("a")
	at := timed.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Timestamp()
	_, err := r.exportGRPC(t, token, timed)
	require.NoError(t, err)

	var stamps []pcommon.Timestamp
	for _, ld := range r.sink.AllLogs() {
		stamps = append(stamps, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Timestamp())
	}
	require.Len(t, stamps, 3)
	assert.NotZero(t, stamps[0])
	assert.NotEqual(t, stamps[0], stamps[1], "two requests of one timeless record: two times")
	assert.Equal(t, at, stamps[2], "a record's own time is kept")
}
