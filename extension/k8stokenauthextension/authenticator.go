package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/reviewcache"
)

// Refusal reasons (the refusals metric's reason attribute).
const (
	reasonMissing     = "missing"
	reasonInvalid     = "invalid"
	reasonUnavailable = "unavailable"
)

// verdict is what the API server answered of one token: the identity, or
// nil for a token it does not authenticate.
type verdict struct{ id *k8sauth.Identity }

type authenticator struct {
	cfg       *Config
	telemetry *metadata.TelemetryBuilder
	cache     *reviewcache.Cache[[sha256.Size]byte, verdict]
	now       func() time.Time
	client    kubernetes.Interface // set by Start
}

var (
	_ extension.Extension  = (*authenticator)(nil)
	_ extensionauth.Server = (*authenticator)(nil)
)

func newAuthenticator(set extension.Settings, cfg *Config) (*authenticator, error) {
	return newAuthenticatorWithClock(set, cfg, time.Now)
}

// newAuthenticatorWithClock is newAuthenticator on the clock now (the
// cache's TTLs and tokens' expiry are read on it).
func newAuthenticatorWithClock(set extension.Settings, cfg *Config, now func() time.Time) (*authenticator, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("k8stokenauth telemetry: %w", err)
	}
	return &authenticator{cfg: cfg, telemetry: tb, now: now,
		cache: reviewcache.New[[sha256.Size]byte, verdict](cfg.Cache.MaxEntries, cfg.Timeout, now)}, nil
}

func (a *authenticator) Start(context.Context, component.Host) error {
	cs, err := a.cfg.Clientset(a.cfg.QPS, a.cfg.Burst)
	if err != nil {
		return fmt.Errorf("k8stokenauth: %w", err)
	}
	a.client = cs
	return nil
}

func (a *authenticator) Shutdown(context.Context) error {
	a.telemetry.Shutdown()
	return nil
}

// Authenticate accepts a request whose bearer token the API server
// authenticates for one of the audiences, and puts the identity into
// client.Info.Auth. Its errors are gRPC statuses: Unauthenticated for a
// missing or refused token, Unavailable (retryable) when the API server
// could not be asked.
func (a *authenticator) Authenticate(ctx context.Context, sources map[string][]string) (context.Context, error) {
	token, ok := bearerToken(sources)
	if !ok {
		a.refused(ctx, reasonMissing)
		return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: no bearer token (authorization: Bearer <ServiceAccount token>)")
	}
	v, _, err := a.cache.Get(ctx, sha256.Sum256([]byte(token)), func(ctx context.Context) (verdict, time.Duration, error) {
		return a.review(ctx, token)
	})
	if err != nil {
		a.refused(ctx, reasonUnavailable)
		return ctx, status.Error(codes.Unavailable, "k8stokenauth: cannot review the token now: "+err.Error())
	}
	if v.id == nil {
		a.refused(ctx, reasonInvalid)
		return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: the token is not valid for this collector (unknown, expired, revoked, or not issued for its audience)")
	}
	cl := client.FromContext(ctx)
	cl.Auth = v.id
	return client.NewContext(ctx, cl), nil
}

// review asks the API server about token (TokenReview) and says how long
// its answer holds.
func (a *authenticator) review(ctx context.Context, token string) (verdict, time.Duration, error) {
	if a.client == nil {
		return verdict{}, 0, errors.New("not started")
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: a.cfg.Audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		a.reviewed(ctx, "error")
		return verdict{}, 0, fmt.Errorf("token review: %w", err)
	}
	st := tr.Status
	// The API server answers the requested audiences the token holds;
	// none in common would be an authenticator that ignored them.
	if !st.Authenticated || st.User.Username == "" || !slices.ContainsFunc(st.Audiences, func(s string) bool { return slices.Contains(a.cfg.Audiences, s) }) {
		a.reviewed(ctx, "unauthenticated")
		return verdict{}, a.cfg.Cache.DenyTTL, nil
	}
	a.reviewed(ctx, "authenticated")
	id := &k8sauth.Identity{Username: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if len(st.User.Extra) > 0 {
		id.Extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			id.Extra[k] = v
		}
	}
	return verdict{id: id}, allowFor(token, a.now(), a.cfg.Cache.AllowTTL), nil
}

func (a *authenticator) refused(ctx context.Context, reason string) {
	a.telemetry.ExtensionK8stokenauthRefusals.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
}

func (a *authenticator) reviewed(ctx context.Context, outcome string) {
	a.telemetry.ExtensionK8stokenauthTokenReviews.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome))))
}
