package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// What TestHelmInstallUpgradeStrict checks on the stored objects.

// checkMirror: the mirror's StatefulSet runs the image by digest as
// controller, one replica, its ConfigMap is mirror.yaml, and its
// ServiceAccount (of releaseNS) has the receiver's, the exporter's and
// the Lease's rights there.
func checkMirror(ctx context.Context, t *testing.T, cs kubernetes.Interface, digest, controller string) {
	t.Helper()
	ss, err := cs.AppsV1().StatefulSets(releaseNS).Get(ctx, "otel-k8sevents", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, *ss.Spec.Replicas)
	c := ss.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "otelcol-k8sevents:0.1.0@"+digest, c.Image)
	assert.Equal(t, controller, envOf(c.Env, "REPORTING_CONTROLLER"))
	assert.Equal(t, readyConfig(t, "mirror.yaml"), configOf(ctx, t, cs, "otel-k8sevents"))
	sa := "system:serviceaccount:" + releaseNS + ":otel-k8sevents"
	for _, c := range []struct {
		verb, group, resource, ns, name string
		allowed                         bool
	}{
		{"watch", "events.k8s.io", "events", "", "", true},
		{"patch", "", "events", appNS, "", true},
		{"get", "", "namespaces", "", "kube-system", true},
		{"update", "coordination.k8s.io", "leases", releaseNS, "otel-k8sevents", true},
		{"update", "coordination.k8s.io", "leases", "otel-k8sevents", "otel-k8sevents", false},
		{"create", "authentication.k8s.io", "tokenreviews", "", "", false},
	} {
		assert.Equal(t, c.allowed, allowed(ctx, t, cs, sa, c.verb, c.group, c.resource, c.ns, c.name),
			"%s may %s %s/%s %q in %q", sa, c.verb, c.group, c.resource, c.name, c.ns)
	}
}

// checkOTLP: the tiers as the upgrade's values say.
func checkOTLP(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	tier1, err := cs.AppsV1().Deployments(releaseNS).Get(ctx, "otelcol-tier1", metav1.GetOptions{})
	require.NoError(t, err)
	tier2, err := cs.AppsV1().StatefulSets(releaseNS).Get(ctx, "otelcol-tier2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, *tier1.Spec.Replicas)
	assert.EqualValues(t, 4, *tier2.Spec.Replicas)

	c1, c2 := tier1.Spec.Template.Spec.Containers[0], tier2.Spec.Template.Spec.Containers[0]
	var ring []string
	require.NoError(t, yaml.Unmarshal([]byte(envOf(c1.Env, "TIER2_ENDPOINTS")), &ring))
	assert.Equal(t, []string{
		"otelcol-tier2-0.otelcol-tier2:4317", "otelcol-tier2-1.otelcol-tier2:4317",
		"otelcol-tier2-2.otelcol-tier2:4317", "otelcol-tier2-3.otelcol-tier2:4317",
	}, ring, "tier 1 routes to every tier-2 pod by its stable name")
	assert.Equal(t, "events-audience", envOf(c1.Env, "OTLP_AUDIENCE"))
	assert.Equal(t, "prod-eu", envOf(c1.Env, "CLUSTER_NAME"))
	assert.Equal(t, "example.com/ingest", envOf(c2.Env, "REPORTING_CONTROLLER"))
	for _, c := range []corev1.Container{c1, c2} {
		assert.Equal(t, "otelcol-k8sevents:0.1.0@"+digest2, c.Image)
	}
	assert.Equal(t, []string{"tiers-tls"}, secretsOf(tier2.Spec.Template.Spec), "tier 2 mounts its server certificate (otlp.tls.secretName)")
	assert.Equal(t, []string{"otelcol-tier1-client-tls"}, secretsOf(tier1.Spec.Template.Spec), "tier 1 mounts its client certificate, not tier 2's key")
	assert.Equal(t, "system:serviceaccount:"+releaseNS+":otelcol-tier1", envOf(c2.Env, "TIER1_USER"), "tier 2 takes only tier 1")
	assert.Equal(t, readyConfig(t, "tier1-loadbalancer.yaml"), configOf(ctx, t, cs, "otelcol-tier1"))
	assert.Equal(t, readyConfig(t, "tier2-processor.yaml"), configOf(ctx, t, cs, "otelcol-tier2"))

	sa := func(name string) string { return "system:serviceaccount:" + releaseNS + ":" + name }
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier1"), "create", "authentication.k8s.io", "tokenreviews", "", ""))
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier1"), "watch", "", "namespaces", "", ""))
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier2"), "create", "authentication.k8s.io", "tokenreviews", "", ""))
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier2"), "create", "events.k8s.io", "events", appNS, ""))
	assert.False(t, allowed(ctx, t, cs, sa("otelcol-tier2"), "watch", "events.k8s.io", "events", "", ""))
}

// checkPodSecurity: the namespace enforces restricted (a pod without a
// security context is refused) and every workload's pod is admitted (a dry
// run: there is no kubelet to run it).
func checkPodSecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, bare, dryRun)
	require.True(t, apierrors.IsForbidden(err), "a pod without a security context must be refused: %v", err)
	pods := map[string]corev1.PodSpec{}
	sts, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range sts.Items {
		spec := s.Spec.Template.Spec // and its volume claims, as the StatefulSet controller adds them
		for _, c := range s.Spec.VolumeClaimTemplates {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + s.Name + "-0"}}})
		}
		pods[s.Name] = spec
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deps.Items {
		pods[d.Name] = d.Spec.Template.Spec
	}
	require.NotEmpty(t, pods)
	for name, spec := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns}, Spec: spec}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
		assert.NoError(t, err, "%s's pod under the restricted Pod Security Standard", name)
	}
}

// checkOwnEvents: each collector ServiceAccount (name -> its reporting
// controller) may create an Event of its own controller in appNS, and the
// admission policy refuses it every one of others. The API server starts
// using a changed policy a moment after it is written.
func checkOwnEvents(ctx context.Context, t *testing.T, srv *kubetest.Server, ns string, own map[string]string, others []string) {
	t.Helper()
	for sa, controller := range own {
		c, err := kubernetes.NewForConfig(srv.RESTConfigFor(srv.ServiceAccountToken(t, ns, sa, time.Hour)))
		require.NoError(t, err)
		write := func(controller string) error {
			ev := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "e-", Namespace: appNS},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: appNS, Name: "web-0", APIVersion: "v1"},
				Reason:         "BackOff", Message: "m", Type: corev1.EventTypeWarning,
				ReportingController: controller, ReportingInstance: "i",
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
			}
			_, err := c.CoreV1().Events(appNS).Create(ctx, ev, metav1.CreateOptions{})
			return err
		}
		assert.EventuallyWithT(t, func(c *assert.CollectT) {
			for _, other := range others {
				err := write(other)
				assert.True(c, byPolicy(err), "%s writes an Event of %s: want refused by the policy, got %v", sa, other, err)
			}
		}, time.Minute, 200*time.Millisecond)
		assert.NoError(t, write(controller), "%s writes an Event of its own %s", sa, controller)
	}
}

// byPolicy: err is the refusal of a release's admission policy
// (<fullname>-own-events).
func byPolicy(err error) bool {
	return err != nil && regexp.MustCompile(`ValidatingAdmissionPolicy '[a-z0-9-]*-own-events'`).MatchString(err.Error())
}

// allowed asks the API server's authorizer (SubjectAccessReview).
func allowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, user, verb, group, resource, ns, name string) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

func configOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(releaseNS).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Data["config.yaml"]
}

func readyConfig(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "testdata", "config", name))
	require.NoError(t, err)
	return string(b)
}

func envOf(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkEffectiveConfigs asks the built collector what it makes of each
// workload's ConfigMap with the container's environment (print-config: the
// ready configuration, then chart.yaml): the user's config over the
// chart's additions, which stay where the user did not set them; the
// reporting controller in the mirror's exporter and field selector, which
// also leaves out tier 2's Events; tier 1's budget, and no TLS on its
// listeners unless asked.
func checkEffectiveConfigs(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for name, want := range map[string]map[string]any{
		"otel-k8sevents": {
			"exporters::k8sevents::reporting_controller": "example.com/mirror",
			"receivers::k8sevents::field_selector":       "reportingController!=example.com/mirror,reportingController!=example.com/ingest",
			"exporters::k8sevents::qps":                  float64(7),
			"exporters::k8sevents::burst":                float64(80),
			"service::telemetry::metrics::level":         "Detailed",
			"exporters::prometheus::endpoint":            "127.0.0.1:9464",
		},
		"otelcol-tier1": {
			"receivers::k8seventsotlp::protocols::grpc::tls":           nil,
			"receivers::k8seventsotlp::per_client::records_per_second": float64(5),
			"receivers::k8seventsotlp::per_client::burst":              float64(40),
			"processors::memory_limiter::limit_percentage":             float64(70),
			"service::telemetry::metrics::level":                       "Normal",
		},
		"otelcol-tier2": {
			"exporters::k8sevents::reporting_controller": "example.com/ingest",
			"exporters::k8sevents::adopt_window":         "10m0s",
			"exporters::prometheus::endpoint":            "127.0.0.1:9464",
		},
	} {
		cfg := checkEffective(ctx, t, cs, releaseNS, name, want)
		readers, _ := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)
		if assert.Len(t, readers, 1, "%s: the chart's metrics reader", name) {
			assert.Equal(t, map[string]any{"host": "127.0.0.1", "port": float64(8888)},
				pick(dig(readers[0], "pull", "exporter", "prometheus"), "host", "port"), name)
		}
	}
}

// checkEffective checks keys of the effective configuration of workload
// name in ns (assertEffective), and returns it.
func checkEffective(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, want map[string]any) map[string]any {
	t.Helper()
	var c corev1.Container
	if d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		c = d.Spec.Template.Spec.Containers[0]
	} else {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		c = s.Spec.Template.Spec.Containers[0]
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cfg := effectiveConfig(t, configFiles(t, c, cm), podEnv(t, c, ns, name+"-0", "uid"))
	assertEffective(t, cfg, want, name)
	return cfg
}

// pick is the keys of a map, nil where missing.
func pick(v any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = dig(v, k)
	}
	return out
}
