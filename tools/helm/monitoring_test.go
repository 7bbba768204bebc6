package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// TestHelmMonitoring renders every monitoring toggle and reads the objects
// as the Prometheus Operator's Go types, strictly: the ServiceMonitor
// selects exactly the release's collector Services and scrapes the ports
// they name, which are the containers' ports the collectors' metrics
// readers and exact-count exporters listen on; the PodMonitor selects the
// collector pods (not the helm test pod) with the workload's name as its
// job, as the ServiceMonitor's job is the Service's name; each
// NetworkPolicy lets metrics.allowFrom reach exactly those ports; the
// PrometheusRule's alerts read the release's namespace and jobs and carry
// a severity, a summary and a runbook; the dashboard's ConfigMap holds the
// dashboard as it is. Off, none of them is rendered.
func TestHelmMonitoring(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	vals := everything()
	vals["metrics"] = map[string]any{"allowFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}}}
	out, err := render(ch, vals, "events")
	require.NoError(t, err)
	objs := objects(t, out)
	jobs := []string{"otel-k8sevents", "otelcol-tier1", "otelcol-tier2"}

	var sm monitoringv1.ServiceMonitor
	decode(t, objs, "ServiceMonitor", "otel-k8sevents", &sm)
	assert.Equal(t, "kube-prometheus-stack", sm.Labels["release"], "serviceMonitor.extraLabels")
	assert.Equal(t, []string{"events"}, sm.Spec.NamespaceSelector.MatchNames)
	selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)
	scraped := map[string][]string{} // Service -> the ports scraped
	for _, o := range objs {
		if o.kind != "Service" || !selector.Matches(labels.Set(o.labels)) {
			continue
		}
		var svc corev1.Service
		decode(t, objs, "Service", o.name, &svc)
		for _, ep := range sm.Spec.Endpoints {
			assert.EqualValues(t, "30s", ep.Interval)
			for _, p := range svc.Spec.Ports {
				if p.Name == ep.Port {
					scraped[o.name] = append(scraped[o.name], p.Name)
					assert.Equal(t, p.Name, p.TargetPort.String(), "%s: the Service's port is the container's of the same name", o.name)
				}
			}
		}
	}
	assert.Equal(t, map[string][]string{
		"otel-k8sevents": {"metrics", "exact-counts"}, "otelcol-tier1": {"metrics"}, "otelcol-tier2": {"metrics", "exact-counts"},
	}, scraped, "the ServiceMonitor scrapes every collector's Service, and nothing else")

	pods := workloads(t, objs)
	for name, pod := range pods {
		cfg := chartConfigOf(t, objs, name)
		ports := map[string]int32{}
		for _, p := range pod.Spec.Containers[0].Ports {
			ports[p.Name] = p.ContainerPort
		}
		reader := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)[0]
		assert.Equal(t, float64(ports["metrics"]), dig(reader, "pull", "exporter", "prometheus", "port"), "%s: the reader listens on the port named metrics", name)
		assert.Equal(t, "${env:POD_IP}", dig(reader, "pull", "exporter", "prometheus", "host"), name)
		if exact, ok := ports["exact-counts"]; ok {
			assert.Equal(t, "${env:POD_IP}:"+strconv.Itoa(int(exact)), dig(cfg, "exporters", "prometheus", "endpoint"), name)
		}
		var np networkingv1.NetworkPolicy
		decode(t, objs, "NetworkPolicy", name, &np)
		rule := np.Spec.Ingress[len(np.Spec.Ingress)-1]
		assert.Equal(t, "monitoring", rule.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"], name)
		var allowed []int32
		for _, p := range rule.Ports {
			allowed = append(allowed, p.Port.IntVal)
		}
		var want []int32
		for _, n := range []string{"metrics", "exact-counts"} {
			if p, ok := ports[n]; ok {
				want = append(want, p)
			}
		}
		assert.Equal(t, want, allowed, "%s: Prometheus may reach the metrics ports, and only those", name)
	}

	var pm monitoringv1.PodMonitor
	decode(t, objs, "PodMonitor", "otel-k8sevents", &pm)
	assert.Equal(t, "app.kubernetes.io/name", pm.Spec.JobLabel)
	podSelector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	require.NoError(t, err)
	for name, pod := range pods {
		assert.True(t, podSelector.Matches(labels.Set(pod.Labels)), "the PodMonitor selects %s", name)
		assert.Equal(t, name, pod.Labels[pm.Spec.JobLabel], "%s: its job is its name, as the ServiceMonitor's", name)
	}
	for _, o := range objs {
		if o.kind == "Pod" {
			assert.False(t, podSelector.Matches(labels.Set(o.labels)), "the PodMonitor must not select the helm test pod %s", o.name)
		}
	}
	var endpoints []string
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		endpoints = append(endpoints, *ep.Port)
	}
	assert.Equal(t, []string{"metrics", "exact-counts"}, endpoints)

	var pr monitoringv1.PrometheusRule
	decode(t, objs, "PrometheusRule", "otel-k8sevents", &pr)
	require.Len(t, pr.Spec.Groups, 1)
	selectors := regexp.MustCompile(`([a-z_]+)\{([^}]*)\}`)
	var alerts []string
	for _, r := range pr.Spec.Groups[0].Rules {
		alerts = append(alerts, r.Alert)
		expr := r.Expr.String()
		for _, m := range selectors.FindAllStringSubmatch(expr, -1) {
			assert.Contains(t, m[2], `namespace="events", job=~"`+strings.Join(jobs, "|")+`"`, "%s: %s reads this release's collectors", r.Alert, m[1])
		}
		assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
		assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
		assert.NotEmpty(t, r.Annotations["description"], r.Alert)
		assert.Equal(t, "https://github.com/k8sevents/otel-k8sevents/blob/main/docs/dashboard.md#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"])
	}
	docs, err := os.ReadFile(filepath.Join(root, "docs", "dashboard.md"))
	require.NoError(t, err)
	for _, a := range alerts {
		assert.True(t, strings.Contains(string(docs), "### "+a+"\n"), "docs/dashboard.md has the runbook of %s", a)
	}
	assert.Len(t, alerts, 8)

	var dash corev1.ConfigMap
	decode(t, objs, "ConfigMap", "otel-k8sevents-dashboard", &dash)
	assert.Equal(t, "grafana", dash.Namespace)
	assert.Equal(t, "1", dash.Labels["grafana_dashboard"])
	assert.Equal(t, "Kubernetes", dash.Annotations["grafana_folder"])
	file, err := os.ReadFile(filepath.Join(root, "deploy", "dashboards", "otel-k8sevents.json"))
	require.NoError(t, err)
	assert.True(t, string(file) == dash.Data["otel-k8sevents.json"], "the ConfigMap holds the dashboard as it is")

	out, err = render(ch, allOn(), "events")
	require.NoError(t, err)
	for _, o := range objects(t, out) {
		assert.False(t, slices.Contains([]string{"ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate"}, o.kind), "%s rendered by default", o.kind)
		assert.NotEqual(t, "otel-k8sevents-dashboard", o.name)
	}
	_, err = render(ch, merge(everything(), map[string]any{"metrics": map[string]any{"enabled": false}}), "events")
	assert.ErrorContains(t, err, "needs metrics.enabled")
}

// TestHelmCertificate: the cert-manager Certificate writes the tiers'
// Secret for the names tier 1 dials (every tier-2 pod) and, with tier 1's
// TLS on the same Secret, the tier-1 Service's names apps dial; it needs
// an issuer.
func TestHelmCertificate(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	var cert struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
			Labels          map[string]string
		} `json:"metadata"`
		Spec struct {
			SecretName  string            `json:"secretName"`
			CommonName  string            `json:"commonName"`
			DNSNames    []string          `json:"dnsNames"`
			Usages      []string          `json:"usages"`
			Duration    string            `json:"duration"`
			RenewBefore string            `json:"renewBefore"`
			PrivateKey  map[string]any    `json:"privateKey"`
			IssuerRef   map[string]string `json:"issuerRef"`
		} `json:"spec"`
	}
	out, err := render(ch, everything(), "events")
	require.NoError(t, err)
	objs := objects(t, out)
	// One certificate per role: no pod holds a key it does not need.
	for name, want := range map[string]struct {
		cn     string
		dns    []string
		usages []string
	}{
		"otelcol-tls": {"otelcol-tier2", []string{"*.otelcol-tier2", "*.otelcol-tier2.events.svc", "*.otelcol-tier2.events.svc.cluster.local"},
			[]string{"server auth", "digital signature"}},
		"otelcol-tier1-client-tls": {"otelcol-tier1", nil, []string{"client auth", "digital signature"}},
		"otelcol-tier1-tls": {"otelcol-tier1", []string{"otelcol-tier1", "otelcol-tier1.events", "otelcol-tier1.events.svc", "otelcol-tier1.events.svc.cluster.local"},
			[]string{"server auth", "digital signature"}},
	} {
		cert.Spec.DNSNames = nil
		decode(t, objs, "Certificate", name, &cert)
		assert.Equal(t, "cert-manager.io/v1", cert.APIVersion, name)
		assert.Equal(t, name, cert.Spec.SecretName)
		assert.Equal(t, want.cn, cert.Spec.CommonName, name)
		assert.Equal(t, want.dns, cert.Spec.DNSNames, name)
		assert.Equal(t, want.usages, cert.Spec.Usages, name)
		assert.Equal(t, map[string]string{"name": "ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}, cert.Spec.IssuerRef, name)
	}
	pods := workloads(t, objs)
	assert.Equal(t, []string{"otelcol-tls"}, secretsOf(pods["otelcol-tier2"].Spec))
	assert.Equal(t, []string{"otelcol-tier1-client-tls", "otelcol-tier1-tls"}, secretsOf(pods["otelcol-tier1"].Spec))

	_, err = render(ch, merge(everything(), map[string]any{"otlp": map[string]any{"enabled": true,
		"tls": map[string]any{"certManager": map[string]any{"enabled": true}}}}), "events")
	assert.ErrorContains(t, err, "otlp.tls.certManager.issuerRef.name is required")
}

func secretsOf(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					out = append(out, s.Secret.Name)
				}
			}
		}
	}
	return out
}

// chartConfigOf is the chart.yaml of a workload's ConfigMap.
func chartConfigOf(t *testing.T, objs []object, name string) map[string]any {
	t.Helper()
	var cm corev1.ConfigMap
	decode(t, objs, "ConfigMap", name, &cm)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["chart.yaml"]), &cfg), name)
	return cfg
}

// TestHelmMetricsOff: without metrics.enabled no reader is added (the
// collector's default, localhost only) and no metrics port opened; the
// exact counts keep theirs; with both off the mirror takes no ingress at
// all. The pods' labels leave out the chart's version, so that a new chart
// alone rolls no pod.
func TestHelmMetricsOff(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	for _, exact := range []bool{true, false} {
		out, err := render(ch, merge(allOn(), map[string]any{"metrics": map[string]any{"enabled": false},
			"exactCounts": map[string]any{"enabled": exact}}), "events")
		require.NoError(t, err)
		objs := objects(t, out)
		for name, pod := range workloads(t, objs) {
			assert.Nil(t, dig(chartConfigOf(t, objs, name), "service", "telemetry"), "%s: no reader", name)
			assert.NotContains(t, pod.Labels, "helm.sh/chart", name)
			assert.NotContains(t, pod.Labels, "app.kubernetes.io/version", name)
			var ports []string
			for _, p := range pod.Spec.Containers[0].Ports {
				ports = append(ports, p.Name)
			}
			assert.NotContains(t, ports, "metrics", name)
			assert.Equal(t, exact && name != "otelcol-tier1", slices.Contains(ports, "exact-counts"), name)
			var np networkingv1.NetworkPolicy
			decode(t, objs, "NetworkPolicy", name, &np)
			var allowed []int32
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					allowed = append(allowed, p.Port.IntVal)
				}
			}
			want := map[string][]int32{"otel-k8sevents": nil, "otelcol-tier1": {4317, 4318}, "otelcol-tier2": {4317}}[name]
			if exact && name != "otelcol-tier1" {
				want = append(want, 9464)
			}
			assert.Equal(t, want, allowed, "%s, exact counts %v", name, exact)
		}
	}
}
