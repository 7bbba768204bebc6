package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestScaleOut is end-to-end test 3: the mixed storm through one
// load_balancing collector (testdata/config/tier1-loadbalancer.yaml) in
// front of three processor collectors (tier2-processor.yaml) writes as many
// Events (±1%, counting records skipped as stale behind a backlog) as one
// processor collector alone, with the same final count
// per (object, reason), every object's Events written by one tier-2
// collector. Both runs use event time, so the result does not depend on how
// fast this machine is; they share one API server, one after the other, its
// Events deleted in between (the runs write the same names).
func TestScaleOut(t *testing.T) {
	binary(t)
	parallel(t)
	occs, err := storm.Scenario("mixed")
	require.NoError(t, err)
	tier1, tier2 := readyConfig(t, "tier1-loadbalancer.yaml"), readyConfig(t, "tier2-processor.yaml")
	srv := kubetest.Start(t)
	cs := srv.Clientset()
	// Its waits are bounded by progress (awaitExported), not by a total: on
	// a machine loaded with the other tests, or building from cold caches,
	// the exporters' writes alone take minutes. This bound only backs them.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))
	acc := newTierAccess(t, srv)
	env := append([]string{"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + srv.Kubeconfig(t),
		"EVENTSERIES_TIME_SOURCE=event", "K8S_QPS=1000", "K8S_BURST=1000"}, acc.ingestEnv()...)
	truth := map[objectReason]int64{}
	for i := range occs {
		o := &occs[i]
		truth[objectReason{o.Regarding.Namespace + "/" + o.Regarding.Kind + "/" + o.Regarding.Name, o.Reason}]++
	}

	// The reference: one collector.
	before := requestsByCode(ctx, t, cs)
	endpoint := loopback(t)
	singleDir := t.TempDir()
	singleEnv := append(env, "OTLP_GRPC_ENDPOINT="+endpoint, "OTLP_HTTP_ENDPOINT="+loopback(t), "STORAGE_DIR="+filepath.Join(singleDir, "storage"),
		"REPORTING_CONTROLLER=k8sevents.io/e2e-single", "REPORTING_INSTANCE=single")
	single := startCollectorEnv(t, singleDir, tier2, singleEnv)
	sendAll(acc.asTier1(ctx), t, endpoint, occs, acc.tier2Credentials(t)) // as tier 1 connects
	// A stop leaves the exporter's backlog in its persistent queue, which
	// the next start writes in another order (a later record of an object
	// first, the earlier ones then stale): fewer writes, by as much as the
	// backlog at the stop. The runs are compared on what their pipelines
	// write, so each stops once it has written what it emitted.
	awaitExported(t, single)
	singleStale := single.scrape(t).Pipeline().Stale
	require.NoError(t, single.Stop(time.Minute))
	// The shutdown flush waits in the persistent queue: the next start writes it.
	single = startCollectorEnv(t, singleDir, tier2, singleEnv)
	awaitOccurrences(t, cs, "k8sevents.io/e2e-single", truth, 0)
	singleStale += single.scrape(t).Pipeline().Stale
	require.NoError(t, single.Stop(time.Minute))
	settledEventRequests(t, cs)
	singleByCode := requestsByCode(ctx, t, cs).Minus(before)
	singleWrites := singleByCode.Writes()
	one := readScaleOut(t, cs, "k8sevents.io/e2e-single")
	require.Equal(t, truth, one.counts, "one collector: exact final counts")
	deleteEvents(ctx, t, cs, occs)

	// Three tier-2 collectors behind one tier-1 collector.
	before = requestsByCode(ctx, t, cs)
	var tier2s []*collector
	var backends, dirs []string
	var envs [][]string
	for i := range 3 {
		ep, dir := loopback(t), t.TempDir()
		envs = append(envs, append(append([]string(nil), env...), "OTLP_GRPC_ENDPOINT="+ep, "OTLP_HTTP_ENDPOINT="+loopback(t),
			"STORAGE_DIR="+filepath.Join(dir, "storage"), "REPORTING_CONTROLLER=k8sevents.io/e2e-scaled", fmt.Sprintf("REPORTING_INSTANCE=tier2-%d", i)))
		tier2s = append(tier2s, startCollectorEnv(t, dir, tier2, envs[i]))
		backends, dirs = append(backends, ep), append(dirs, dir)
	}
	endpoint = loopback(t)
	lb := startCollectorEnv(t, t.TempDir(), tier1, append(slices.Clone(env), "OTLP_GRPC_ENDPOINT="+endpoint, "OTLP_HTTP_ENDPOINT="+loopback(t),
		"TIER2_ENDPOINTS=["+strings.Join(backends, ", ")+"]"))
	sendAll(acc.withToken(ctx), t, endpoint, occs, nil)
	// Tier 1 first: its queues drain into tier 2, which then flushes.
	require.NoError(t, lb.Stop(time.Minute))
	split := make([]float64, len(tier2s))
	var total float64
	for i, c := range tier2s {
		split[i] = c.scrape(t).Sum("otelcol_processor_eventseries_occurrences")
		total += split[i]
		assert.Positive(t, split[i], "tier-2 collector %d got no occurrence", i)
	}
	require.Equal(t, float64(len(occs)), total, "occurrences counted by tier 2 after tier 1 stopped: %v", split)
	var scaledStale float64
	for _, c := range tier2s {
		awaitExported(t, c)
		scaledStale += c.scrape(t).Pipeline().Stale
		require.NoError(t, c.Stop(time.Minute))
	}
	for i := range tier2s {
		tier2s[i] = startCollectorEnv(t, dirs[i], tier2, envs[i])
	}
	awaitOccurrences(t, cs, "k8sevents.io/e2e-scaled", truth, 0)
	for _, c := range tier2s {
		scaledStale += c.scrape(t).Pipeline().Stale
		require.NoError(t, c.Stop(time.Minute))
	}
	settledEventRequests(t, cs)
	scaledByCode := requestsByCode(ctx, t, cs).Minus(before)
	scaledWrites := scaledByCode.Writes()
	three := readScaleOut(t, cs, "k8sevents.io/e2e-scaled")

	assert.Equal(t, one.counts, three.counts, "final counts per (object, reason): three collectors vs one")
	for obj, instances := range three.writers {
		assert.Len(t, instances, 1, "%s written by more than one tier-2 collector: %v", obj, instances)
	}
	// A record the exporter skips as stale (a later one of its object
	// was queued before it was written) is a write the pipeline decided
	// and a backlog saved: how many depends on how far the API server
	// lagged, so the runs are compared on writes plus those.
	singleDecided, scaledDecided := float64(singleWrites)+singleStale, float64(scaledWrites)+scaledStale
	assert.LessOrEqual(t, math.Abs(scaledDecided-singleDecided), 0.01*singleDecided,
		"API writes plus stale records: three collectors %d+%v vs one %d+%v; Event requests by verb and code: three %v, one %v",
		scaledWrites, scaledStale, singleWrites, singleStale, scaledByCode, singleByCode)
	t.Logf("mixed: %d occurrences, %d (object, reason) pairs; API writes: one collector %d (%d Events, %v stale), three %d (%d Events, %v stale; occurrences per tier-2 collector %v); client-go series recorder %d",
		len(occs), len(truth), singleWrites, one.events, singleStale, scaledWrites, three.events, scaledStale, split, recordermodel.Series(occs).Writes)
}

// requestsByCode is the API server's count of Event requests so far, by
// verb and response code: the writes, and what a difference in them is
// made of.
func requestsByCode(ctx context.Context, t *testing.T, cs kubernetes.Interface) kubetest.Requests {
	t.Helper()
	q, err := kubetest.EventRequests(ctx, cs)
	require.NoError(t, err)
	return q
}

// awaitExported waits until the collector's exporter has finished with
// every record its processor emitted (written, or skipped as unchanged).
// The exporter writes one record at a time, so how long that takes is the
// API server's latency times the records: on a machine busy with other
// tests, minutes. The bound is on progress instead of on the total: it
// fails when the exporter finishes nothing for exportStall. The wait
// ends, since every step of progress is a record finished.
func awaitExported(t *testing.T, c *collector) {
	t.Helper()
	const exportStall = 2 * time.Minute
	last, progressed := -1.0, time.Now()
	for {
		p := c.scrape(t).Pipeline()
		if p.Done == p.RecordsOut {
			return
		}
		if p.Done != last {
			last, progressed = p.Done, time.Now()
		}
		if time.Since(progressed) > exportStall {
			t.Fatalf("the exporter finished nothing for %v: records out %v, exporter done %v", exportStall, p.RecordsOut, p.Done)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// objectReason is an (object, reason), the object as namespace/kind/name:
// the mixed storm has many namespaces.
type objectReason struct{ object, reason string }

// scaleOutResult is what one run left on the API server.
type scaleOutResult struct {
	events  int
	counts  map[objectReason]int64
	writers map[string]map[string]bool // object -> writing collectors (k8sevents.io/written-by)
}

func readScaleOut(t *testing.T, cs kubernetes.Interface, controller string) scaleOutResult {
	t.Helper()
	r := scaleOutResult{counts: map[objectReason]int64{}, writers: map[string]map[string]bool{}}
	visitEvents(t, cs, controller, func(ev *eventsv1.Event) {
		obj := ev.Regarding.Namespace + "/" + ev.Regarding.Kind + "/" + ev.Regarding.Name
		r.events++
		r.counts[objectReason{obj, ev.Reason}] += k8sevent.EventsV1Occurrences(ev)
		if r.writers[obj] == nil {
			r.writers[obj] = map[string]bool{}
		}
		writer := ev.Annotations[k8sevent.AnnotationWrittenBy]
		assert.NotEmpty(t, writer, "%s names no writing collector", ev.Name)
		r.writers[obj][writer] = true
	})
	return r
}

// readyConfig is a file of testdata/config.
func readyConfig(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "config", name))
	require.NoError(t, err)
	return string(b)
}

func loopback(t testing.TB) string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }

// sendAll replays the storm as fast as the collector takes it, with its own
// timestamps, and requires every record accepted; creds: the connection's
// TLS (nil: plaintext).
func sendAll(ctx context.Context, t *testing.T, endpoint string, occs []storm.Occurrence, creds credentials.TransportCredentials) {
	t.Helper()
	st, err := stormsend.OTLP(ctx, endpoint, occs, stormsend.Options{MaxDuration: 2 * time.Minute, Credentials: creds})
	require.NoError(t, err)
	require.Equal(t, int64(len(occs)), st.Writes, "records accepted by %s", endpoint)
	require.Zero(t, st.Failures)
}

// deleteEvents removes every Event of the storm's namespaces.
func deleteEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface, occs []storm.Occurrence) {
	t.Helper()
	nss := map[string]bool{}
	for i := range occs {
		ev := occs[i].Event()
		nss[ev.ObjectNamespace()] = true
	}
	for ns := range nss {
		require.NoError(t, cs.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}), "namespace %s", ns)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		left := 0
		for ns := range nss {
			l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return false, err.Error()
			}
			left += len(l.Items)
		}
		return left == 0, fmt.Sprintf("events left in %d namespaces", len(nss))
	})
}
