package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestHub runs testdata/config/hub.yaml on the built collector: two source
// API servers get the same storm (identical objects, reasons and notes)
// as raw Events, and one collector mirrors both into a hub. In the hub
// every Event written carries its source cluster's name and kube-system
// uid in annotations, and per cluster and (object, reason) the hub holds
// exactly that cluster's total: the two clusters' identical objects were
// kept apart, not merged (merged, each pair would show twice a source's
// total under one cluster). The SIGTERM flushes the open series; what the
// exporter's persistent queue could not write before the process ended
// (20 writes/s) the next start writes, which the test waits for.
func TestHub(t *testing.T) {
	parallel(t)
	binary(t) // skips before starting API servers when the collector is not built
	start := time.Now()
	srcs := map[string]*kubetest.Server{"east": kubetest.Start(t), "west": kubetest.Start(t)}
	hub := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	occs := mergeStorms(stormWindow(t, "crashloop", 3*time.Minute), stormWindow(t, "imagepull", 3*time.Minute))
	nss := storm.Namespaces(occs)
	uids := map[string]string{}
	for name, srv := range srcs {
		require.NoError(t, stormsend.EnsureNamespaces(ctx, srv.Clientset(), occs))
		system, err := srv.Clientset().CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		require.NoError(t, err)
		uids[name] = string(system.UID)
	}
	require.NotEqual(t, uids["east"], uids["west"])
	require.NoError(t, stormsend.EnsureNamespaces(ctx, hub.Clientset(), occs))

	cfg, err := os.ReadFile("../testdata/config/hub.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	env := []string{
		"CLUSTER_A_KUBECONFIG=" + srcs["east"].Kubeconfig(t), "CLUSTER_A_NAME=east",
		"CLUSTER_B_KUBECONFIG=" + srcs["west"].Kubeconfig(t), "CLUSTER_B_NAME=west",
		"HUB_KUBECONFIG=" + hub.Kubeconfig(t), "STORAGE_DIR=" + dir, "POD_IP=127.0.0.1",
	}
	c := startCollectorEnv(t, dir, string(cfg), env)
	// A marker mirrored from each source says its watch is up.
	for name, srv := range srcs {
		awaitWatchStarted(ctx, t, srv.Clientset(), hub.Clientset(), nss, "start-"+name, time.Minute)
	}

	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for name, srv := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats, err := stormsend.Raw(ctx, srv.RESTConfig(), occs, stormsend.Options{Speed: 0, MaxDuration: time.Minute})
			mu.Lock()
			defer mu.Unlock()
			errs[name] = err
			t.Logf("storm into %s: %d occurrences in %d raw writes, %v", name, stats.Occurrences, stats.Writes, stats.Elapsed.Round(time.Millisecond))
		}()
	}
	wg.Wait()
	for name, err := range errs {
		require.NoError(t, err, name)
	}
	for name, srv := range srcs {
		awaitMirrored(ctx, t, srv.Clientset(), hub.Clientset(), nss, "end-"+name, 2*time.Minute)
	}
	require.NoError(t, c.Stop(time.Minute), "SIGTERM: the processor flushes its open series, the queue drains")

	// The persistent queue keeps what the shutdown flush could not write
	// in time (20 writes/s): the next start writes it.
	c = startCollectorEnv(t, dir, string(cfg), env)
	var last []string
	eventually(t, 2*time.Minute, func() (bool, string) {
		last = compareHub(ctx, t, srcs, hub, nss, uids, false)
		return len(last) == 0, strings.Join(last, "; ")
	})
	require.NoError(t, c.Stop(time.Minute))
	assert.Empty(t, compareHub(ctx, t, srcs, hub, nss, uids, true))
	t.Logf("took %v", time.Since(start).Round(time.Second))
}

// compareHub checks the hub against the sources and returns what differs:
// every Event the hub's exporter wrote names a source cluster and its
// kube-system uid, and per cluster and (object, reason) the hub holds the
// source's total, in objects that claim no occurrence twice.
func compareHub(ctx context.Context, t *testing.T, srcs map[string]*kubetest.Server, hub *kubetest.Server,
	nss []string, uids map[string]string, log bool,
) []string {
	t.Helper()
	hubEvents, err := listEvents(ctx, hub.Clientset(), byController("k8sevents.io/hub"))
	require.NoError(t, err)
	var out []string
	perCluster := map[string][]corev1.Event{}
	for i := range hubEvents {
		a := hubEvents[i].Annotations
		name := a[k8sevent.AnnotationSourceCluster]
		if srcs[name] == nil || uids[name] != a[k8sevent.AnnotationSourceClusterUID] {
			out = append(out, fmt.Sprintf("%s: annotations %v", hubEvents[i].Name, a))
			continue
		}
		perCluster[name] = append(perCluster[name], hubEvents[i])
	}
	for name, srv := range srcs {
		src, err := listEvents(ctx, srv.Clientset(), inNamespaces(nss...))
		require.NoError(t, err)
		want, got := tallyEvents(src), tallyEvents(perCluster[name])
		lines, missing, extra := diffTallies(want, got, 5)
		if log {
			t.Logf("%s: %d occurrences of %d pairs in %d objects; in the hub: %d occurrences in %d objects, missing %d, extra %d",
				name, want.Occurrences, len(want.Pairs), want.Objects, got.Occurrences, got.Objects, missing, extra)
		}
		for _, l := range lines {
			out = append(out, name+": "+l)
		}
		for _, l := range overlappingObjects(perCluster[name], 5, false) {
			out = append(out, name+": overlapping "+l)
		}
	}
	return out
}
