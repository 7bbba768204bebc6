package operator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-operator/apis/v1beta1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the repository, from this module's directory.
const root = "../.."

// exampleFile is the Operator example, from the repository root.
const exampleFile = "deploy/operator/mirror.yaml"

// object is a decoded manifest and its kind, namespace and name.
type object struct {
	key string // Kind/namespace/name
	obj any
}

// newObject is the Go type of each kind the manifests here may hold: a
// kind without one is an error, not skipped.
var newObject = map[string]func() any{
	"OpenTelemetryCollector": func() any { return &v1beta1.OpenTelemetryCollector{} },
	"Namespace":              func() any { return &corev1.Namespace{} },
	"ServiceAccount":         func() any { return &corev1.ServiceAccount{} },
	"ConfigMap":              func() any { return &corev1.ConfigMap{} },
	"Service":                func() any { return &corev1.Service{} },
	"StatefulSet":            func() any { return &appsv1.StatefulSet{} },
	"NetworkPolicy":          func() any { return &networkingv1.NetworkPolicy{} },
	"Role":                   func() any { return &rbacv1.Role{} },
	"RoleBinding":            func() any { return &rbacv1.RoleBinding{} },
	"ClusterRole":            func() any { return &rbacv1.ClusterRole{} },
	"ClusterRoleBinding":     func() any { return &rbacv1.ClusterRoleBinding{} },
}

// decodeStrict decodes every document of a multi-document YAML file into
// the Go type of its kind, strictly: a field the type does not have, or a
// key given twice, is an error naming it.
func decodeStrict(data []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var tm metav1.TypeMeta
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if tm.Kind == "" {
			continue // only comments
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		key := tm.Kind + "/" + meta.Metadata.Namespace + "/" + meta.Metadata.Name
		mk, ok := newObject[tm.Kind]
		if !ok {
			return nil, fmt.Errorf("document %d: %s: no Go type for kind %q here", i, key, tm.Kind)
		}
		obj := mk()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("document %d: %s: %w", i, key, err)
		}
		out = append(out, object{key: key, obj: obj})
	}
}

// readObjects decodes the files (paths from the repository root) strictly,
// keyed by kind, namespace and name; a key given twice fails.
func readObjects(t *testing.T, files ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		objs, err := decodeStrict(data)
		require.NoError(t, err, f)
		for _, o := range objs {
			require.NotContains(t, out, o.key, "%s: given twice", f)
			out[o.key] = o.obj
		}
	}
	return out
}

// example is the Operator example's OpenTelemetryCollector and all its
// objects.
func example(t *testing.T) (*v1beta1.OpenTelemetryCollector, map[string]any) {
	t.Helper()
	objs := readObjects(t, exampleFile)
	var col *v1beta1.OpenTelemetryCollector
	for _, o := range objs {
		if c, ok := o.(*v1beta1.OpenTelemetryCollector); ok {
			require.Nil(t, col, "one OpenTelemetryCollector")
			col = c
		}
	}
	require.NotNil(t, col, "%s has no OpenTelemetryCollector", exampleFile)
	require.Equal(t, "opentelemetry.io/v1beta1", col.APIVersion)
	return col, objs
}
