package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
)

// What the chart tells Prometheus and the collectors about scraping, read
// from its rendering in deploy/: the ServiceMonitor of deploy/monitoring/
// selects Services, which name ports of the workloads' containers, where
// the collectors' chart.yaml puts their metrics reader and exact counts'
// exporter. A Prometheus Operator scraping it labels every series with the
// target's namespace, service, job (the Service's name), pod, container
// and endpoint (the port's name); a multi-cluster setup adds cluster (an
// external label).

// scrapeCluster is the cluster label the test's "Prometheus" adds.
const scrapeCluster = "e2e"

// chartTarget is one workload as the ServiceMonitor scrapes it.
type chartTarget struct {
	workload  string
	container corev1.Container
	configs   [2]string        // its ConfigMap's config.yaml and chart.yaml
	ports     map[string]int32 // endpoint (port name) -> the container's port
	labels    map[string]string
}

// chartTargets reads deploy/'s workloads, ConfigMaps, Services and
// ServiceMonitor: each workload the ServiceMonitor reaches, the ports it
// scrapes there and the labels of its series. It checks that the
// collectors listen where the ServiceMonitor scrapes: the chart.yaml
// reader's port is the container's port named metrics, its exact counts'
// exporter the one named exact-counts.
func chartTargets(t *testing.T) map[string]chartTarget {
	t.Helper()
	objs := manifests(t, "collector.yaml", "otlp-tier1.yaml", "otlp-tier2.yaml", "monitoring/servicemonitor.yaml")
	var sm struct {
		Spec struct {
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port string `json:"port"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	pods := map[string]corev1.PodTemplateSpec{}
	configMaps := map[string]corev1.ConfigMap{}
	var services []corev1.Service
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceMonitor":
			fromUnstructured(t, o, &sm)
		case "StatefulSet":
			var s appsv1.StatefulSet
			fromUnstructured(t, o, &s)
			pods[s.Name] = s.Spec.Template
		case "Deployment":
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			pods[d.Name] = d.Spec.Template
		case "ConfigMap":
			var cm corev1.ConfigMap
			fromUnstructured(t, o, &cm)
			configMaps[cm.Name] = cm
		case "Service":
			var svc corev1.Service
			fromUnstructured(t, o, &svc)
			services = append(services, svc)
		}
	}
	require.NotEmpty(t, sm.Spec.Endpoints, "deploy/monitoring/servicemonitor.yaml")
	selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)

	targets := map[string]chartTarget{}
	for _, svc := range services {
		if !selector.Matches(labels.Set(svc.Labels)) {
			continue
		}
		assert.Contains(t, sm.Spec.NamespaceSelector.MatchNames, svc.Namespace, svc.Name)
		for name, pod := range pods {
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				continue
			}
			c := pod.Spec.Containers[0]
			tg := chartTarget{workload: name, container: c, ports: map[string]int32{},
				configs: [2]string{configMaps[name].Data["config.yaml"], configMaps[name].Data["chart.yaml"]},
				labels: map[string]string{"namespace": svc.Namespace, "service": svc.Name, "job": svc.Name,
					"pod": name + "-0", "container": c.Name, "cluster": scrapeCluster}}
			for _, ep := range sm.Spec.Endpoints {
				for _, sp := range svc.Spec.Ports {
					if sp.Name != ep.Port {
						continue
					}
					for _, cp := range c.Ports {
						if cp.Name == sp.TargetPort.String() {
							tg.ports[ep.Port] = cp.ContainerPort
						}
					}
					require.Contains(t, tg.ports, ep.Port, "%s: Service port %s names no container port", name, ep.Port)
				}
			}
			targets[name] = tg
		}
	}
	require.Len(t, targets, 3, "the ServiceMonitor reaches the mirror, tier 1 and tier 2")
	for name, tg := range targets {
		var cfg map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(tg.configs[1]), &cfg), name)
		readers, _ := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)
		require.Len(t, readers, 1, name)
		assert.EqualValues(t, tg.ports["metrics"], dig(readers[0], "pull", "exporter", "prometheus", "port"),
			"%s: the metrics reader listens on the port the ServiceMonitor scrapes", name)
		if port, ok := tg.ports["exact-counts"]; ok {
			assert.Equal(t, fmt.Sprintf("${env:POD_IP}:%d", port), dig(cfg, "exporters", "prometheus", "endpoint"),
				"%s: the exact counts' exporter listens on the port the ServiceMonitor scrapes", name)
		}
	}
	return targets
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, v any) {
	t.Helper()
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, v), "%s %s", o.GetKind(), o.GetName())
}

// scrapedTarget is a collector of the test run as a chart's target: its
// endpoints here and the labels Prometheus would give their series.
type scrapedTarget struct {
	urls   []string
	labels map[string]string
}

// onLoopback is the target's chart.yaml with its listeners moved to free
// loopback ports (host 127.0.0.1, the pod's address, and ports of the
// test's; nothing else changed), and the target as scraped there.
func (tg chartTarget) onLoopback(t *testing.T) (string, scrapedTarget) {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(tg.configs[1]), &cfg))
	st := scrapedTarget{labels: map[string]string{}}
	for k, v := range tg.labels {
		st.labels[k] = v
	}
	metrics := freePort(t)
	reader := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)[0]
	prom := dig(reader, "pull", "exporter", "prometheus").(map[string]any)
	prom["host"], prom["port"] = "127.0.0.1", metrics
	st.urls = append(st.urls, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if _, ok := tg.ports["exact-counts"]; ok {
		exact := freePort(t)
		dig(cfg, "exporters", "prometheus").(map[string]any)["endpoint"] = "127.0.0.1:" + strconv.Itoa(exact)
		st.urls = append(st.urls, fmt.Sprintf("http://127.0.0.1:%d/metrics", exact))
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return string(out), st
}

// env is the container's environment as its pod has it on loopback
// (the downward API's fields resolved), with more of the test's.
func (tg chartTarget) env(t *testing.T, more ...string) []string {
	t.Helper()
	var env []string
	for _, e := range tg.container.Env {
		v := e.Value
		if e.ValueFrom != nil {
			v = map[string]string{"metadata.namespace": tg.labels["namespace"], "metadata.name": tg.labels["pod"],
				"status.podIP": "127.0.0.1"}[e.ValueFrom.FieldRef.FieldPath]
		}
		env = append(env, e.Name+"="+v)
	}
	return append(env, more...)
}

// startScraped runs the collector with cfg and overlays (the last ones
// win), and a health_check on a free loopback port; its metrics are where
// its overlays put them.
func startScraped(t *testing.T, dir, cfg string, env []string, overlays ...string) *collectorproc.Collector {
	t.Helper()
	health := freePort(t)
	overlays = append(overlays, fmt.Sprintf("extensions:\n  health_check: {endpoint: \"127.0.0.1:%d\"}\n", health))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := collectorproc.Start(ctx, collectorproc.Options{Binary: binary(t), Config: cfg, Overlays: overlays, Dir: dir, Env: env,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", health)})
	require.NoError(t, err, "config:\n%s\noverlays:\n%s", cfg, strings.Join(overlays, "---\n"))
	t.Cleanup(func() {
		if exited, _ := c.Exited(); !exited {
			_ = c.Stop(30 * time.Second)
		}
		if t.Failed() {
			t.Logf("collector log (%s):\n%s", c.LogPath(), c.LogTail(8192))
		}
	})
	return c
}

// scrapeTargets reads every target's endpoints into one exposition, each
// series with its target's labels.
func scrapeTargets(ctx context.Context, targets []scrapedTarget) (exposition, error) {
	var e exposition
	for _, tg := range targets {
		if err := e.scrape(ctx, tg.urls, tg.labels); err != nil {
			return e, err
		}
	}
	return e, nil
}

// alertRules are the alerts of deploy/monitoring/prometheusrule.yaml: name -> expression.
func alertRules(t *testing.T) map[string]string {
	t.Helper()
	objs := manifests(t, "monitoring/prometheusrule.yaml")
	require.Len(t, objs, 1)
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	fromUnstructured(t, objs[0], &pr)
	rules := map[string]string{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r.Expr
		}
	}
	require.NotEmpty(t, rules)
	return rules
}
