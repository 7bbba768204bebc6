package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/reviewcache"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver/internal/metadata"
)

// eventGroups are the API groups whose events resource writes Event
// objects: the core group (core/v1) and events.k8s.io (v1). Both store the
// same objects, so a caller allowed to create them through either may
// have one written.
var eventGroups = []string{"", "events.k8s.io"}

// accessKey is one question asked of the API server: may this identity
// create Events in this namespace.
type accessKey struct {
	identity  string // identityKey
	namespace string
}

// access answers, with a bounded cache, whether an identity may create
// Events in a namespace (SubjectAccessReview).
type access struct {
	client    kubernetes.Interface
	cfg       reviewcache.Config
	cache     *reviewcache.Cache[accessKey, bool]
	telemetry *metadata.TelemetryBuilder
}

func newAccess(client kubernetes.Interface, cfg reviewcache.Config, timeout time.Duration, tb *metadata.TelemetryBuilder, now func() time.Time) *access {
	return &access{client: client, cfg: cfg, telemetry: tb, cache: reviewcache.New[accessKey, bool](cfg.MaxEntries, timeout, now)}
}

// mayCreate answers whether id may create Events in namespace; an error
// when the API server could not say. A denial is believed only from an
// API server that says it is ready: one that is starting answers
// SubjectAccessReviews before its RoleBindings have synced, and denies
// what they allow a moment later. Its denial is an error (the sender
// retries the request), never a refusal for good, and is not cached. A
// server can become ready between its denial and the readiness check, so
// a denial is asked again once the server said it is ready, and only that
// answer is believed.
func (a *access) mayCreate(ctx context.Context, id *k8sauth.Identity, key, namespace string) (bool, error) {
	allowed, _, err := a.cache.Get(ctx, accessKey{key, namespace}, func(ctx context.Context) (bool, time.Duration, error) {
		if ok, err := a.reviewGroups(ctx, id, namespace); err != nil || ok {
			return ok, a.ttl(ok), err
		}
		if _, err := a.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return false, 0, fmt.Errorf("subject access review denied by an API server that is not ready: %w", err)
		}
		ok, err := a.reviewGroups(ctx, id, namespace)
		if err != nil {
			return false, 0, err
		}
		return ok, a.ttl(ok), nil
	})
	return allowed, err
}

// ttl is how long an answer is cached.
func (a *access) ttl(allowed bool) time.Duration {
	if allowed {
		return a.cfg.AllowTTL
	}
	return a.cfg.DenyTTL
}

// reviewGroups asks whether id may create Events of any Event API group
// in namespace.
func (a *access) reviewGroups(ctx context.Context, id *k8sauth.Identity, namespace string) (bool, error) {
	for _, group := range eventGroups {
		ok, err := a.review(ctx, id, namespace, group)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// uncached is how many of namespaces have no answer for the identity of
// key in the cache: the reviews a request will cost.
func (a *access) uncached(key string, namespaces []string) int {
	n := 0
	for _, ns := range namespaces {
		if _, ok := a.cache.Until(accessKey{key, ns}); !ok {
			n++
		}
	}
	return n
}

func (a *access) review(ctx context.Context, id *k8sauth.Identity, namespace, group string) (bool, error) {
	if a.client == nil {
		return false, errors.New("not started")
	}
	extra := make(map[string]authzv1.ExtraValue, len(id.Extra))
	for k, v := range id.Extra {
		extra[k] = v
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: id.Username, UID: id.UID, Groups: id.Groups, Extra: extra,
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: group, Resource: "events"},
	}}, metav1.CreateOptions{})
	outcome := "denied"
	switch {
	case err != nil:
		outcome = "error"
	case sar.Status.Allowed:
		outcome = "allowed"
	}
	a.telemetry.ReceiverK8seventsotlpAccessReviews.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome))))
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return sar.Status.Allowed, nil
}

// identityKey is everything a SubjectAccessReview asks about a user, as
// one string (each part length-prefixed, so no two identities share one):
// two requests of one user with other groups or extra (another pod's bound
// token) are asked about apart.
func identityKey(id *k8sauth.Identity) string {
	var b strings.Builder
	put := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	put(id.Username)
	put(id.UID)
	put(strconv.Itoa(len(id.Groups)))
	for _, g := range id.Groups {
		put(g)
	}
	keys := slices.Sorted(maps.Keys(id.Extra))
	put(strconv.Itoa(len(keys)))
	for _, k := range keys {
		put(k)
		put(strconv.Itoa(len(id.Extra[k])))
		for _, v := range id.Extra[k] {
			put(v)
		}
	}
	return b.String()
}
