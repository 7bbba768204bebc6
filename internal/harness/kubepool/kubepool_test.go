package kubepool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
)

// leave makes what a test leaves behind: a namespace with an Event and a
// RoleBinding that lets user writer create Events there, a ServiceAccount
// and a ClusterRole.
func leave(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Events("shop").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1"},
		Reason:         "BackOff", Type: corev1.EventTypeWarning, Count: 1,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "events-writer"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"events"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings("shop").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "writer"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "events-writer"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return writerAllowed(ctx, t, cs) }, 10*time.Second, 20*time.Millisecond,
		"the binding never took effect")
}

// writerAllowed asks the authorizer whether user writer may create Events
// in shop.
func writerAllowed(ctx context.Context, t *testing.T, cs kubernetes.Interface) bool {
	t.Helper()
	review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: "writer", ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "shop", Verb: "create", Resource: "events"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}

// processStates returns the state letter of each process (/proc/<pid>/stat:
// R running, S sleeping, T stopped, ...).
func processStates(t *testing.T, pids []int) string {
	t.Helper()
	var states []byte
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		_, after, ok := strings.Cut(string(stat), ") ")
		require.True(t, ok, "/proc/%d/stat: %q", pid, stat)
		states = append(states, after[0])
	}
	return string(states)
}

// TestLeaseStartsFromTheReadyState: a second lease of the one server
// finds none of what the first lease made, and can make it again; while
// one lease holds the server, there is none to lease; the first lease's
// connections end with it; the leased server cannot be stopped; the
// server's processes are stopped while it is free and run while leased; a
// lease asking for other API server flags does not get it.
func TestLeaseStartsFromTheReadyState(t *testing.T) {
	kubelocal.RequireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	clusters := startSlots(ctx, dir, [][]string{nil})
	require.Len(t, clusters, 1)
	defer func() {
		resume(clusters[0].PIDs())
		assert.NoError(t, clusters[0].Stop())
	}()
	pids := clusters[0].PIDs()
	require.Len(t, pids, 2, "etcd and kube-apiserver")
	paused := func() bool { return processStates(t, pids) == "TT" }
	if runtime.GOOS == "linux" {
		require.Eventually(t, paused, 10*time.Second, 10*time.Millisecond, "a free server runs: %s", processStates(t, pids))
	}

	other, err := Acquire(ctx, dir, []string{"--watch-cache=false"})
	require.NoError(t, err)
	assert.Nil(t, other, "a lease of a server started with other flags")
	first, err := Acquire(ctx, dir, nil)
	require.NoError(t, err)
	require.NotNil(t, first)
	if runtime.GOOS == "linux" {
		assert.NotContains(t, processStates(t, pids), "T", "a leased server's processes are stopped")
	}
	firstCS, err := first.Cluster.Clientset()
	require.NoError(t, err)
	leave(ctx, t, firstCS)
	none, err := Acquire(ctx, dir, nil)
	require.NoError(t, err)
	assert.Nil(t, none, "a second lease while the only server is leased")
	assert.Error(t, first.Cluster.StopAPIServer(), "a leased server stopped")
	first.Release()
	if runtime.GOOS == "linux" {
		require.Eventually(t, paused, 10*time.Second, 10*time.Millisecond, "a released server runs: %s", processStates(t, pids))
	}
	_, err = firstCS.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	assert.Error(t, err, "a released lease's client still reaches the server")

	second, err := Acquire(ctx, dir, nil)
	require.NoError(t, err)
	require.NotNil(t, second)
	defer second.Release()
	cs, err := second.Cluster.Clientset()
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "namespace of the first lease: %v", err)
	_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "app", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ServiceAccount of the first lease: %v", err)
	_, err = cs.RbacV1().ClusterRoles().Get(ctx, "events-writer", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRole of the first lease: %v", err)
	assert.False(t, writerAllowed(ctx, t, cs), "the authorizer still applies the first lease's binding")
	events, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, events.Items)
	roles, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, roles.Items, "the API server's own ClusterRoles were deleted")
	_, err = cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	assert.NoError(t, err, "the API server's own Service")
	leave(ctx, t, cs)

	tallied, err := os.ReadFile(filepath.Join(dir, tallyFile))
	require.NoError(t, err)
	assert.Equal(t, noneFree+leased+"slot-0\n"+noneFree+leased+"slot-0\n", string(tallied), "the tally of the four Acquires")
}

// TestRunServesTheCommand: the command sees the pool and its servers get
// ready; its exit code comes back; the servers stop and the directory goes.
func TestRunServesTheCommand(t *testing.T) {
	kubelocal.RequireBinaries(t)
	dir := filepath.Join(t.TempDir(), "pool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	script := `for i in $(seq 600); do [ -f "$` + Env + `/slot-0/pool.json" ] && exit 3; sleep 0.1; done; exit 1`
	err := Run(dir, [][]string{nil}, []string{"sh", "-c", script})
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "Run: %v", err)
	assert.Equal(t, 3, exit.ExitCode(), "the command did not see a ready server within a minute")
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the pool's directory is left: %v", err)
}
