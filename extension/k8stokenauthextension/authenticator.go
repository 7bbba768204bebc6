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
	reasonThrottled   = "throttled"
)

// verdict is what the API server answered of one token: the identity, or
// nil for a token it does not authenticate.
type verdict struct{ id *k8sauth.Identity }

type authenticator struct {
	cfg       *Config
	telemetry *metadata.TelemetryBuilder
	cache     *reviewcache.Cache[[sha256.Size]byte, verdict]
	known     *knownTokens
	failures  *failures
	now       func() time.Time
	// client reviews tokens not accepted before, renewClient those that
	// were: each with its own client-side rate limit (set by Start).
	client, renewClient kubernetes.Interface
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
		cache:    reviewcache.New[[sha256.Size]byte, verdict](cfg.Cache.MaxEntries, cfg.Timeout, now),
		known:    newKnownTokens(cfg.Cache.MaxEntries, now),
		failures: newFailures(cfg.PerSource, now)}, nil
}

func (a *authenticator) Start(context.Context, component.Host) error {
	cs, err := a.cfg.Clientset(a.cfg.QPS, a.cfg.Burst)
	if err != nil {
		return fmt.Errorf("k8stokenauth: %w", err)
	}
	renew, err := a.cfg.Clientset(a.cfg.Renew.QPS, a.cfg.Renew.Burst)
	if err != nil {
		return fmt.Errorf("k8stokenauth: %w", err)
	}
	a.client, a.renewClient = cs, renew
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
//
// A token not accepted before is first checked locally (checkLocally)
// and its source's failures counted (failures): neither a random value
// nor a flood of forged ones costs a TokenReview past its source's
// budget. A token accepted before is reviewed again through a budget of
// its own (renew), in the background before its answer runs out.
func (a *authenticator) Authenticate(ctx context.Context, sources map[string][]string) (context.Context, error) {
	token, ok := bearerToken(sources)
	if !ok {
		a.refused(ctx, reasonMissing)
		return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: no bearer token (authorization: Bearer <ServiceAccount token>)")
	}
	key := sha256.Sum256([]byte(token))
	known, source := a.known.has(key), sourceOf(ctx)
	if !known {
		if a.failures.exhausted(source) {
			a.refused(ctx, reasonThrottled)
			return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: too many failed authentications from this address; try again later")
		}
		if err := checkLocally(token, a.cfg.Audiences, a.cfg.Issuers, a.now()); err != nil {
			a.failures.charge(source)
			a.refused(ctx, reasonInvalid)
			return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: the token is not valid for this collector: "+err.Error())
		}
	}
	v, hit, err := a.cache.Get(ctx, key, a.reviewer(token, known))
	if err != nil {
		a.refused(ctx, reasonUnavailable)
		return ctx, status.Error(codes.Unavailable, "k8stokenauth: cannot review the token now: "+err.Error())
	}
	if v.id == nil {
		if !known {
			a.failures.charge(source)
		}
		a.refused(ctx, reasonInvalid)
		return ctx, status.Error(codes.Unauthenticated, "k8stokenauth: the token is not valid for this collector (unknown, expired, revoked, or not issued for its audience)")
	}
	if hit && known {
		a.renewSoon(ctx, key, token)
	}
	cl := client.FromContext(ctx)
	cl.Auth = v.id
	return client.NewContext(ctx, cl), nil
}

// renewSoon has a token in use reviewed again in the background once its
// cached answer has less than renew::before left, unless the token itself
// expires by then.
func (a *authenticator) renewSoon(ctx context.Context, key [sha256.Size]byte, token string) {
	until, ok := a.cache.Until(key)
	if !ok || until.Sub(a.now()) >= a.cfg.Renew.Before {
		return
	}
	if exp, ok := expiry(token); ok && !exp.After(until) {
		return
	}
	a.cache.Refresh(ctx, key, a.reviewer(token, true))
}

// reviewer is the review of token, through the renewal budget for a token
// accepted before.
func (a *authenticator) reviewer(token string, renew bool) reviewcache.Review[verdict] {
	cs := a.client
	if renew {
		cs = a.renewClient
	}
	return func(ctx context.Context) (verdict, time.Duration, error) {
		return a.review(ctx, cs, token)
	}
}

// review asks the API server about token (TokenReview) and says how long
// its answer holds; an accepted token is remembered as known until it
// expires.
func (a *authenticator) review(ctx context.Context, cs kubernetes.Interface, token string) (verdict, time.Duration, error) {
	if cs == nil {
		return verdict{}, 0, errors.New("not started")
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: a.cfg.Audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		a.reviewed(ctx, "error")
		return verdict{}, 0, fmt.Errorf("token review: %w", err)
	}
	st := tr.Status
	// The API server answers the requested audiences the token holds;
	// none in common would be an authenticator that ignored them. A user
	// not in users is refused as if its token were not valid here: it is
	// not remembered as known, so it gets no renew budget.
	if !st.Authenticated || st.User.Username == "" || !slices.ContainsFunc(st.Audiences, func(s string) bool { return slices.Contains(a.cfg.Audiences, s) }) ||
		len(a.cfg.Users) > 0 && !slices.Contains(a.cfg.Users, st.User.Username) {
		a.reviewed(ctx, "unauthenticated")
		a.known.forget(sha256.Sum256([]byte(token)))
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
	if exp, ok := expiry(token); ok {
		a.known.add(sha256.Sum256([]byte(token)), exp)
	}
	return verdict{id: id}, allowFor(token, a.now(), a.cfg.Cache.AllowTTL), nil
}

func (a *authenticator) refused(ctx context.Context, reason string) {
	a.telemetry.ExtensionK8stokenauthRefusals.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
}

func (a *authenticator) reviewed(ctx context.Context, outcome string) {
	a.telemetry.ExtensionK8stokenauthTokenReviews.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome))))
}
