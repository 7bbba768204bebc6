package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// TestCountMonitorSeesEveryDecrease: the fault tests' count monitor
// reports a count that goes down and up again faster than any poll would
// see, and ignores Events keep does not accept.
func TestCountMonitorSeesEveryDecrease(t *testing.T) {
	parallel(t)
	srv := kubetest.Start(t)
	cs := srv.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := watchCounts(srv.WatchClientset(t), byController("k8sevents.io/e2e-monitor"))
	defer m.finish()
	create := func(name, controller string) {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Reason:         "BackOff", Message: "m", Type: corev1.EventTypeWarning, Count: 5,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
			ReportingController: controller, ReportingInstance: "i", Source: corev1.EventSource{Component: "c"},
		}
		_, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	setCount := func(name string, n int) {
		_, err := cs.CoreV1().Events("default").Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"count":%d}`, n), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	create("ours", "k8sevents.io/e2e-monitor")
	create("theirs", "k8sevents.io/e2e-other")
	eventually(t, 30*time.Second, func() (bool, string) {
		n := m.snapshot()["default/ours"]
		return n == 5, fmt.Sprintf("monitor saw count %d", n)
	})
	for _, n := range []int{7, 3, 9} {
		setCount("ours", n)
	}
	setCount("theirs", 1)
	eventually(t, 30*time.Second, func() (bool, string) {
		n := m.snapshot()["default/ours"]
		return n == 9, fmt.Sprintf("monitor saw count %d", n)
	})
	drops, reads := m.finish()
	assert.Equal(t, []string{"default/ours: 7 then 3"}, drops)
	assert.GreaterOrEqual(t, reads, 4, "a list and three watch events")
	assert.NotContains(t, m.snapshot(), "default/theirs")
}
