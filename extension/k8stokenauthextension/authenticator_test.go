package k8stokenauthextension

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
)

const audience = "otel-k8sevents"

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// rig is a real API server with ServiceAccount a/app, and an
// authenticator asking it, on a clock the test moves.
type rig struct {
	srv   *kubetest.Server
	clock *fakeClock
	auth  *authenticator
	tel   *componenttest.Telemetry
}

func newRig(t *testing.T, mutate func(*Config), opts ...kubetest.Option) *rig {
	srv := kubetest.Start(t, opts...)
	ctx := context.Background()
	_, err := srv.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = srv.Clientset().CoreV1().ServiceAccounts("a").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r := &rig{srv: srv, clock: &fakeClock{t: time.Now()}}
	r.auth, r.tel = r.start(t, srv.Kubeconfig(t), mutate)
	return r
}

func (r *rig) start(t *testing.T, kubeconfig string, mutate func(*Config)) (*authenticator, *componenttest.Telemetry) {
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	cfg.Timeout = 3 * time.Second
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	a, err := newAuthenticatorWithClock(set, cfg, r.clock.now)
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, a.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return a, tel
}

func bearer(token string) map[string][]string {
	return map[string][]string{"authorization": {"Bearer " + token}}
}

// authenticate runs one request, as gRPC sends it, and answers the
// identity or the status code.
func authenticate(t *testing.T, a *authenticator, sources map[string][]string) (*k8sauth.Identity, codes.Code) {
	t.Helper()
	ctx, err := a.Authenticate(context.Background(), sources)
	if err != nil {
		st, ok := status.FromError(err)
		require.True(t, ok, "a gRPC status: %v", err)
		return nil, st.Code()
	}
	id, ok := client.FromContext(ctx).Auth.(*k8sauth.Identity)
	require.True(t, ok)
	return id, codes.OK
}

func counter(tel *componenttest.Telemetry, name, attr, value string) int64 {
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key(attr)); ok && v.AsString() == value {
			return dp.Value
		}
	}
	return 0
}

const (
	refusals = "otelcol_extension_k8stokenauth_refusals"
	reviews  = "otelcol_extension_k8stokenauth_token_reviews"
)

// TestAuthenticatesServiceAccountTokens against a real API server: a
// TokenRequest token for the audience is accepted with the
// ServiceAccount's identity (what a SubjectAccessReview needs), and a
// second request with it makes no second TokenReview; refused, each
// counted by reason: no token, a Basic one, a token for another audience,
// the API server's own (admin, static) token, an expired token, garbage.
// A refused token is asked about again only after deny_ttl.
func TestAuthenticatesServiceAccountTokens(t *testing.T) {
	r := newRig(t, nil)
	good := r.validToken(t) // once the API server, just started, accepts it

	id, code := authenticate(t, r.auth, bearer(good))
	require.Equal(t, codes.OK, code)
	assert.Equal(t, "system:serviceaccount:a:app", id.Username)
	assert.NotEmpty(t, id.UID)
	assert.Contains(t, id.Groups, "system:serviceaccounts:a")
	_, code = authenticate(t, r.auth, map[string][]string{"Authorization": {"bearer " + good}}) // as HTTP sends it
	require.Equal(t, codes.OK, code)
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "authenticated"), "the second request is answered from the cache")

	for name, sources := range map[string]map[string][]string{
		"no token":     {},
		"basic":        {"authorization": {"Basic YTpi"}},
		"empty bearer": {"authorization": {"Bearer"}},
	} {
		_, code := authenticate(t, r.auth, sources)
		assert.Equal(t, codes.Unauthenticated, code, name)
	}
	assert.Equal(t, int64(3), counter(r.tel, refusals, "reason", reasonMissing))

	// Refused without a TokenReview: what cannot be a token of this
	// collector's audience, read from the token itself.
	local := map[string]string{
		"other audience": r.srv.ServiceAccountToken(t, "a", "app", time.Hour, "someone-else"),
		"api server's":   r.srv.ServiceAccountToken(t, "a", "app", time.Hour), // the API server's own audience
		"admin static":   r.srv.AdminToken(),
		"expired":        r.srv.ExpiredToken(t, good),
		"garbage":        "not-a-token",
	}
	for name, token := range local {
		_, code := authenticate(t, r.auth, bearer(token))
		assert.Equal(t, codes.Unauthenticated, code, name)
	}
	assert.Equal(t, int64(len(local)), counter(r.tel, refusals, "reason", reasonInvalid))
	assert.Zero(t, counter(r.tel, reviews, "outcome", "unauthenticated"), "none was asked about")

	// A forged token of the right shape, audience and exp is asked about,
	// refused, refused again from the cache, and asked again after deny_ttl.
	forged := forgedToken(r.clock.now().Add(time.Hour), audience, 0)
	_, code = authenticate(t, r.auth, bearer(forged))
	assert.Equal(t, codes.Unauthenticated, code)
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "unauthenticated"))
	_, code = authenticate(t, r.auth, bearer(forged))
	assert.Equal(t, codes.Unauthenticated, code)
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "unauthenticated"), "from the cache")
	r.clock.add(createDefaultConfig().Cache.DenyTTL)
	_, code = authenticate(t, r.auth, bearer(forged))
	assert.Equal(t, codes.Unauthenticated, code)
	assert.Equal(t, int64(2), counter(r.tel, reviews, "outcome", "unauthenticated"))
}

// forgedToken is a JWT of the right shape, for audience, expiring at exp,
// that no issuer signed; each of another n differs.
func forgedToken(exp time.Time, audience string, n int) string {
	return jwt(fmt.Sprintf(`{"iss":"https://kubernetes.default.svc.cluster.local","aud":[%q],"exp":%d,"sub":"system:serviceaccount:a:forged-%d"}`,
		audience, exp.Unix(), n))
}

// TestDeletedServiceAccountRefusedAfterAllowTTL: a token accepted, then
// its ServiceAccount deleted: accepted from the cache until allow_ttl,
// refused from then on (the TokenReview sees the deletion, which a
// signature check would not). The API server itself keeps accepting the
// token for a while (its own cache of authenticated tokens, 10 s by
// default): the test waits for that before it moves its clock.
func TestDeletedServiceAccountRefusedAfterAllowTTL(t *testing.T) {
	r := newRig(t, nil)
	token := r.validToken(t) // once the API server, just started, accepts it
	_, code := authenticate(t, r.auth, bearer(token))
	require.Equal(t, codes.OK, code)
	require.NoError(t, r.srv.Clientset().CoreV1().ServiceAccounts("a").Delete(context.Background(), "app", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		tr, err := r.srv.Clientset().AuthenticationV1().TokenReviews().Create(context.Background(),
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}, metav1.CreateOptions{})
		return err == nil && !tr.Status.Authenticated
	}, time.Minute, 500*time.Millisecond, "the API server refuses the token of the deleted ServiceAccount")

	r.clock.add(createDefaultConfig().Cache.AllowTTL - time.Second)
	_, code = authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.OK, code, "within allow_ttl: the cached answer")
	r.clock.add(time.Second)
	_, code = authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.Unauthenticated, code, "at allow_ttl: asked again, refused")
}

// TestAcceptedNoLongerThanTheTokenLives: a token whose exp comes before
// allow_ttl is asked about again at its exp, not at allow_ttl: a token
// that expired is never accepted from the cache. The test's clock runs
// ahead of the API server's: at its exp the token is refused as expired
// without a review.
func TestAcceptedNoLongerThanTheTokenLives(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Cache.AllowTTL = 10 * time.Minute })
	token := r.srv.ServiceAccountToken(t, "a", "app", 10*time.Minute, audience) // the shortest TokenRequest issues
	exp, ok := expiry(token)
	require.True(t, ok)
	// The clock at the token's issue: a clock behind it (the rig's, taken
	// before the token was minted) would cache the answer for allow_ttl,
	// ending before exp, and renew it near exp.
	r.clock.t = exp.Add(-10 * time.Minute)
	_, code := authenticate(t, r.auth, bearer(token))
	require.Equal(t, codes.OK, code)
	r.clock.t = exp.Add(-time.Second)
	_, code = authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.OK, code)
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "authenticated"))
	r.clock.t = exp
	_, code = authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.Unauthenticated, code, "at the token's exp")
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "authenticated")+counter(r.tel, reviews, "outcome", "unauthenticated"),
		"refused as expired without asking")
}

// TestUnreachableAPIServerIsRetryable: when the API server cannot be
// asked, the request is refused as Unavailable (an OTLP sender retries
// it), counted, and nothing is cached: the next request asks again.
func TestUnreachableAPIServerIsRetryable(t *testing.T) {
	r := newRig(t, nil, kubetest.OwnServer()) // it stops the API server
	token := r.srv.ServiceAccountToken(t, "a", "app", time.Hour, audience)
	require.NoError(t, r.srv.StopAPIServer())
	_, code := authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.Unavailable, code)
	assert.Equal(t, int64(1), counter(r.tel, refusals, "reason", reasonUnavailable))
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "error"))
	require.NoError(t, r.srv.StartAPIServer())
	_, code = authenticate(t, r.auth, bearer(token))
	assert.Equal(t, codes.OK, code)
}
