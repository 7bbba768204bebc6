package k8stokenauthextension

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAuthNextTierTakesOnlyTheTierBefore: a tier that only the tier
// before it may reach lists that tier's ServiceAccount in users. Any
// other ServiceAccount's token issued for the same audience (an audience
// is no secret: any pod may have a token projected for it), however
// valid, is refused, answered from the cache when asked again, and not
// remembered as known (no renew budget); the listed one is accepted.
func TestAuthNextTierTakesOnlyTheTierBefore(t *testing.T) {
	const tierAudience = "otel-k8sevents-tier2"
	r := newRig(t, func(c *Config) {
		c.Audiences = []string{tierAudience}
		c.Users = []string{"system:serviceaccount:a:tier1"}
	})
	_, err := r.srv.Clientset().CoreV1().ServiceAccounts("a").Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tier1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tier1 := r.validTokenFor(t, "a", "tier1", tierAudience)
	intruder := r.validTokenFor(t, "a", "app", tierAudience) // valid: only users refuses it

	for range 2 {
		_, code := authenticate(t, r.auth, bearer(intruder))
		assert.Equal(t, codes.Unauthenticated, code, "a valid token of another ServiceAccount")
	}
	assert.Equal(t, int64(1), counter(r.tel, reviews, "outcome", "unauthenticated"), "the second refusal from the cache")
	assert.False(t, r.auth.known.has(sha256Of(intruder)), "not known: no renew budget")

	id, code := authenticate(t, r.auth, bearer(tier1))
	require.Equal(t, codes.OK, code)
	assert.Equal(t, "system:serviceaccount:a:tier1", id.Username)
}
