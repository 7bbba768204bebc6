package operator

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-operator/apis/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// TestMirrorDecodesStrictly: every document of the example decodes into
// the Operator's v1beta1 types (from its Go module, v0.140.0) or the
// Kubernetes API types with no field left over; the same decoding refuses
// a misspelled field, at the top of the spec and deep in a pod field.
func TestMirrorDecodesStrictly(t *testing.T) {
	col, objs := example(t)
	assert.Equal(t, v1beta1.ModeStatefulSet, col.Spec.Mode)
	kinds := map[string]int{}
	for key := range objs {
		kinds[strings.SplitN(key, "/", 2)[0]]++
	}
	assert.Equal(t, map[string]int{"Namespace": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "ClusterRole": 2,
		"ClusterRoleBinding": 2, "OpenTelemetryCollector": 1, "NetworkPolicy": 1}, kinds)

	data, err := os.ReadFile(filepath.Join(root, exampleFile))
	require.NoError(t, err)
	for _, typo := range []struct{ old, new, field string }{
		{"  replicas: 1\n", "  replica: 1\n", "replica"},
		{"      accessModes: [ReadWriteOnce]\n", "      accessMode: [ReadWriteOnce]\n", "accessMode"},
	} {
		require.Equal(t, 1, strings.Count(string(data), typo.old), "the example has %q once", typo.old)
		_, err := decodeStrict([]byte(strings.Replace(string(data), typo.old, typo.new, 1)))
		require.Error(t, err, "%q decoded", typo.new)
		assert.Contains(t, err.Error(), typo.field)
	}
}

// TestOperatorAdmitsTheMirror: the Operator's own admission webhook
// (defaulting, then validation, as it runs them on kubectl apply) takes
// the collector with no warning; the probes it derives from the
// configuration reach the health_check extension; the storage the
// configuration writes to is the volume claim. The same webhook refuses
// the volume claim in deployment mode: it does check.
func TestOperatorAdmitsTheMirror(t *testing.T) {
	col, objs := example(t)
	var webhook v1beta1.CollectorWebhook // the Operator's, without its manager, metrics or RBAC reviewer
	require.NoError(t, webhook.Default(t.Context(), col))
	warnings, err := webhook.ValidateCreate(t.Context(), col)
	require.NoError(t, err)
	assert.Empty(t, warnings)

	assert.Equal(t, int32(1), *col.Spec.Replicas, "one writer")
	assert.Contains(t, objs, "ServiceAccount/otel-k8sevents/"+col.Spec.ServiceAccount, "the ServiceAccount the RBAC binds")
	require.Len(t, col.Spec.VolumeClaimTemplates, 1)
	claim := col.Spec.VolumeClaimTemplates[0].Name
	storageDir := ""
	for _, e := range col.Spec.Env {
		if e.Name == "STORAGE_DIR" {
			storageDir = e.Value
		}
	}
	assert.Contains(t, col.Spec.VolumeMounts, corev1.VolumeMount{Name: claim, MountPath: storageDir},
		"file_storage's directory (STORAGE_DIR) is on the volume claim")

	health := &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(13133)}
	for name, get := range map[string]func() (*corev1.Probe, error){
		"liveness":  func() (*corev1.Probe, error) { return col.Spec.Config.GetLivenessProbe(discard) },
		"readiness": func() (*corev1.Probe, error) { return col.Spec.Config.GetReadinessProbe(discard) },
	} {
		p, err := get()
		require.NoError(t, err, name)
		require.NotNil(t, p, "%s probe", name)
		assert.Equal(t, health, p.HTTPGet, "%s probe", name)
	}

	deployment := col.DeepCopy()
	deployment.Spec.Mode = v1beta1.ModeDeployment
	_, err = webhook.ValidateCreate(t.Context(), deployment)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "volumeClaimTemplates")
}

// TestMirrorConfigIsTheReadyOne: spec.config is testdata/config/mirror.yaml
// plus the collector's own metrics on loopback; after the Operator's
// defaulting every metrics reader is still on loopback (without the
// example's readers it adds one on 0.0.0.0).
func TestMirrorConfigIsTheReadyOne(t *testing.T) {
	col, _ := example(t)
	got := configMap(t, col)
	service := got["service"].(map[string]any)
	telemetry := service["telemetry"]
	delete(service, "telemetry")
	ready, err := os.ReadFile(filepath.Join(root, "testdata/config/mirror.yaml"))
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, yaml.Unmarshal(ready, &want))
	assert.Equal(t, want, got, "spec.config but service.telemetry is testdata/config/mirror.yaml")
	require.NotNil(t, telemetry, "service.telemetry")

	var webhook v1beta1.CollectorWebhook
	require.NoError(t, webhook.Default(t.Context(), col))
	assert.Equal(t, []string{"127.0.0.1"}, metricsHosts(t, col), "after the Operator's defaulting")

	bare, _ := example(t)
	bare.Spec.Config.Service.Telemetry = nil
	require.NoError(t, webhook.Default(t.Context(), bare))
	assert.NotEqual(t, []string{"127.0.0.1"}, metricsHosts(t, bare), "without readers the Operator adds its own")
}

// TestMirrorConfigValidates: the distribution's validate takes spec.config
// as the Operator writes it into the collector's ConfigMap (after its
// defaulting), with the example's environment; the same check refuses a
// key the k8sevents exporter does not have.
func TestMirrorConfigValidates(t *testing.T) {
	bin := distribution(t)
	col, _ := example(t)
	var webhook v1beta1.CollectorWebhook
	require.NoError(t, webhook.Default(t.Context(), col))
	text, err := col.Spec.Config.Yaml()
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(text), 0o600))
	var env []string
	for _, e := range col.Spec.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	validate := func(configs ...string) (string, error) {
		args := []string{"validate"}
		for _, c := range configs {
			args = append(args, "--config="+c)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := validate(cfg)
	require.NoError(t, err, "%s\n%s", out, text)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("exporters: {k8sevents: {reporting_controler: x}}\n"), 0o600))
	out, err = validate(cfg, bad)
	require.Error(t, err)
	assert.Contains(t, out, "reporting_controler")
}

// TestMirrorMatchesDeploy: the example's Namespace and RBAC are deploy/'s
// objects, field for field, and its pod settings are those of deploy/'s
// mirror StatefulSet (deploy/ is the Helm chart rendered): a change there
// that the example lacks fails here.
func TestMirrorMatchesDeploy(t *testing.T) {
	col, objs := example(t)
	deploy := readObjects(t, "deploy/collector.yaml", "deploy/rbac-receiver.yaml", "deploy/rbac-exporter.yaml")
	compared := 0
	for key, obj := range objs {
		switch obj.(type) {
		case *v1beta1.OpenTelemetryCollector, *networkingv1.NetworkPolicy:
			continue
		}
		require.Contains(t, deploy, key, "deploy/ has no %s", key)
		assert.Equal(t, withoutChartLabels(t, deploy[key]), obj, key)
		compared++
	}
	assert.Equal(t, 8, compared, "Namespace, ServiceAccount and RBAC compared")

	sts, ok := deploy["StatefulSet/otel-k8sevents/otel-k8sevents"].(*appsv1.StatefulSet)
	require.True(t, ok, "deploy/collector.yaml has the mirror's StatefulSet")
	pod := sts.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	// The Operator adds POD_NAME (the pod's name) itself.
	operatorEnv := corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	assert.Equal(t, c.Env, slices.Insert(slices.Clone(col.Spec.Env), 2, operatorEnv), "env")
	assert.Equal(t, c.Image, col.Spec.Image, "image")
	assert.Equal(t, c.Resources, col.Spec.Resources, "resources")
	assert.Equal(t, c.SecurityContext, col.Spec.SecurityContext, "container securityContext")
	assert.Equal(t, pod.SecurityContext, col.Spec.PodSecurityContext, "pod securityContext")
	assert.Equal(t, pod.TerminationGracePeriodSeconds, col.Spec.TerminationGracePeriodSeconds, "terminationGracePeriodSeconds")
	assert.Equal(t, pod.ServiceAccountName, col.Spec.ServiceAccount, "serviceAccount")
	assert.Equal(t, sts.Spec.VolumeClaimTemplates, col.Spec.VolumeClaimTemplates, "volumeClaimTemplates")
	assert.Equal(t, sts.Spec.PersistentVolumeClaimRetentionPolicy, col.Spec.PersistentVolumeClaimRetentionPolicy, "persistentVolumeClaimRetentionPolicy")
	assert.Contains(t, c.VolumeMounts, col.Spec.VolumeMounts[0], "the storage mount")

	np := objs["NetworkPolicy/otel-k8sevents/otel-k8sevents-mirror"].(*networkingv1.NetworkPolicy)
	deployNP := deploy["NetworkPolicy/otel-k8sevents/otel-k8sevents"].(*networkingv1.NetworkPolicy)
	assert.Equal(t, deployNP.Spec.PolicyTypes, np.Spec.PolicyTypes)
	assert.Empty(t, np.Spec.Ingress, "no ingress")
	assert.Equal(t, col.Namespace+"."+col.Name, np.Spec.PodSelector.MatchLabels["app.kubernetes.io/instance"],
		"the Operator's instance label of the collector's pods")
}

// withoutChartLabels is obj without the labels the chart puts on every
// object it renders (helm.sh/, app.kubernetes.io/): deploy/ is rendered
// by the chart, the Operator example is written by hand; the other labels
// (the Namespace's pod-security ones) must match.
func withoutChartLabels(t *testing.T, obj any) any {
	t.Helper()
	o, ok := obj.(metav1.Object)
	require.True(t, ok, "%T has metadata", obj)
	labels := o.GetLabels()
	for k := range labels {
		if strings.HasPrefix(k, "helm.sh/") || strings.HasPrefix(k, "app.kubernetes.io/") {
			delete(labels, k)
		}
	}
	if len(labels) == 0 {
		labels = nil
	}
	o.SetLabels(labels)
	return obj
}
