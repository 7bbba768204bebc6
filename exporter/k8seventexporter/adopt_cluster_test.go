package k8seventexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestExactAdoptionWhenTheClusterUIDAppears: tier-2 pod 0 writes a series
// whose records state no cluster uid (the receiver could not read it yet),
// pod 3 starts its own for the same key once the uid is known, or the
// other way round (a restarted receiver whose first read failed). The
// cluster is the same, named or not: one object counting both series.
// Another cluster name stays apart. Adoption comparing the name, else the
// uid, would give the unnamed cluster's two series two objects.
func TestExactAdoptionWhenTheClusterUIDAppears(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	uid := "kube-system-uid"
	for _, c := range []struct {
		name, pod    string
		first, later k8sevent.Cluster
		objects      int
	}{
		{"unnamed, uid appears", "cluster-a", k8sevent.Cluster{}, k8sevent.Cluster{UID: uid}, 1},
		{"unnamed, uid lost", "cluster-b", k8sevent.Cluster{UID: uid}, k8sevent.Cluster{}, 1},
		{"named, uid appears", "cluster-c", k8sevent.Cluster{Name: "east"}, k8sevent.Cluster{Name: "east", UID: uid}, 1},
		{"another cluster", "cluster-d", k8sevent.Cluster{Name: "east", UID: uid}, k8sevent.Cluster{Name: "west", UID: uid}, 2},
	} {
		for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
			short := map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
			t.Run(c.name+"/"+short, func(t *testing.T) {
				pod := c.pod + "-" + short
				cw := watchCounts(t, r, pod)
				a, _ := r.start(t, adopter(api, "tier2-0"))
				d, _ := r.start(t, adopter(api, "tier2-3"))
				as := seriesOf(pod, pod+".a", t0, 1, 2, 3)
				ds := seriesOf(pod, pod+".d", t0.Add(30*time.Second), 1, 2)
				for i := range as {
					as[i].Cluster = c.first
				}
				for i := range ds {
					ds[i].Cluster = c.later
				}
				send(t, a, as[:2]...)
				send(t, d, ds...)
				send(t, a, as[2:]...)
				objs := r.aboutPod(t, pod)
				require.Len(t, objs, c.objects)
				if c.objects == 1 {
					core, events, err := r.occurrences(t, pod+".a")
					require.NoError(t, err)
					assert.Equal(t, []int64{5, 5}, []int64{core, events}, "3 + 2 in one object")
					cw.awaitLast(t, pod+".a", 5)
				}
				cw.assertNeverDown(t)
			})
		}
	}
}
