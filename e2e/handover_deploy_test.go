package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// TestHandOverDeployManifestsStrict applies every manifest of deploy/ (both
// shapes: the mirror, and OTLP tier 1 + tier 2) to a real API server with
// strict server-side field validation (apply), the workloads (StatefulSets,
// Deployment) as a dry run first and then for real: a misspelt or unknown
// field anywhere fails. It checks that every ConfigMap embeds its ready
// configuration byte for byte, that the StatefulSets keep their state on a
// PersistentVolumeClaim per pod, that each ServiceAccount may do what
// its components do and nothing more (SubjectAccessReview), and the rest of
// the deployment's security (checkDeploySecurity).
func TestHandOverDeployManifestsStrict(t *testing.T) {
	parallel(t)
	srv := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := srv.Clientset()

	files, err := filepath.Glob("../deploy/*.yaml")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			names = append(names, b)
		}
	}
	require.Contains(t, names, "otlp-tier1.yaml")
	require.Contains(t, names, "otlp-tier2.yaml")
	sort.Strings(names)
	objs := manifests(t, names...)
	apply(ctx, t, srv.RESTConfig(), objs)

	// Each ConfigMap is a ready configuration (validated and run by other tests).
	for cm, file := range map[string]string{"otel-k8sevents": "mirror.yaml", "otelcol-tier1": "tier1-loadbalancer.yaml", "otelcol-tier2": "tier2-processor.yaml"} {
		got, err := cs.CoreV1().ConfigMaps(deployNamespace).Get(ctx, cm, metav1.GetOptions{})
		require.NoError(t, err, cm)
		assert.Equal(t, readyConfig(t, file), got.Data["config.yaml"], "ConfigMap %s must embed testdata/config/%s", cm, file)
	}

	// State follows the pod: one volume claim per pod, mounted where
	// file_storage writes; the mirror runs one replica.
	for name, replicas := range map[string]int32{"otel-k8sevents": 1, "otelcol-tier2": 3} {
		ss, err := cs.AppsV1().StatefulSets(deployNamespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, replicas, *ss.Spec.Replicas, "%s replicas", name)
		require.Len(t, ss.Spec.VolumeClaimTemplates, 1, name)
		assert.Equal(t, "storage", ss.Spec.VolumeClaimTemplates[0].Name, name)
		for _, v := range ss.Spec.Template.Spec.Volumes {
			assert.NotEqual(t, "storage", v.Name, "%s: storage must be the claim, not a pod volume", name)
		}
	}
	tier1, err := cs.AppsV1().Deployments(deployNamespace).Get(ctx, "otelcol-tier1", metav1.GetOptions{})
	require.NoError(t, err)
	ring := envOf(tier1.Spec.Template.Spec.Containers[0].Env, "TIER2_ENDPOINTS")
	for i := range 3 {
		assert.Contains(t, ring, fmt.Sprintf("otelcol-tier2-%d.otelcol-tier2:4317", i), "tier 1 routes to every tier-2 pod by its stable name")
	}
	svc, err := cs.CoreV1().Services(deployNamespace).Get(ctx, "otelcol-tier2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "None", svc.Spec.ClusterIP, "tier 2's Service is headless")
	assert.True(t, svc.Spec.PublishNotReadyAddresses)

	// RBAC: nothing more than the code uses.
	sa := func(name string) string { return "system:serviceaccount:" + deployNamespace + ":" + name }
	for _, c := range []struct {
		user, verb, group, resource, ns, name string
		allowed                               bool
	}{
		{sa("otelcol-tier2"), "create", "events.k8s.io", "events", "app", "", true},
		{sa("otelcol-tier2"), "patch", "", "events", "app", "", true},
		{sa("otelcol-tier2"), "list", "events.k8s.io", "events", "", "", true},
		{sa("otelcol-tier2"), "watch", "events.k8s.io", "events", "", "", false},
		{sa("otelcol-tier2"), "update", "coordination.k8s.io", "leases", deployNamespace, "", false},
		{sa("otelcol-tier2"), "list", "discovery.k8s.io", "endpointslices", deployNamespace, "", false},
		{sa("otelcol-tier2"), "create", "authentication.k8s.io", "tokenreviews", "", "", true}, // tier 1's token
		// Tier 1 authenticates (TokenReview) and authorizes (SubjectAccessReview), nothing else.
		{sa("otelcol-tier1"), "create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{sa("otelcol-tier1"), "create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		{sa("otelcol-tier1"), "create", "authorization.k8s.io", "localsubjectaccessreviews", "app", "", false},
		{sa("otelcol-tier1"), "create", "events.k8s.io", "events", "app", "", false},
		{sa("otelcol-tier1"), "get", "", "secrets", deployNamespace, "otelcol-tls", false},
		{sa("otelcol-tier1"), "watch", "", "namespaces", "", "", true}, // records in none that exists cost no review
		{sa("otelcol-tier1"), "list", "discovery.k8s.io", "endpointslices", deployNamespace, "", false},
		{sa("otel-k8sevents"), "watch", "events.k8s.io", "events", "", "", true},
		// The mirror's Lease by name; create cannot name one.
		{sa("otel-k8sevents"), "create", "coordination.k8s.io", "leases", deployNamespace, "", true},
		{sa("otel-k8sevents"), "update", "coordination.k8s.io", "leases", deployNamespace, "otel-k8sevents", true},
		{sa("otel-k8sevents"), "get", "coordination.k8s.io", "leases", deployNamespace, "otel-k8sevents", true},
		{sa("otel-k8sevents"), "update", "coordination.k8s.io", "leases", deployNamespace, "kube-controller-manager", false},
		{sa("otel-k8sevents"), "get", "coordination.k8s.io", "leases", deployNamespace, "other", false},
		{sa("otel-k8sevents"), "update", "coordination.k8s.io", "leases", "app", "otel-k8sevents", false},
		{sa("otel-k8sevents"), "create", "", "configmaps", deployNamespace, "", false},
	} {
		assert.Equal(t, c.allowed, allowed(ctx, t, cs, c.user, c.verb, c.group, c.resource, c.ns, c.name),
			"%s may %s %s/%s %q in %q", c.user, c.verb, c.group, c.resource, c.name, c.ns)
	}

	checkDeploySecurity(ctx, t, cs)
}

// allowed asks the API server's authorizer (SubjectAccessReview) about a
// ServiceAccount's user (system:serviceaccount:<namespace>:<name>), with
// the groups the API server gives it.
func allowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, user, verb, group, resource, ns, name string) bool {
	t.Helper()
	parts := strings.Split(user, ":")
	require.Len(t, parts, 4, "not a ServiceAccount's user: %s", user)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"}
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

// envOf is the value of a container's environment variable.
func envOf(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// kustomizeResources lists the resources of deploy/kustomization.yaml.
func kustomizeResources(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, utilyaml.Unmarshal(b, &k))
	return k.Resources
}

// TestHandOverKustomizationIsTheMirror: `kubectl apply -k deploy/` applies
// the mirror shape whole (its workload, both RBAC files and the admission
// policy), not the OTLP shape, which is applied with -f (README "In a cluster").
func TestHandOverKustomizationIsTheMirror(t *testing.T) {
	res := kustomizeResources(t)
	assert.ElementsMatch(t, []string{"collector.yaml", "rbac-receiver.yaml", "rbac-exporter.yaml", "admission-policy.yaml"}, res)
	for _, r := range res {
		assert.False(t, strings.HasPrefix(r, "otlp-"), r)
	}
}
