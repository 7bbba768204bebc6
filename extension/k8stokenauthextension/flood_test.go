package k8stokenauthextension

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// from is a request context from address ip, as the servers give it.
func from(ip string) context.Context {
	return client.NewContext(context.Background(), client.Info{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}})
}

func sha256Of(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// validToken is a token of a/app for the audience (tokenFor) once the API server
// accepts it: one that has just started may review a new ServiceAccount's
// token before its caches hold it. Asked as the admin, so that the
// authenticator under test has neither a denial cached nor a failure
// charged.
func (r *rig) validToken(t *testing.T) string {
	t.Helper()
	return r.validTokenFor(t, "a", "app", audience)
}

// validTokenFor is validToken for ServiceAccount ns/name and aud.
func (r *rig) validTokenFor(t *testing.T, ns, name, aud string) string {
	t.Helper()
	token := r.srv.ServiceAccountToken(t, ns, name, time.Hour, aud)
	require.Eventually(t, func() bool {
		tr, err := r.srv.Clientset().AuthenticationV1().TokenReviews().Create(context.Background(),
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{aud}}}, metav1.CreateOptions{})
		return err == nil && tr.Status.Authenticated
	}, 30*time.Second, 50*time.Millisecond, "the API server accepts the token")
	return token
}

func authenticateFrom(ctx context.Context, a *authenticator, token string) codes.Code {
	_, err := a.Authenticate(ctx, bearer(token))
	return status.Code(err)
}

// TestAuthRandomTokenFloodSparesKnownClients: new tokens may cost 2
// TokenReviews per second. A client's token was accepted, and its cached
// answer has run out. Then 1,000 random bearer values cost no review at
// all; 60 forged tokens of the right shape, audience and exp, each from
// an address of its own, fill the new tokens' budget; meanwhile the
// client's token is reviewed again through the budget of tokens accepted
// before and its request goes through at once.
func TestAuthRandomTokenFloodSparesKnownClients(t *testing.T) {
	r := newRig(t, func(c *Config) { c.QPS, c.Burst, c.Timeout = 2, 2, 3*time.Second })
	good := r.validToken(t)
	require.Equal(t, codes.OK, authenticateFrom(from("10.0.0.1"), r.auth, good))
	r.clock.add(createDefaultConfig().Cache.AllowTTL) // its cached answer runs out
	reviewed := func() int64 {
		return counter(r.tel, reviews, "outcome", "authenticated") + counter(r.tel, reviews, "outcome", "unauthenticated") +
			counter(r.tel, reviews, "outcome", "error")
	}

	random := make([]byte, 32)
	for range 1000 {
		_, _ = rand.Read(random)
		require.Equal(t, codes.Unauthenticated, authenticateFrom(from("10.0.0.2"), r.auth, hex.EncodeToString(random)))
	}
	assert.Equal(t, int64(1), reviewed(), "random values: refused without a review")

	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			ip := net.IPv4(10, 1, byte(i/250), byte(i%250+1)).String()
			code := authenticateFrom(from(ip), r.auth, forgedToken(r.clock.now().Add(time.Hour), audience, i))
			assert.Contains(t, []codes.Code{codes.Unauthenticated, codes.Unavailable}, code)
		})
	}
	require.Eventually(t, func() bool { return reviewed() >= 3 }, 10*time.Second, 10*time.Millisecond, "the flood spends the new tokens' budget: %d %d %d %d", reviewed(), counter(r.tel, refusals, "reason", reasonInvalid), counter(r.tel, refusals, "reason", reasonThrottled), counter(r.tel, refusals, "reason", reasonUnavailable))
	start := time.Now()
	assert.Equal(t, codes.OK, authenticateFrom(from("10.0.0.1"), r.auth, good), "the client's token, reviewed again during the flood")
	took := time.Since(start)
	t.Logf("known token reviewed again in %v during the flood", took)
	assert.Less(t, took, 2*time.Second, "not queued behind the flood's reviews")
	wg.Wait()

}

// TestFailedAuthenticationsLimitedPerSource: forged tokens from one
// address cost TokenReviews up to its failure budget (per_source::burst);
// past it they are refused without one, counted as throttled, while
// another address and a token accepted before are not held back.
func TestFailedAuthenticationsLimitedPerSource(t *testing.T) {
	r := newRig(t, nil)
	good := r.validToken(t)
	require.Equal(t, codes.OK, authenticateFrom(from("10.9.9.9"), r.auth, good))
	budget := createDefaultConfig().PerSource.Burst
	for i := range budget + 20 {
		require.Equal(t, codes.Unauthenticated, authenticateFrom(from("10.9.9.9"), r.auth, forgedToken(r.clock.now().Add(time.Hour), audience, i)))
	}
	assert.Equal(t, int64(budget), counter(r.tel, reviews, "outcome", "unauthenticated"), "reviews up to the source's budget")
	assert.Equal(t, int64(20), counter(r.tel, refusals, "reason", reasonThrottled), "the rest refused unreviewed")
	r.clock.add(createDefaultConfig().Cache.AllowTTL)
	assert.Equal(t, codes.OK, authenticateFrom(from("10.9.9.9"), r.auth, good), "a token accepted before, from the same address")
	assert.Equal(t, codes.Unauthenticated, authenticateFrom(from("10.8.8.8"), r.auth, forgedToken(r.clock.now().Add(time.Hour), audience, 999)))
	assert.Equal(t, int64(budget+1), counter(r.tel, reviews, "outcome", "unauthenticated"), "another address has its own budget")
}

// TestKnownTokenRenewedBeforeItsAnswerRunsOut: a token in use less than
// renew::before before its cached answer runs out is reviewed again in
// the background; once that answer is in, a request past the old
// deadline is answered from the cache, without a review of its own.
func TestKnownTokenRenewedBeforeItsAnswerRunsOut(t *testing.T) {
	r := newRig(t, nil)
	cfg := createDefaultConfig()
	good := r.validToken(t)
	require.Equal(t, codes.OK, authenticateFrom(from("10.0.0.1"), r.auth, good))
	r.clock.add(cfg.Cache.AllowTTL - cfg.Renew.Before/2)
	require.Equal(t, codes.OK, authenticateFrom(from("10.0.0.1"), r.auth, good), "from the cache; renewal started")
	require.Eventually(t, func() bool { return counter(r.tel, reviews, "outcome", "authenticated") == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { _, ok := r.auth.cache.Until(sha256Of(good)); return ok }, 10*time.Second, 10*time.Millisecond)
	r.clock.add(cfg.Renew.Before)
	require.Equal(t, codes.OK, authenticateFrom(from("10.0.0.1"), r.auth, good), "past the first answer's deadline")
	until, ok := r.auth.cache.Until(sha256Of(good))
	require.True(t, ok)
	assert.True(t, until.After(r.clock.now()), "the renewed answer")
	assert.Equal(t, int64(2), counter(r.tel, reviews, "outcome", "authenticated"), "no review in the request's path")
}
