package k8seventsotlpreceiver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/reviewcache"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver/internal/metadata"
)

// TestExactDenialJustBeforeReadyIsAskedAgain: an API server whose
// RoleBindings have not synced denies a review that a RoleBinding allows,
// then syncs and says it is ready before the receiver asks. Believed, that
// denial would refuse the client's records for good and be cached; asked
// again of the server that said it is ready, the answer allows them.
func TestExactDenialJustBeforeReadyIsAskedAgain(t *testing.T) {
	const user = "system:serviceaccount:shop:web"
	srv := apimodel.New(apimodel.Options{})
	srv.AddUser("collector-token", "collector", "system:masters")
	srv.CreateNamespace("shop")
	srv.Allow(user, []string{"create"}, "", "events", "shop")
	srv.SetRoleBindingsSynced(false)

	cfg := srv.RESTConfig("collector-token")
	var once sync.Once
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if strings.HasSuffix(req.URL.Path, "/subjectaccessreviews") {
				once.Do(func() { srv.SetRoleBindingsSynced(true) }) // synced right after its first answer
			}
			return resp, err
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	tb, err := metadata.NewTelemetryBuilder(componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	a := newAccess(cs, reviewcache.Config{MaxEntries: 10, AllowTTL: time.Minute, DenyTTL: time.Minute}, 10*time.Second, tb, time.Now)

	id := &k8sauth.Identity{Username: user, UID: "web", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	allowed, err := a.mayCreate(context.Background(), id, identityKey(id), "shop")
	require.NoError(t, err)
	require.True(t, allowed, "the answer of the server once ready")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
