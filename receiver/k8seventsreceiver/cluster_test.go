package k8seventsreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestFaultClusterSurvivesRefusedEmits: the pipeline
// refuses the batch of the last Event written, for a while (three
// attempts); when it takes it, that record, like every other, carries the
// cluster's name and kube-system uid on its resource, and it comes once.
func TestFaultClusterSurvivesRefusedEmits(t *testing.T) {
	r := newRig(t)
	r.namespace(t, "east")
	system, err := r.cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	sink := new(consumertest.LogsSink)
	pipeline := &refusing{sink: sink, name: "e-2"} // createEvents names them e-0, e-1, e-2
	pipeline.on.Store(true)
	rcv := r.startInto(t, host{}, r.kubeconfig, pipeline, func(c *Config) { c.ClusterName = "east" })
	watching(t, rcv)
	r.createEvents(t, "east", "e", 3)
	require.Eventually(t, func() bool { return pipeline.refused.Load() >= 3 }, 60*time.Second, 10*time.Millisecond, "the fault happened")
	pipeline.on.Store(false)
	evs := waitReceived(t, sink, 3)
	want := k8sevent.Cluster{Name: "east", UID: string(system.UID)}
	seen := map[string]int{}
	for _, ev := range evs {
		assert.Equal(t, want, ev.Cluster, ev.Name)
		seen[ev.Name]++
	}
	assert.Equal(t, map[string]int{"e-0": 1, "e-1": 1, "e-2": 1}, seen)
}
