package k8seventexporter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// deployRole reads deploy/rbac-exporter.yaml's ClusterRole.
func deployRole(t *testing.T) rbacv1.ClusterRole {
	f, err := os.Open("../../deploy/rbac-exporter.yaml")
	require.NoError(t, err)
	defer f.Close()
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&role))
	return role
}

// asUser points the rig's kubeconfig at a token user.
func (r *rig) asUser(t *testing.T, user, token string) {
	rc := r.srv.RESTConfigFor(token)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthority: rc.CAFile, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	r.kubeconfig = path
}

// TestDeployRBACIsEnoughAndNoMore binds deploy/rbac-exporter.yaml's
// ClusterRole to a user, runs the exporter as that user on both APIs
// (including its listing at start, and the read of a create answered
// AlreadyExists), and checks the user can do nothing else.
func TestDeployRBACIsEnoughAndNoMore(t *testing.T) {
	const user, token = "exporter", "exporter-token"
	r := newRig(t, kubetest.WithUser(user, token))
	ctx := context.Background()
	role := deployRole(t)
	admin := r.srv.Clientset()
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "exporter"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	r.asUser(t, user, token)

	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		exp, tel := r.start(t, func(c *Config) { c.API = api })
		// The same controller, started before the object exists: its
		// listing misses it (only the same controller may take an object
		// over: TestHostileNamingAnotherEvent).
		exp2, tel2 := r.start(t, func(c *Config) { c.API = api })
		name := "web-1.rbac-" + map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		send(t, exp, record(name, k8sevent.StateSingleton, 1, t0), record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)))
		require.Eventually(t, func() bool { return counter(t, tel, "otelcol_exporter_k8sevent_writes", "outcome", "patched") == 1 },
			30*time.Second, 20*time.Millisecond, "create and patch as the user (%s)", api)
		// Its create is answered AlreadyExists; it reads the object, finds
		// it its own, and patches.
		send(t, exp2, record(name, k8sevent.StateOngoing, 3, t0.Add(time.Minute)))
		require.Eventually(t, func() bool {
			return counter(t, tel2, "otelcol_exporter_k8sevent_writes", "outcome", "patched_after_409") == 1
		}, 30*time.Second, 20*time.Millisecond, "get and patch after AlreadyExists as the user (%s)", api)
	}

	as, err := kubernetes.NewForConfig(r.srv.RESTConfigFor(token))
	require.NoError(t, err)
	_, err = as.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list pods: %v", err)
	_, err = as.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list secrets: %v", err)
	err = as.CoreV1().Events("shop").Delete(ctx, "web-1.rbac-old", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsForbidden(err), "delete events: %v", err)
	_, err = as.CoreV1().Events("shop").Update(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-1.rbac-old", Namespace: "shop"}}, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "update events (never used): %v", err)
}

// TestDeployRBACPerNamespace: with the exporter's namespaces set, a Role
// per namespace with deploy/rbac-exporter.yaml's rules is enough, the
// listing at start included (a restarted exporter patches what it wrote
// before, no create attempt), and nothing outside those namespaces is
// reachable.
func TestDeployRBACPerNamespace(t *testing.T) {
	const user, token = "exporter", "exporter-token"
	r := newRig(t, kubetest.WithUser(user, token))
	ctx := context.Background()
	cluster := deployRole(t)
	admin := r.srv.Clientset()
	role := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: "shop"}, Rules: cluster.Rules}
	_, err := admin.RbacV1().Roles("shop").Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings("shop").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "exporter", Namespace: "shop"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	r.asUser(t, user, token)

	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		inShop := func(c *Config) { c.API, c.Namespaces = api, []string{"shop"} }
		name := "web-1.ns-rbac-" + map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		exp, tel := r.start(t, inShop)
		send(t, exp, record(name, k8sevent.StateSingleton, 1, t0))
		require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 20*time.Millisecond)

		exp2, tel2 := r.start(t, inShop)
		send(t, exp2, record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)))
		require.Eventually(t, func() bool { return counter(t, tel2, "otelcol_exporter_k8sevent_writes", "outcome", "patched") == 1 },
			30*time.Second, 20*time.Millisecond, "the restarted exporter listed shop and patches (%s)", api)
		assert.Zero(t, counter(t, tel2, "otelcol_exporter_k8sevent_writes", "outcome", "patched_after_409"), "no create attempt")
	}
	as, err := kubernetes.NewForConfig(r.srv.RESTConfigFor(token))
	require.NoError(t, err)
	_, err = as.CoreV1().Events("other").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list events elsewhere: %v", err)
	_, err = as.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list events cluster-wide: %v", err)
}
