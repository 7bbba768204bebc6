package k8seventsreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestDeployRBACIsEnoughAndNoMore binds deploy/rbac-receiver.yaml's
// ClusterRole to a user, runs the receiver as that user on both APIs (its
// records carry the cluster's name and uid, the kube-system namespace's),
// and checks that the user can do nothing else.
func TestDeployRBACIsEnoughAndNoMore(t *testing.T) {
	r := newRig(t)
	user, token := r.srv.NewUser(t, "receiver")
	r.srv.GrantRole(t, "../../deploy/rbac-receiver.yaml", user, "")
	ctx := context.Background()
	as, err := kubernetes.NewForConfig(r.srv.RESTConfigFor(token))
	require.NoError(t, err)

	r.namespace(t, "rbac")
	for _, api := range []string{k8sevent.APICoreV1, k8sevent.APIEventsV1} {
		rcv, sink := r.startWith(t, r.srv.KubeconfigFor(t, user, token), func(c *Config) { c.API, c.Initial, c.ClusterName = api, initialAll, "east" })
		watching(t, rcv)
		r.createEvents(t, "rbac", api[:2], 1)
		evs := waitReceived(t, sink, 1)
		system, err := r.cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, k8sevent.Cluster{Name: "east", UID: string(system.UID)}, evs[0].Cluster, "k8s.cluster.name and .uid on the resource")
	}

	_, err = as.CoreV1().Events("rbac").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "create events: %v", err)
	_, err = as.CoreV1().Pods("rbac").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list pods: %v", err)
	_, err = as.CoreV1().Secrets("rbac").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list secrets: %v", err)
	_, err = as.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	assert.True(t, apierrors.IsForbidden(err), "get another namespace: %v", err)
}
