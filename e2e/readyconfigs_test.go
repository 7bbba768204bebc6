package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// The ready configurations of the operator's toolbox, each run
// on the built collector against a real kube-apiserver, its output read
// from the file exporters it writes: what a filter drops is absent, what it
// keeps arrives with exact counts.

// readyRun is a ready configuration running against its own API server.
type readyRun struct {
	srv *kubetest.Server
	dir string
	c   *collector
}

// readyServer starts a fresh API server for a ready configuration's test
// (skipped when the collector is not built), with a context bounding it.
func readyServer(t *testing.T) (context.Context, *kubetest.Server) {
	t.Helper()
	binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx, kubetest.Start(t)
}

// startReady runs the ready configuration file on srv, with the test's env
// (NAME=value) over the shared settings: kubeconfig auth, storage in a temp
// dir, series that end 2 s after their last occurrence. It returns once
// the receiver's watch is open and the start marker, written after that, is
// in markerOut: the whole pipeline carries what is written from then on.
func startReady(ctx context.Context, t *testing.T, srv *kubetest.Server, file, markerOut string, env ...string) *readyRun {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("../testdata/config", file))
	require.NoError(t, err)
	dir := t.TempDir()
	env = append([]string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + srv.Kubeconfig(t), "STORAGE_DIR=" + dir,
		"POD_IP=127.0.0.1", "SERIES_FINISH_AFTER=2s"}, env...)
	run := &readyRun{srv: srv, dir: dir, c: startCollectorEnv(t, dir, string(cfg), env)}
	run.c.awaitWatchOpen(t) // a marker written before the receiver's list would never be seen
	sendRaw(ctx, t, srv, startMarker())
	awaitPairs(t, pairsOf(startMarker()), markerOut)
	return run
}

// occurrences are n occurrences of one Event (kind/name in ns, typ,
// reason), stamped when sent.
func occurrences(ns, kind, name, uid, typ, reason string, n int) []storm.Occurrence {
	if uid == "" {
		uid = "uid-" + ns + "-" + name
	}
	out := make([]storm.Occurrence, n)
	for i := range out {
		out[i] = storm.Occurrence{
			Time: time.Now(), Type: typ, Reason: reason, Note: reason + " of " + name,
			Regarding:  storm.Ref{Kind: kind, Namespace: ns, Name: name, UID: uid, APIVersion: "v1"},
			Controller: "e2e-ready", Instance: "node-1",
		}
	}
	return out
}

// pairsOf counts occurrences per (object, reason).
func pairsOf(occs []storm.Occurrence) map[eventPair]int64 {
	out := map[eventPair]int64{}
	for _, o := range occs {
		out[eventPair{Kind: o.Regarding.Kind, Namespace: o.Regarding.Namespace, Name: o.Regarding.Name,
			UID: o.Regarding.UID, Reason: o.Reason}]++
	}
	return out
}

// sendRaw writes occs to the API server as raw Events (one create or count
// patch per occurrence).
func sendRaw(ctx context.Context, t *testing.T, srv *kubetest.Server, occs []storm.Occurrence) {
	t.Helper()
	require.NoError(t, stormsend.EnsureNamespaces(ctx, srv.Clientset(), occs))
	stats, err := stormsend.Raw(ctx, srv.RESTConfig(), occs, stormsend.Options{Speed: 0, Restamp: true, MaxDuration: time.Minute})
	require.NoError(t, err)
	require.Equal(t, len(occs), stats.Occurrences)
}

// startMarker is a Warning no ready configuration drops, in a namespace of
// its own: once it is in the output, the receiver's watch is up.
func startMarker() []storm.Occurrence {
	return occurrences("e2e-ready", "Pod", "start", "", "Warning", "E2EStart", 1)
}

// awaitPairs waits until the files hold at least want's count for each of
// want's pairs, then returns what they hold.
func awaitPairs(t *testing.T, want map[eventPair]int64, files ...string) sinkResult {
	t.Helper()
	var got sinkResult
	eventually(t, 2*time.Minute, func() (bool, string) {
		got = readSink(t, files...)
		var short []string
		for p, n := range want {
			if got.pairs[p] < n {
				short = append(short, fmt.Sprintf("%v: %d of %d", p, got.pairs[p], n))
			}
		}
		sort.Strings(short)
		return len(short) == 0, strings.Join(short, "; ")
	})
	return got
}

// TestWarningsOnly runs warnings-only.yaml: Normal Events and the reasons
// chosen in DROP_REASONS never reach the output; every other Warning does,
// with its exact count.
func TestWarningsOnly(t *testing.T) {
	parallel(t)
	ctx, srv := readyServer(t)
	out := filepath.Join(t.TempDir(), "warnings.jsonl")
	run := startReady(ctx, t, srv, "warnings-only.yaml", out, "OUTPUT_FILE="+out, "DROP_REASONS=BackOff|FailedMount")

	var kept, dropped []storm.Occurrence
	for _, ns := range []string{"shop", "billing"} {
		kept = append(kept, occurrences(ns, "Pod", "web-0", "", "Warning", "Unhealthy", 7)...)
		kept = append(kept, occurrences(ns, "Pod", "web-1", "", "Warning", "FailedScheduling", 3)...)
		dropped = append(dropped, occurrences(ns, "Pod", "web-0", "", "Warning", "BackOff", 9)...)
		dropped = append(dropped, occurrences(ns, "Pod", "web-1", "", "Warning", "FailedMount", 4)...)
		dropped = append(dropped, occurrences(ns, "Pod", "web-0", "", "Normal", "Pulled", 5)...)
		dropped = append(dropped, occurrences(ns, "Pod", "web-1", "", "Normal", "Scheduled", 1)...)
	}
	kept = append(kept, occurrences("", "Node", "node-1", "", "Warning", "NodeNotReady", 2)...)
	dropped = append(dropped, occurrences("", "Node", "node-1", "", "Normal", "NodeReady", 2)...)
	// Interleaved, the dropped ones first of each pair, kept ones last: the
	// last occurrence written is a kept one.
	sendRaw(ctx, t, srv, append(append([]storm.Occurrence(nil), dropped...), kept...))

	want := pairsOf(append(startMarker(), kept...))
	got := awaitPairs(t, want, out)
	assert.Equal(t, want, got.pairs, "exactly the kept pairs, each with its occurrences; nothing dropped")
	for p := range pairsOf(dropped) {
		assert.NotContains(t, got.pairs, p, "dropped")
	}
	own := run.c.scrape(t)
	t.Logf("%d records for %d kept occurrences (%d dropped by the filter); filter dropped %v records",
		got.records, len(kept)+1, len(dropped), own.Sum("otelcol_processor_filter_logs_filtered"))
}

// TestRoutingByNamespace runs routing-by-namespace.yaml: every Event goes
// to exactly one of the two backends, by its namespace, with its exact
// count; cluster-scoped objects go to the other backend.
func TestRoutingByNamespace(t *testing.T) {
	parallel(t)
	ctx, srv := readyServer(t)
	tmp := t.TempDir()
	team, other := filepath.Join(tmp, "team.jsonl"), filepath.Join(tmp, "other.jsonl")
	startReady(ctx, t, srv, "routing-by-namespace.yaml", other, "TEAM_FILE="+team, "OTHER_FILE="+other, "TEAM_NAMESPACES=^team-a-")

	var teamOccs, otherOccs []storm.Occurrence
	for _, ns := range []string{"team-a-web", "team-a-db"} {
		teamOccs = append(teamOccs, occurrences(ns, "Pod", "p", "", "Warning", "BackOff", 6)...)
		teamOccs = append(teamOccs, occurrences(ns, "Pod", "q", "", "Normal", "Pulled", 2)...)
	}
	// team-b-a does not start with team-a-: the pattern is anchored.
	for _, ns := range []string{"team-b-a", "shop"} {
		otherOccs = append(otherOccs, occurrences(ns, "Pod", "p", "", "Warning", "BackOff", 5)...)
	}
	otherOccs = append(otherOccs, occurrences("", "Node", "node-1", "", "Warning", "NodeNotReady", 3)...)
	var all []storm.Occurrence
	for i := range max(len(teamOccs), len(otherOccs)) { // interleaved
		if i < len(teamOccs) {
			all = append(all, teamOccs[i])
		}
		if i < len(otherOccs) {
			all = append(all, otherOccs[i])
		}
	}
	sendRaw(ctx, t, srv, all)

	wantTeam, wantOther := pairsOf(teamOccs), pairsOf(append(startMarker(), otherOccs...))
	gotTeam, gotOther := awaitPairs(t, wantTeam, team), awaitPairs(t, wantOther, other)
	assert.Equal(t, wantTeam, gotTeam.pairs, "the team backend: its namespaces only, exact")
	assert.Equal(t, wantOther, gotOther.pairs, "the other backend: the rest, exact")
	t.Logf("team: %d records for %d occurrences; other: %d records for %d occurrences",
		gotTeam.records, len(teamOccs), gotOther.records, len(otherOccs)+1)
}

// TestK8sAttributesEnrichesRegardingPod runs enrich-k8sattributes.yaml: a
// Pod with labels exists on the API server; the records of an Event about
// it carry its labels, added by k8sattributes from the resource identity
// the eventseries processor writes. Records about a Pod that does not
// exist, or one outside ENRICH_NAMESPACE, carry none.
func TestK8sAttributesEnrichesRegardingPod(t *testing.T) {
	parallel(t)
	ctx, srv := readyServer(t)
	cs := srv.Clientset()
	web := createPod(ctx, t, cs, "shop", "web-0", map[string]string{"app": "web", "tier": "front"})
	outside := createPod(ctx, t, cs, "elsewhere", "api-0", map[string]string{"app": "api"})

	out := filepath.Join(t.TempDir(), "enriched.jsonl")
	startReady(ctx, t, srv, "enrich-k8sattributes.yaml", out, "OUTPUT_FILE="+out, "ENRICH_NAMESPACE=shop")

	occs := occurrences("shop", "Pod", "web-0", string(web.UID), "Warning", "BackOff", 4)
	occs = append(occs, occurrences("shop", "Pod", "ghost", "", "Warning", "BackOff", 2)...)
	occs = append(occs, occurrences("elsewhere", "Pod", "api-0", string(outside.UID), "Warning", "BackOff", 2)...)
	sendRaw(ctx, t, srv, occs)
	want := pairsOf(append(startMarker(), occs...))
	got := awaitPairs(t, want, out)
	assert.Equal(t, want, got.pairs, "every Event with its exact count")

	seen := map[string]int{}
	forEachFileRecord(t, out, func(res, rec pcommon.Map) {
		pod := sinkStr(res, rec, "k8s.object.name")
		seen[pod]++
		labels := map[string]string{}
		for k, v := range res.All() {
			if key, ok := strings.CutPrefix(k, "k8s.pod.labels."); ok {
				labels[key] = v.AsString()
			}
		}
		switch pod {
		case "web-0":
			assert.Equal(t, map[string]string{"app": "web", "tier": "front"}, labels, "the regarding Pod's labels")
			v, _ := res.Get("k8s.pod.uid")
			assert.Equal(t, string(web.UID), v.AsString())
		default:
			assert.Empty(t, labels, "%s: no Pod to take labels from (or not watched)", pod)
		}
	})
	assert.Positive(t, seen["web-0"])
	assert.Positive(t, seen["ghost"])
	assert.Positive(t, seen["api-0"])
	t.Logf("records per object: %v", seen)
}

// forEachFileRecord calls f with the resource and record attributes of
// every record in a file exporter's output. The exporter may be writing a
// line still (a series' end): only lines ended by a newline are read, and
// each of those must be OTLP JSON.
func forEachFileRecord(t *testing.T, file string, f func(res, rec pcommon.Map)) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	var un plog.JSONUnmarshaler
	for _, line := range lines[:len(lines)-1] {
		ld, err := un.UnmarshalLogs([]byte(line))
		require.NoError(t, err)
		forEachRecord(ld, f)
	}
}

// createPod creates a Pod with labels in ns (and ns, and its default
// ServiceAccount, which a bare API server has no controller to create).
func createPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	require.NoError(t, stormsend.CreateNamespaces(ctx, cs, ns))
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}},
			AutomountServiceAccountToken: new(bool),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return pod
}
