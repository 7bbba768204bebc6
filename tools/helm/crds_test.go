package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// The custom resources the chart renders for the Prometheus Operator and
// cert-manager. The test API server has neither: installCRDs registers
// their kinds with a schema that keeps any field, so that Helm can install
// them; their fields are checked against the Prometheus Operator's Go
// types where they are rendered (TestHelmMonitoring, TestHelmCertificate).
var customResources = []schema.GroupVersionResource{
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"},
	{Group: "cert-manager.io", Version: "v1", Resource: "certificates"},
}

var kinds = map[string]string{"servicemonitors": "ServiceMonitor", "podmonitors": "PodMonitor",
	"prometheusrules": "PrometheusRule", "certificates": "Certificate"}

// installCRDs registers customResources and waits until each is served.
func installCRDs(ctx context.Context, t *testing.T, srv *kubetest.Server) {
	t.Helper()
	c, err := apiextclient.NewForConfig(srv.RESTConfig())
	require.NoError(t, err)
	for _, r := range customResources {
		kind := kinds[r.Resource]
		crd := &apiextv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: r.Resource + "." + r.Group},
			Spec: apiextv1.CustomResourceDefinitionSpec{
				Group: r.Group, Scope: apiextv1.NamespaceScoped,
				Names: apiextv1.CustomResourceDefinitionNames{Plural: r.Resource, Kind: kind, ListKind: kind + "List"},
				Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: r.Version, Served: true, Storage: true,
					Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
			},
		}
		_, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, err, crd.Name)
	}
	dyn, err := dynamic.NewForConfig(srv.RESTConfig())
	require.NoError(t, err)
	for _, r := range customResources {
		assert.Eventually(t, func() bool {
			_, err := dyn.Resource(r).Namespace("default").List(ctx, metav1.ListOptions{})
			return err == nil
		}, time.Minute, 100*time.Millisecond, "%s served", r.Resource)
	}
}

// checkMonitoring: the release installed its ServiceMonitor, PodMonitor
// and PrometheusRule (named fullname), the Certificate of its TLS Secret,
// and the dashboard's ConfigMap, in namespace ns.
func checkMonitoring(ctx context.Context, t *testing.T, srv *kubetest.Server, ns, fullname, secret string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(srv.RESTConfig())
	require.NoError(t, err)
	for _, r := range customResources {
		name := fullname
		if r.Resource == "certificates" {
			name = secret
		}
		obj, err := dyn.Resource(r).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if assert.NoError(t, err, "%s %s/%s", r.Resource, ns, name) {
			assert.NotEmpty(t, obj.Object["spec"], "%s %s/%s", r.Resource, ns, name)
		}
	}
	cm, err := srv.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, fullname+"-dashboard", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, cm.Data["otel-k8sevents.json"], `"uid": "otel-k8sevents"`)
}
