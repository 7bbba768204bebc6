package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// object is one rendered YAML document, by its kind and name.
type object struct {
	kind, name, namespace, doc string
	labels                     map[string]string
}

// objects reads every document of rendered (its kind, name, namespace and
// labels), the helm test hooks included.
func objects(t *testing.T, rendered map[string]string) []object {
	t.Helper()
	var out []object
	for _, doc := range documents(rendered) {
		var head struct {
			Kind     string
			Metadata struct {
				Name, Namespace string
				Labels          map[string]string
			}
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head), doc)
		if head.Kind == "" {
			continue // a template of comments only
		}
		out = append(out, object{head.Kind, head.Metadata.Name, head.Metadata.Namespace, doc, head.Metadata.Labels})
	}
	return out
}

// decode reads the one object of kind and name strictly into v (a field
// its Go type does not have fails).
func decode(t *testing.T, objs []object, kind, name string, v any) {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			require.NoError(t, yaml.UnmarshalStrict([]byte(o.doc), v), "%s %s", kind, name)
			return
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
}

// workloads are the pod templates of the release: name -> pod spec and labels.
func workloads(t *testing.T, objs []object) map[string]corev1.PodTemplateSpec {
	t.Helper()
	out := map[string]corev1.PodTemplateSpec{}
	for _, o := range objs {
		switch o.kind {
		case "StatefulSet":
			var s appsv1.StatefulSet
			decode(t, objs, o.kind, o.name, &s)
			out[o.name] = s.Spec.Template
		case "Deployment":
			var d appsv1.Deployment
			decode(t, objs, o.kind, o.name, &d)
			out[o.name] = d.Spec.Template
		}
	}
	return out
}

var digest = "sha256:" + strings.Repeat("0123456789abcdef", 4)

// allOn is both shapes, by digest.
func allOn() map[string]any {
	return map[string]any{"image": map[string]any{"digest": digest}, "otlp": map[string]any{"enabled": true}}
}

// TestHelmPodKnobs: the pod values of the official collector chart reach
// every workload's pod (the mirror, tier 1, tier 2), as strictly decoded
// Kubernetes objects: pull secrets and policy, placement (nodeSelector,
// tolerations, affinity, priority class), annotations and labels,
// commonLabels on every object, more env, volumes and mounts, the
// startupProbe, and a securityContext whose user and group OpenShift
// assigns. Topology spread: the tiers across nodes by default, with the
// pods' own selector; one with a selector of its own keeps it.
func TestHelmPodKnobs(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)

	out, err := render(ch, allOn(), "otel-k8sevents")
	require.NoError(t, err)
	pods := workloads(t, objects(t, out))
	require.Len(t, pods, 3)
	for name, pod := range pods {
		spread := pod.Spec.TopologySpreadConstraints
		if name == "otel-k8sevents" {
			assert.Empty(t, spread, "the mirror: one replica")
			continue
		}
		require.Len(t, spread, 1, name)
		assert.Equal(t, "kubernetes.io/hostname", spread[0].TopologyKey, name)
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": name}, spread[0].LabelSelector.MatchLabels, "%s: its own pods", name)
		assert.Equal(t, corev1.ScheduleAnyway, spread[0].WhenUnsatisfiable, name)
		c := pod.Spec.Containers[0]
		assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, name)
		assert.NotNil(t, c.StartupProbe, "%s: a startupProbe by default", name)
		assert.EqualValues(t, 65532, *pod.Spec.SecurityContext.RunAsUser, name)
	}

	zone := map[string]any{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "two"}}}
	knobs := map[string]any{
		"image":             map[string]any{"digest": digest, "pullPolicy": "Always"},
		"imagePullSecrets":  []any{map[string]any{"name": "regcred"}},
		"commonLabels":      map[string]any{"team": "platform"},
		"podAnnotations":    map[string]any{"example.com/scrape": "yes"},
		"podLabels":         map[string]any{"cost-center": "42"},
		"priorityClassName": "events-critical",
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "observability", "effect": "NoSchedule"}},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"infra"}}}}}}}},
		"extraEnvs":          []any{map[string]any{"name": "K8S_QPS", "value": "50"}},
		"extraVolumes":       []any{map[string]any{"name": "extra-ca", "configMap": map[string]any{"name": "corp-ca"}}},
		"extraVolumeMounts":  []any{map[string]any{"name": "extra-ca", "mountPath": "/etc/corp-ca", "readOnly": true}},
		"startupProbe":       map[string]any{"httpGet": map[string]any{"path": "/", "port": "health"}, "failureThreshold": 120},
		"podSecurityContext": map[string]any{"runAsUser": nil, "fsGroup": nil}, // OpenShift's restricted-v2 assigns them
		"otlp": map[string]any{"enabled": true,
			"tier2": map[string]any{"topologySpreadConstraints": []any{zone}}},
	}
	out, err = render(ch, knobs, "otel-k8sevents")
	require.NoError(t, err)
	objs := objects(t, out)
	for _, o := range objs {
		assert.Equal(t, "platform", o.labels["team"], "commonLabels on %s %s", o.kind, o.name)
		assert.Equal(t, "otel-k8sevents", o.labels["app.kubernetes.io/instance"], "%s %s", o.kind, o.name)
	}
	pods = workloads(t, objs)
	require.Len(t, pods, 3)
	for name, pod := range pods {
		s := pod.Spec
		assert.Equal(t, "yes", pod.Annotations["example.com/scrape"], name)
		assert.NotEmpty(t, pod.Annotations["checksum/config"], name)
		assert.Equal(t, "42", pod.Labels["cost-center"], name)
		assert.Equal(t, "platform", pod.Labels["team"], name)
		assert.Equal(t, name, pod.Labels["app.kubernetes.io/name"], "%s: the selector's label", name)
		assert.Equal(t, []corev1.LocalObjectReference{{Name: "regcred"}}, s.ImagePullSecrets, name)
		assert.Equal(t, "events-critical", s.PriorityClassName, name)
		assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, s.NodeSelector, name)
		require.Len(t, s.Tolerations, 1, name)
		assert.Equal(t, "observability", s.Tolerations[0].Value, name)
		require.NotNil(t, s.Affinity, name)
		assert.Equal(t, "pool", s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key, name)
		assert.Nil(t, s.SecurityContext.RunAsUser, "%s: runAsUser left to the platform", name)
		assert.Nil(t, s.SecurityContext.FSGroup, name)
		assert.True(t, *s.SecurityContext.RunAsNonRoot, "%s: still restricted", name)
		c := s.Containers[0]
		assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy, name)
		assert.Equal(t, "50", envOf(c.Env, "K8S_QPS"), name)
		assert.EqualValues(t, 120, c.StartupProbe.FailureThreshold, name)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "extra-ca", MountPath: "/etc/corp-ca", ReadOnly: true}, name)
		var extra []string
		for _, v := range s.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == "corp-ca" {
				extra = append(extra, v.Name)
			}
		}
		assert.Equal(t, []string{"extra-ca"}, extra, name)
	}
	spread := pods["otelcol-tier2"].Spec.TopologySpreadConstraints
	require.Len(t, spread, 1)
	assert.Equal(t, "topology.kubernetes.io/zone", spread[0].TopologyKey)
	assert.Equal(t, map[string]string{"tier": "two"}, spread[0].LabelSelector.MatchLabels, "a selector of its own is kept")
	assert.Equal(t, "topology.kubernetes.io/zone", spread[0].TopologyKey)
}

// TestHelmTier1TLS: otlp.tier1.tls serves both OTLP listeners over TLS
// with a certificate of their own, projected under listener-tls/ (never
// tier 2's server certificate); the per-client budget reaches the
// receiver's environment.
func TestHelmTier1TLS(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	tier1 := func(vals map[string]any) (corev1.PodTemplateSpec, map[string]any) {
		out, err := render(ch, merge(allOn(), map[string]any{"otlp": map[string]any{"enabled": true, "tier1": vals}}), "otel-k8sevents")
		require.NoError(t, err)
		objs := objects(t, out)
		var cm corev1.ConfigMap
		decode(t, objs, "ConfigMap", "otelcol-tier1", &cm)
		var chartConfig map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(cm.Data["chart.yaml"]), &chartConfig))
		return workloads(t, objs)["otelcol-tier1"], chartConfig
	}

	pod, cfg := tier1(map[string]any{"recordsPerSecond": 5, "burst": 50})
	assert.Nil(t, dig(cfg, "receivers"), "no TLS by default")
	assert.Equal(t, "5", envOf(pod.Spec.Containers[0].Env, "CLIENT_RECORDS_PER_SECOND"))
	assert.Equal(t, "50", envOf(pod.Spec.Containers[0].Env, "CLIENT_BURST"))

	for _, c := range []struct {
		secret, dir string
		secrets     []string
	}{
		{"", "/etc/otelcol/listener-tls", []string{"otelcol-tier1-client-tls", "otelcol-tier1-tls"}},
		{"tier1-listener", "/etc/otelcol/listener-tls", []string{"otelcol-tier1-client-tls", "tier1-listener"}},
	} {
		pod, cfg := tier1(map[string]any{"tls": map[string]any{"enabled": true, "secretName": c.secret}})
		for _, p := range []string{"grpc", "http"} {
			tls := dig(cfg, "receivers", "k8seventsotlp", "protocols", p, "tls")
			assert.Equal(t, c.dir+"/tls.crt", dig(tls, "cert_file"), "%s %q", p, c.secret)
			assert.Equal(t, c.dir+"/tls.key", dig(tls, "key_file"), "%s %q", p, c.secret)
		}
		var secrets, files []string
		for _, src := range pod.Spec.Volumes[0].Projected.Sources {
			if src.Secret != nil {
				secrets = append(secrets, src.Secret.Name)
				for _, it := range src.Secret.Items {
					files = append(files, "/etc/otelcol/"+it.Path)
				}
			}
		}
		assert.Equal(t, c.secrets, secrets)
		assert.Contains(t, files, c.dir+"/tls.crt")
		assert.Contains(t, files, c.dir+"/tls.key")
	}
}

// TestHelmSchemaRefuses: values.schema.json refuses a misspelt key at any
// depth and a value of the wrong type or out of range, naming where; the
// defaults and every value set at once pass.
func TestHelmSchemaRefuses(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	for vals, want := range map[string]string{
		`mirror: {reportingControler: example.com/m}`:       "at '/mirror': additional properties 'reportingControler' not allowed",
		`otlp: {tier2: {replica: 4}}`:                       "at '/otlp/tier2': additional properties 'replica' not allowed",
		`serviceMonitr: {enabled: true}`:                    "additional properties 'serviceMonitr' not allowed",
		`otlp: {tier2: {replicas: "3"}}`:                    "at '/otlp/tier2/replicas': got string, want integer",
		`otlp: {tier2: {replicas: 0}}`:                      "at '/otlp/tier2/replicas'",
		`image: {pullPolicy: Sometimes}`:                    "at '/image/pullPolicy'",
		`metrics: {port: 70000}`:                            "at '/metrics/port'",
		`mirror: {goMemLimit: 200M}`:                        "at '/mirror/goMemLimit'",
		`mirror: {reportingController: "not a controller"}`: "at '/mirror/reportingController'",
		`extraEnvs: [{value: x}]`:                           "at '/extraEnvs/0': missing property 'name'",
		`fullnameOverride: Events_B`:                        "at '/fullnameOverride'",
	} {
		var v map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(vals), &v))
		_, err := render(ch, merge(allOn(), v), "otel-k8sevents")
		assert.ErrorContains(t, err, want, vals)
	}
	_, err = render(ch, allOn(), "otel-k8sevents")
	require.NoError(t, err)
	_, err = render(ch, everything(), "otel-k8sevents")
	require.NoError(t, err, "every value at once")
}

// everything sets every value of values.yaml that adds objects or keys
// (both shapes, every monitor, the dashboard, cert-manager, tier 1's TLS).
func everything() map[string]any {
	return map[string]any{
		"image":            map[string]any{"digest": digest},
		"otlp":             map[string]any{"enabled": true, "tls": map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca", "kind": "ClusterIssuer"}}}, "tier1": map[string]any{"tls": map[string]any{"enabled": true}}},
		"serviceMonitor":   map[string]any{"enabled": true, "interval": "30s", "extraLabels": map[string]any{"release": "kube-prometheus-stack"}},
		"podMonitor":       map[string]any{"enabled": true, "interval": "30s"},
		"prometheusRule":   map[string]any{"enabled": true, "extraLabels": map[string]any{"release": "kube-prometheus-stack"}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana", "annotations": map[string]any{"grafana_folder": "Kubernetes"}},
	}
}

// TestHelmTwoReleases: two releases of other names render disjoint names
// for every object (namespaced ones in one namespace, cluster-wide ones
// anywhere), each wired to its own: ServiceAccounts in the bindings and
// the admission policy, the Lease, tier 1's ring and NetworkPolicies, the
// monitors' selectors. The default release keeps deploy/'s names.
func TestHelmTwoReleases(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	names := map[string]string{} // kind/namespace/name -> release
	for _, rel := range []string{"otel-k8sevents", "events-b", "events-c"} {
		vals := everything()
		if rel == "events-c" {
			vals["fullnameOverride"] = "evc"
		}
		out, err := renderRelease(ch, vals, rel, "shared", false)
		require.NoError(t, err)
		objs := objects(t, out)
		for _, o := range objs {
			key := fmt.Sprintf("%s/%s/%s", o.kind, o.namespace, o.name)
			assert.Empty(t, names[key], "%s of %s is also %s's", key, rel, names[key])
			names[key] = rel
			assert.Equal(t, rel, o.labels["app.kubernetes.io/instance"], key)
		}
		want := map[string][3]string{ // the mirror, tier 1, tier 2
			"otel-k8sevents": {"otel-k8sevents", "otelcol-tier1", "otelcol-tier2"},
			"events-b":       {"events-b-otel-k8sevents", "events-b-otel-k8sevents-tier1", "events-b-otel-k8sevents-tier2"},
			"events-c":       {"evc", "evc-tier1", "evc-tier2"},
		}[rel]
		mirror, tier1, tier2 := want[0], want[1], want[2]
		pods := workloads(t, objs)
		assert.ElementsMatch(t, []string{mirror, tier1, tier2}, keysOf(pods), rel)
		assert.Equal(t, mirror, envOf(pods[mirror].Spec.Containers[0].Env, "LEASE_NAME"), rel)
		assert.Contains(t, envOf(pods[tier1].Spec.Containers[0].Env, "TIER2_ENDPOINTS"), tier2+"-0."+tier2+":4317", rel)
		for _, o := range objs {
			if o.kind == "ClusterRoleBinding" || o.kind == "RoleBinding" {
				var b rbacv1.ClusterRoleBinding // the same fields as a RoleBinding's
				require.NoError(t, yaml.Unmarshal([]byte(o.doc), &b))
				for _, s := range b.Subjects {
					assert.Contains(t, []string{mirror, tier1, tier2, mirror + "-test"}, s.Name, "%s %s of %s binds another release's account", o.kind, o.name, rel)
				}
			}
		}
		var np networkingv1.NetworkPolicy
		decode(t, objs, "NetworkPolicy", tier2, &np)
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": tier1}, np.Spec.Ingress[0].From[0].PodSelector.MatchLabels, rel)
		policy := docOf(t, objs, "ValidatingAdmissionPolicy")
		assert.Contains(t, policy, "'system:serviceaccount:shared:"+mirror+"'", rel)
		assert.Contains(t, policy, "'system:serviceaccount:shared:"+tier2+"'", rel)
	}
}

func docOf(t *testing.T, objs []object, kind string) string {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind {
			return o.doc
		}
	}
	t.Fatalf("no %s rendered", kind)
	return ""
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
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

// TestHelmNotes: the notes say what runs and how to check it, where apps
// send (over TLS when on), the Secret the tiers wait for, what scrapes the
// metrics and where the alerts and dashboard are.
func TestHelmNotes(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	out, err := render(ch, allOn(), "events")
	require.NoError(t, err)
	notes := out["NOTES.txt"]
	for _, want := range []string{
		"--field-selector reportingComponent=k8sevents.io/mirror",
		"helm test otel-k8sevents -n events",
		"apps send to otelcol-tier1.events:4317 (gRPC) or :4318 (HTTP)\n",
		"at most\n20 records per second each (burst 200)",
		"Tier 2 mounts Secret\notelcol-tls, tier 1 Secret otelcol-tier1-client-tls: their pods wait until they exist",
		"Nothing scrapes them yet: --set serviceMonitor.enabled=true",
	} {
		assert.Contains(t, notes, want)
	}
	out, err = render(ch, everything(), "events")
	require.NoError(t, err)
	notes = out["NOTES.txt"]
	for _, want := range []string{
		":4318 (HTTP) over TLS",
		"tier 1 Secret otelcol-tier1-client-tls and otelcol-tier1-tls (cert-manager's Certificates write them)",
		"through the ServiceMonitor otel-k8sevents",
		"Alerts: PrometheusRule otel-k8sevents",
		"Dashboard: ConfigMap otel-k8sevents-dashboard in grafana",
	} {
		assert.Contains(t, notes, want)
	}
}
