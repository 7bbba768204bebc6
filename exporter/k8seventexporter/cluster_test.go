package k8seventexporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestMarksTheSourceCluster (issue 17 item 3): an Event written for a
// record that states its cluster carries it in annotations, in both APIs,
// so that a hub written to by many clusters tells their Events apart; one
// that states none carries no annotation.
func TestMarksTheSourceCluster(t *testing.T) {
	r := newRig(t)
	cs := r.srv.Clientset()
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			exp, tel := r.start(t, func(c *Config) { c.API = api })
			suffix := strings.ReplaceAll(strings.ReplaceAll(api, "/", "-"), ".k8s.io", "")
			east := record("web-1.east-"+suffix, k8sevent.StateSingleton, 1, t0)
			east.Cluster = k8sevent.Cluster{Name: "east", UID: "0f9e-east"}
			uidOnly := record("web-1.uid-"+suffix, k8sevent.StateSingleton, 1, t0)
			uidOnly.Cluster = k8sevent.Cluster{UID: "0f9e-west"}
			none := record("web-1.none-"+suffix, k8sevent.StateSingleton, 1, t0)
			send(t, exp, east, uidOnly, none)
			require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 3 }, 30*time.Second, 20*time.Millisecond)
			for name, want := range map[string]map[string]string{
				east.Name:    {k8sevent.AnnotationSourceCluster: "east", k8sevent.AnnotationSourceClusterUID: "0f9e-east"},
				uidOnly.Name: {k8sevent.AnnotationSourceCluster: "0f9e-west", k8sevent.AnnotationSourceClusterUID: "0f9e-west"},
				none.Name:    nil,
			} {
				got, err := cs.CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, want, got.Annotations, name)
			}
		})
	}
}
