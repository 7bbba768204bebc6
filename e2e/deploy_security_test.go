package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// checkDeploySecurity checks, on an API server holding every manifest of
// deploy/, what keeps the deployment no wider than it needs: the namespace
// enforces the restricted Pod Security Standard and every workload's pod
// passes it; NetworkPolicies let only tier 1 reach tier 2 and nobody the
// mirror, but Prometheus the metrics ports; PodDisruptionBudgets take one pod of a tier at a time; tier 2
// has no HTTP listener, every gRPC listener a max_concurrent_streams, and
// the tiers talk mutual TLS with the certificate the pods mount from Secret
// otelcol-tls; tier 2 does not believe claimed counts.
func checkDeploySecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	checkPodSecurity(ctx, t, cs)

	pols, err := cs.NetworkingV1().NetworkPolicies(deployNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	ingress := map[string]string{} // pod name label -> its ingress rules, printed
	for _, p := range pols.Items {
		assert.Equal(t, `["Ingress"]`, sprint(p.Spec.PolicyTypes), p.Name)
		ingress[p.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"]] = sprint(p.Spec.Ingress)
	}
	tcp := corev1.ProtocolTCP
	port := func(n int) *intstr.IntOrString { p := intstr.FromInt32(int32(n)); return &p }
	// Prometheus may scrape every collector's metrics ports (the chart's
	// metrics.allowFrom: any pod by default), the mirror's and tier 2's
	// exact counts too, and nothing else.
	scrape := func(ports ...int) map[string]any {
		var ps []any
		for _, p := range ports {
			ps = append(ps, map[string]any{"protocol": tcp, "port": port(p)})
		}
		return map[string]any{"from": []any{map[string]any{"namespaceSelector": map[string]any{}}}, "ports": ps}
	}
	assert.Equal(t, sprint([]any{scrape(8888, 9464)}), ingress["otel-k8sevents"], "the mirror: its metrics ports only")
	assert.Equal(t, sprint([]any{map[string]any{
		"from":  []any{map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "otelcol-tier1"}}}},
		"ports": []any{map[string]any{"protocol": tcp, "port": port(4317)}},
	}, scrape(8888, 9464)}), ingress["otelcol-tier2"], "tier 2: OTLP gRPC from tier 1's pods only, and its metrics ports")
	assert.Equal(t, sprint([]any{map[string]any{
		"from":  []any{map[string]any{"namespaceSelector": map[string]any{}}},
		"ports": []any{map[string]any{"protocol": tcp, "port": port(4317)}, map[string]any{"protocol": tcp, "port": port(4318)}},
	}, scrape(8888)}), ingress["otelcol-tier1"], "tier 1: OTLP from any pod, and its metrics port")

	for _, name := range []string{"otelcol-tier1", "otelcol-tier2"} {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(deployNamespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, "1", pdb.Spec.MaxUnavailable.String(), name)
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": name}, pdb.Spec.Selector.MatchLabels, name)
	}

	tier1, tier2 := deployedConfig(ctx, t, cs, "otelcol-tier1"), deployedConfig(ctx, t, cs, "otelcol-tier2")
	protocols, _ := dig(tier2, "receivers", "otlp", "protocols").(map[string]any)
	assert.Equal(t, []string{"grpc"}, keys(protocols), "tier 2 listens on OTLP gRPC only")
	svc, err := cs.CoreV1().Services(deployNamespace).Get(ctx, "otelcol-tier2", metav1.GetOptions{})
	require.NoError(t, err)
	var svcPorts []string
	for _, p := range svc.Spec.Ports {
		svcPorts = append(svcPorts, fmt.Sprintf("%s:%d", p.Name, p.Port))
	}
	assert.Equal(t, []string{"otlp-grpc:4317", "metrics:8888", "exact-counts:9464"}, svcPorts, "tier 2's Service: OTLP gRPC and the metrics ports")
	assert.Equal(t, "ignore", dig(tier2, "processors", "eventseries", "input_counts"), "tier 2 does not believe a claimed count")
	for _, cfg := range []map[string]any{tier1, tier2} {
		receivers, _ := dig(cfg, "receivers").(map[string]any)
		for name, r := range receivers {
			if grpc := dig(r, "protocols", "grpc"); grpc != nil {
				assert.NotNil(t, dig(grpc, "max_concurrent_streams"), "receiver %s: max_concurrent_streams", name)
			}
		}
	}
	for _, p := range []string{"grpc", "http"} {
		assert.Equal(t, "k8stokenauth", dig(tier1, "receivers", "k8seventsotlp", "protocols", p, "auth", "authenticator"), "tier 1 %s authenticates", p)
	}

	// Mutual TLS: tier 2 requires a client certificate, tier 1 presents one
	// and checks tier 2's; every file is where the pods mount their own
	// Secret (tier 2's server certificate, tier 1's client certificate):
	// neither holds the other's key. Tier 2 also takes tier 1's token only.
	tier2TLS, tier1TLS := dig(protocols, "grpc", "tls"), dig(tier1, "exporters", "load_balancing", "protocol", "otlp", "tls")
	assert.NotEqual(t, true, dig(tier1TLS, "insecure"))
	files := map[string][]string{
		"otelcol-tier2": {envDefault(dig(tier2TLS, "client_ca_file")), envDefault(dig(tier2TLS, "cert_file")), envDefault(dig(tier2TLS, "key_file"))},
		"otelcol-tier1": {envDefault(dig(tier1TLS, "ca_file")), envDefault(dig(tier1TLS, "cert_file")), envDefault(dig(tier1TLS, "key_file"))},
	}
	secrets := map[string]string{"otelcol-tier2": "otelcol-tls", "otelcol-tier1": "otelcol-tier1-client-tls"}
	pods := deployedPods(ctx, t, cs)
	for name := range files {
		mounted := secretFiles(pods[name], secrets[name])
		for _, f := range files[name] {
			assert.Contains(t, mounted, f, "%s: TLS file from Secret %s", name, secrets[name])
		}
	}
	assert.Equal(t, "k8stokenauth", dig(protocols, "grpc", "auth", "authenticator"), "tier 2 authenticates tier 1")
	assert.Equal(t, "bearertokenauth/tier2", dig(tier1, "exporters", "load_balancing", "protocol", "otlp", "auth", "authenticator"), "tier 1 sends its token")
}

// checkPodSecurity: the namespace enforces restricted (a pod with no
// security context is refused) and every workload's pod is admitted.
func checkPodSecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, deployNamespace, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: deployNamespace},
		Spec: corev1.PodSpec{ServiceAccountName: "otelcol-tier1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err = cs.CoreV1().Pods(deployNamespace).Create(ctx, bare, dryRun)
	require.True(t, apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity"),
		"a pod without a security context must be refused here: %v", err)
	for name, spec := range deployedPods(ctx, t, cs) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: deployNamespace}, Spec: spec}
		_, err := cs.CoreV1().Pods(deployNamespace).Create(ctx, pod, dryRun)
		assert.NoError(t, err, "%s's pod under the restricted Pod Security Standard", name)
	}
}

// deployedPods is the pod spec of each workload, a StatefulSet's claims as
// volumes of the pod.
func deployedPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	sts, err := cs.AppsV1().StatefulSets(deployNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range sts.Items {
		spec := s.Spec.Template.Spec
		for _, c := range s.Spec.VolumeClaimTemplates {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + s.Name + "-0"}}})
		}
		out[s.Name] = spec
	}
	deps, err := cs.AppsV1().Deployments(deployNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deps.Items {
		out[d.Name] = d.Spec.Template.Spec
	}
	require.Len(t, out, 3, "the mirror, tier 1 and tier 2")
	return out
}

// secretFiles lists the paths at which the first container sees the keys
// of secret (secret volumes and projected volumes' secret sources).
func secretFiles(pod corev1.PodSpec, secret string) []string {
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var out []string
	add := func(volume string, s *corev1.SecretProjection) {
		if s != nil && s.Name == secret {
			for _, it := range s.Items {
				out = append(out, path.Join(mounts[volume], it.Path))
			}
		}
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			add(v.Name, &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName}, Items: v.Secret.Items})
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				add(v.Name, src.Secret)
			}
		}
	}
	return out
}

// deployedConfig is the collector configuration of a ConfigMap of deploy/
// as the collector reads it: config.yaml, then chart.yaml merged over it.
func deployedConfig(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) map[string]any {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(deployNamespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	var cfg, chart map[string]any
	require.NoError(t, utilyaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg), name)
	require.NoError(t, utilyaml.Unmarshal([]byte(cm.Data["chart.yaml"]), &chart), name)
	return mergeConfig(cfg, chart)
}

// mergeConfig is over merged into base as the collector merges its
// --config files: maps key by key, anything else (lists included)
// replaced.
func mergeConfig(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		b, bok := out[k].(map[string]any)
		o, ook := v.(map[string]any)
		if bok && ook {
			out[k] = mergeConfig(b, o)
		} else {
			out[k] = v
		}
	}
	return out
}

// dig walks nested maps; nil where a key is missing.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var envRef = regexp.MustCompile(`^\$\{env:[A-Za-z0-9_]+:-(.*)\}$`)

// envDefault is a configuration value as the collector reads it with its
// variable unset: ${env:NAME:-default} gives default.
func envDefault(v any) string {
	s, _ := v.(string)
	if m := envRef.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// sprint prints v as JSON-like text, for comparing API objects with the
// shape a manifest writes.
func sprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var norm any
	_ = json.Unmarshal(b, &norm)
	out, _ := json.Marshal(norm)
	return string(out)
}
