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
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// The release of TestHelmInstallUpgradeStrict: another namespace than
// deploy/'s, so that nothing there depends on the default one; and a
// second release beside it, in a namespace of its own.
const (
	releaseName = "otel-k8sevents"
	releaseNS   = "events"
	appNS       = "app"
	otherName   = "events-b"
	otherNS     = "events-b"
)

var (
	digest1 = "sha256:" + strings.Repeat("1", 64)
	digest2 = "sha256:" + strings.Repeat("2", 64)
)

// TestHelmInstallUpgradeStrict installs the chart with Helm's library on a
// real API server as README.md says (the namespace created and labelled
// first; Helm applies server-side with strict field validation, so an
// unknown field anywhere fails), after a misspelt value was refused by
// values.schema.json before anything was created; then upgrades it to
// both shapes with values other than the defaults (the pod knobs,
// OpenShift's securityContext, every monitor, cert-manager, a config
// merged over the chart's). After each step it checks what the
// values must change: the namespace of every object and binding, the image
// by digest, the replicas and tier 1's ring of tier-2 pods, the TLS Secret
// both tiers mount, the reporting controllers (the admission policy lets
// each collector write its own and refuses the default one), and that
// every workload's pod passes the restricted Pod Security Standard. The
// built collector then says what it makes of each workload's
// configuration (the user's config over the chart's, the controller in the
// exporter and the field selector); the mirror and both tiers run as their
// pods would, with reporting controllers other than the defaults, and helm
// test's pods (their scripts run here as kubelet would) see the Events
// they wrote: the mirror's copy of a raw Event, and tier 2's of a record
// sent to tier 1 over OTLP. Last, a second release (tier 1 over TLS)
// installs beside the first, and each collector's ServiceAccount still
// writes its own Events and no other.
func TestHelmInstallUpgradeStrict(t *testing.T) {
	go buildKubectl() // helm test's scripts run kubectl: linked meanwhile
	// Its own server: it installs an admission policy.
	srv := kubetest.Start(t, kubetest.OwnServer())
	// A bound for a server that stopped answering, not a measure of speed:
	// make test runs this beside four other jobs on the machine's cores.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := srv.Clientset()
	restricted := map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: restricted}},
		{ObjectMeta: metav1.ObjectMeta{Name: otherNS, Labels: restricted}},
		{ObjectMeta: metav1.ObjectMeta{Name: appNS}},
	} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "events-critical"}, Value: 1000000}, metav1.CreateOptions{})
	require.NoError(t, err)
	installCRDs(ctx, t, srv) // before Helm's discovery
	cfg := helmConfig(t, srv.Kubeconfig(t), releaseNS)
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
		_, err := install(ctx, cfg, releaseNS, "probe", probe, nil)
		require.ErrorContains(t, err, "datta: field not declared in schema")
	})
	t.Run("schema", func(t *testing.T) {
		_, err := install(ctx, cfg, releaseNS, releaseName, ch, map[string]any{"image": map[string]any{"digest": digest1},
			"mirror": map[string]any{"reportingControler": "example.com/mirror"}})
		require.ErrorContains(t, err, "additional properties 'reportingControler' not allowed")
		sts, err := cs.AppsV1().StatefulSets(releaseNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, sts.Items, "a refused install creates nothing")
		_, err = action.NewGet(cfg).Run(releaseName)
		assert.ErrorContains(t, err, "not found", "and no release")
	})

	rel, err := install(ctx, cfg, releaseNS, releaseName, ch, map[string]any{"image": map[string]any{"digest": digest1}})
	require.NoError(t, err)
	assert.Equal(t, releasecommon.StatusDeployed, rel.Info.Status)
	checkMirror(ctx, t, cs, digest1, "k8sevents.io/mirror")
	_, err = cs.AppsV1().Deployments(releaseNS).Get(ctx, "otelcol-tier1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "OTLP ingestion is off by default: %v", err)
	checkPodSecurity(ctx, t, cs, releaseNS)

	up := action.NewUpgrade(cfg)
	up.Namespace, up.WaitStrategy = releaseNS, kube.HookOnlyStrategy
	res, err := up.RunWithContext(ctx, releaseName, ch, upgradeValues())
	require.NoError(t, err)
	rel = res.(*releasev1.Release)
	assert.Equal(t, releasecommon.StatusDeployed, rel.Info.Status)
	assert.Equal(t, 2, rel.Version)
	checkMirror(ctx, t, cs, digest2, "example.com/mirror")
	checkOTLP(ctx, t, cs)
	checkPodSecurity(ctx, t, cs, releaseNS)
	checkMonitoring(ctx, t, srv, releaseNS, "otel-k8sevents", "tiers-tls")
	mirrorOwn := map[string]string{"otel-k8sevents": "example.com/mirror", "otelcol-tier2": "example.com/ingest"}
	checkOwnEvents(ctx, t, srv, releaseNS, mirrorOwn, []string{"k8sevents.io/mirror", "k8sevents.io/otlp-ingestion", "kubelet"})
	checkEffectiveConfigs(ctx, t, cs)

	runMirror(ctx, t, srv, releaseNS, "otel-k8sevents")
	tier1 := runTiers(ctx, t, srv, releaseNS, "otelcol-tier1", "otelcol-tier2")
	testErr, out := helmTest(ctx, t, cfg, srv, releaseNS, releaseName, map[string]string{"otelcol-tier1.events:4318": tier1})
	require.NoError(t, testErr, "helm test; its pods said: %v", out)
	assert.Contains(t, out["otel-k8sevents-test-mirror"], "the mirror wrote event/")
	assert.Contains(t, out["otel-k8sevents-test-otlp"], "tier 2 wrote event/")
	for _, controller := range []string{"example.com/mirror", "example.com/ingest"} {
		written := writtenBy(ctx, t, cs, releaseNS, controller)
		require.Len(t, written, 1, "%s wrote the test's Event", controller)
		assert.True(t, strings.HasPrefix(written[0].Reason, "HelmTest"), written[0].Reason)
	}

	// A second release beside the first: other names for every object,
	// cluster-wide ones included, its own admission policy.
	// Its tier 1 serves OTLP over TLS, with a certificate of its own.
	other, err := install(ctx, helmConfig(t, srv.Kubeconfig(t), otherNS), otherNS, otherName, ch, merge(everything(), map[string]any{
		"mirror": map[string]any{"reportingController": "example.com/mirror-b"},
		"otlp": map[string]any{"enabled": true, "reportingController": "example.com/ingest-b",
			"tls":   map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca"}}},
			"tier1": map[string]any{"tls": map[string]any{"enabled": true}}},
		"grafanaDashboard": map[string]any{"enabled": true},
	}))
	require.NoError(t, err)
	assert.Equal(t, releasecommon.StatusDeployed, other.Info.Status)
	checkPodSecurity(ctx, t, cs, otherNS)
	checkMonitoring(ctx, t, srv, otherNS, "events-b-otel-k8sevents", "events-b-otel-k8sevents-tls")
	checkEffective(ctx, t, cs, otherNS, "events-b-otel-k8sevents-tier1", map[string]any{
		"receivers::k8seventsotlp::protocols::grpc::tls::cert_file": "/etc/otelcol/listener-tls/tls.crt",
		"receivers::k8seventsotlp::protocols::http::tls::key_file":  "/etc/otelcol/listener-tls/tls.key",
	})
	checkOwnEvents(ctx, t, srv, otherNS, map[string]string{
		"events-b-otel-k8sevents": "example.com/mirror-b", "events-b-otel-k8sevents-tier2": "example.com/ingest-b",
	}, []string{"example.com/mirror", "example.com/ingest", "kubelet"})
	checkOwnEvents(ctx, t, srv, releaseNS, mirrorOwn, []string{"example.com/mirror-b", "example.com/ingest-b"})
}

// upgradeValues are the values of the upgrade: both shapes, other
// replicas, controllers, digest, audience, cluster name and TLS Secret,
// every pod knob, every monitor and cert-manager, and a configuration of
// the user's for each workload.
func upgradeValues() map[string]any {
	return map[string]any{
		"image":             map[string]any{"digest": digest2, "pullPolicy": "Always"},
		"imagePullSecrets":  []any{map[string]any{"name": "regcred"}},
		"commonLabels":      map[string]any{"team": "platform"},
		"podAnnotations":    map[string]any{"example.com/owner": "platform"},
		"priorityClassName": "events-critical",
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
		"extraEnvs":         []any{map[string]any{"name": "MIRROR_BURST", "value": "80"}},
		"extraVolumes":      []any{map[string]any{"name": "extra", "emptyDir": map[string]any{}}},
		"extraVolumeMounts": []any{map[string]any{"name": "extra", "mountPath": "/extra"}},
		// OpenShift's restricted-v2 assigns the user and the group.
		"podSecurityContext": map[string]any{"runAsUser": nil, "fsGroup": nil},
		"serviceMonitor":     map[string]any{"enabled": true},
		"podMonitor":         map[string]any{"enabled": true},
		"prometheusRule":     map[string]any{"enabled": true},
		"grafanaDashboard":   map[string]any{"enabled": true},
		"tests":              map[string]any{"timeoutSeconds": 90},
		"mirror": map[string]any{"reportingController": "example.com/mirror", "config": map[string]any{
			"exporters": map[string]any{"k8sevents": map[string]any{"qps": 7, "burst": "${env:MIRROR_BURST}"}},
			"service":   map[string]any{"telemetry": map[string]any{"metrics": map[string]any{"level": "detailed"}}},
		}},
		"otlp": map[string]any{
			"enabled": true, "reportingController": "example.com/ingest", "audience": "events-audience",
			"clusterName": "prod-eu",
			"tls": map[string]any{"secretName": "tiers-tls", "certManager": map[string]any{"enabled": true,
				"issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}}},
			"tier1": map[string]any{"replicas": 3, "recordsPerSecond": 5, "burst": 40,
				"config": map[string]any{"processors": map[string]any{"memory_limiter": map[string]any{"limit_percentage": 70}}}},
			"tier2": map[string]any{"replicas": 4, "config": map[string]any{"exporters": map[string]any{"k8sevents": map[string]any{"adopt_window": "10m"}}}},
		},
	}
}

// helmConfig is Helm's action configuration for the cluster of kubeconfig,
// in namespace ns, releases kept in Secrets (helm's default).
func helmConfig(t *testing.T, kubeconfig, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, cfg.Init(flags, ns, "secret"))
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

// install is helm install NAME CHART -n ns --set vals.
func install(ctx context.Context, cfg *action.Configuration, ns, name string, ch *chart.Chart, vals map[string]any) (*releasev1.Release, error) {
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = name, ns
	in.WaitStrategy = kube.HookOnlyStrategy // the CLI's default: no pod runs here (no kubelet)
	rel, err := in.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, err
	}
	return rel.(*releasev1.Release), nil
}
