package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// The release of TestHelmInstallUpgradeStrict: another namespace than
// deploy/'s, so that nothing there depends on the default one.
const (
	releaseName = "otel-k8sevents"
	releaseNS   = "events"
	appNS       = "app"
)

var (
	digest1 = "sha256:" + strings.Repeat("1", 64)
	digest2 = "sha256:" + strings.Repeat("2", 64)
)

// TestHelmInstallUpgradeStrict installs the chart with Helm's library on a
// real API server as README.md says (the namespace created and labelled
// first; Helm applies server-side with strict field validation, so an
// unknown field anywhere fails), then upgrades it to both shapes with
// values other than the defaults. After each step it checks what the
// values must change: the namespace of every object and binding, the image
// by digest, the replicas and tier 1's ring of tier-2 pods, the TLS Secret
// both tiers mount, the reporting controllers (the admission policy lets
// each collector write its own and refuses the default one), and that
// every workload's pod passes the restricted Pod Security Standard.
func TestHelmInstallUpgradeStrict(t *testing.T) {
	srv := kubetest.Start(t, kubetest.OwnServer()) // it installs an admission policy
	// A bound for a server that stopped answering, not a measure of speed:
	// make test runs this beside four other jobs on the machine's cores.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := srv.Clientset()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: appNS}},
	} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cfg := helmConfig(t, srv.Kubeconfig(t))
	ch, err := loadChart(root)
	require.NoError(t, err)

	t.Run("strict", func(t *testing.T) {
		// The same install path refuses a manifest with an unknown field:
		// the checks below run on objects the API server took as written.
		probe := &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "probe", Version: "0.1.0"},
			Templates: []*common.File{{Name: "templates/cm.yaml",
				Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\ndata: {a: b}\ndatta: {a: b}\n")}},
		}
		_, err := install(ctx, cfg, "probe", probe, nil)
		require.ErrorContains(t, err, "datta: field not declared in schema")
	})

	rel, err := install(ctx, cfg, releaseName, ch, map[string]any{"image": map[string]any{"digest": digest1}})
	require.NoError(t, err)
	assert.Equal(t, releasecommon.StatusDeployed, rel.Info.Status)
	checkMirror(ctx, t, cs, digest1, "k8sevents.io/mirror")
	_, err = cs.AppsV1().Deployments(releaseNS).Get(ctx, "otelcol-tier1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "OTLP ingestion is off by default: %v", err)
	checkPodSecurity(ctx, t, cs)

	up := action.NewUpgrade(cfg)
	up.Namespace, up.WaitStrategy = releaseNS, kube.HookOnlyStrategy
	res, err := up.RunWithContext(ctx, releaseName, ch, map[string]any{
		"image":  map[string]any{"digest": digest2},
		"mirror": map[string]any{"reportingController": "example.com/mirror"},
		"otlp": map[string]any{
			"enabled": true, "reportingController": "example.com/ingest", "audience": "events-audience",
			"clusterName": "prod-eu", "tls": map[string]any{"secretName": "tiers-tls"},
			"tier1": map[string]any{"replicas": 3}, "tier2": map[string]any{"replicas": 4},
		},
	})
	require.NoError(t, err)
	rel = res.(*releasev1.Release)
	assert.Equal(t, releasecommon.StatusDeployed, rel.Info.Status)
	assert.Equal(t, 2, rel.Version)
	checkMirror(ctx, t, cs, digest2, "example.com/mirror")
	checkOTLP(ctx, t, cs)
	checkPodSecurity(ctx, t, cs)
	checkOwnEvents(ctx, t, srv, map[string]string{
		"otel-k8sevents": "example.com/mirror", "otelcol-tier2": "example.com/ingest",
	}, []string{"k8sevents.io/mirror", "k8sevents.io/otlp-ingestion", "kubelet"})
}

// helmConfig is Helm's action configuration for the cluster of kubeconfig,
// in releaseNS, releases kept in Secrets (helm's default).
func helmConfig(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := releaseNS
	flags.Namespace = &ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, cfg.Init(flags, releaseNS, "secret"))
	cfg.Capabilities = capabilities(t, flags)
	return cfg
}

// capabilities is what Helm learns of the API server by discovery, but
// with the version tools/kube builds it from: built without version
// stamping, it reports v0.0.0-master, which the chart's kubeVersion
// (>=1.30) refuses.
func capabilities(t *testing.T, flags *genericclioptions.ConfigFlags) *common.Capabilities {
	t.Helper()
	dc, err := flags.ToDiscoveryClient()
	require.NoError(t, err)
	apis, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "tools", "kube", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)$`).FindSubmatch(b)
	require.NotNil(t, m, "tools/kube/go.mod requires k8s.io/kubernetes")
	v, err := common.ParseKubeVersion(string(m[1]))
	require.NoError(t, err)
	return &common.Capabilities{APIVersions: apis, KubeVersion: *v, HelmVersion: common.DefaultCapabilities.HelmVersion}
}

// install is helm install NAME CHART -n releaseNS --set vals.
func install(ctx context.Context, cfg *action.Configuration, name string, ch *chart.Chart, vals map[string]any) (*releasev1.Release, error) {
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = name, releaseNS
	in.WaitStrategy = kube.HookOnlyStrategy // the CLI's default: no pod runs here (no kubelet)
	rel, err := in.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, err
	}
	return rel.(*releasev1.Release), nil
}

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
	for name, pod := range map[string]corev1.PodSpec{"tier 1": tier1.Spec.Template.Spec, "tier 2": tier2.Spec.Template.Spec} {
		var secrets []string
		for _, v := range pod.Volumes {
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.Secret != nil {
						secrets = append(secrets, s.Secret.Name)
					}
				}
			}
		}
		assert.Equal(t, []string{"tiers-tls"}, secrets, "%s mounts the TLS Secret of otlp.tls.secretName", name)
	}
	assert.Equal(t, readyConfig(t, "tier1-loadbalancer.yaml"), configOf(ctx, t, cs, "otelcol-tier1"))
	assert.Equal(t, readyConfig(t, "tier2-processor.yaml"), configOf(ctx, t, cs, "otelcol-tier2"))

	sa := func(name string) string { return "system:serviceaccount:" + releaseNS + ":" + name }
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier1"), "create", "authentication.k8s.io", "tokenreviews", "", ""))
	assert.True(t, allowed(ctx, t, cs, sa("otelcol-tier2"), "create", "events.k8s.io", "events", appNS, ""))
	assert.False(t, allowed(ctx, t, cs, sa("otelcol-tier2"), "watch", "events.k8s.io", "events", "", ""))
}

// checkPodSecurity: the namespace enforces restricted (a pod without a
// security context is refused) and every workload's pod is admitted (a dry
// run: there is no kubelet to run it).
func checkPodSecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: releaseNS},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err := cs.CoreV1().Pods(releaseNS).Create(ctx, bare, dryRun)
	require.True(t, apierrors.IsForbidden(err), "a pod without a security context must be refused: %v", err)
	pods := map[string]corev1.PodSpec{}
	sts, err := cs.AppsV1().StatefulSets(releaseNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range sts.Items {
		spec := s.Spec.Template.Spec // and its volume claims, as the StatefulSet controller adds them
		for _, c := range s.Spec.VolumeClaimTemplates {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + s.Name + "-0"}}})
		}
		pods[s.Name] = spec
	}
	deps, err := cs.AppsV1().Deployments(releaseNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deps.Items {
		pods[d.Name] = d.Spec.Template.Spec
	}
	require.NotEmpty(t, pods)
	for name, spec := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: releaseNS}, Spec: spec}
		_, err := cs.CoreV1().Pods(releaseNS).Create(ctx, pod, dryRun)
		assert.NoError(t, err, "%s's pod under the restricted Pod Security Standard", name)
	}
}

// checkOwnEvents: each collector ServiceAccount (name -> its reporting
// controller) may create an Event of its own controller in appNS, and the
// admission policy refuses it every one of others. The API server starts
// using a changed policy a moment after it is written.
func checkOwnEvents(ctx context.Context, t *testing.T, srv *kubetest.Server, own map[string]string, others []string) {
	t.Helper()
	for sa, controller := range own {
		c, err := kubernetes.NewForConfig(srv.RESTConfigFor(srv.ServiceAccountToken(t, releaseNS, sa, time.Hour)))
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

func byPolicy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'otel-k8sevents-own-events'")
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
