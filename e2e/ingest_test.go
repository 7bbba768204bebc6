package e2e

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const recordedStreamsDir = "../testdata/streams"

// ingestStreams are the recorded storms replayed through the collector.
// churn is left out: its 100,000 occurrences are 100,000 distinct Events,
// hence 100,000 API writes, minutes of apiserver time on a shared machine;
// the processor's golden test covers it without an API server.
var ingestStreams = []string{"crashloop", "cronjob", "replicaset"}

// TestIngestStreams is end-to-end test 1: each recorded storm goes as OTLP
// logs, with its own timestamps, through otlp → eventseries (event time, the
// settings of the golden files) → k8sevent into a real kube-apiserver. After
// a SIGTERM (the processor flushes its open series, the exporter's queue
// drains), the Events on the server are exactly the last records of the
// golden output, and the API server saw no more event writes than
// client-go's series recorder would make for the stream.
func TestIngestStreams(t *testing.T) {
	parallel(t)
	binary(t)
	srv := kubetest.Start(t)
	kubeconfig := srv.Kubeconfig(t)
	for _, name := range ingestStreams {
		t.Run(name, func(t *testing.T) { ingestStream(t, srv, kubeconfig, name) })
	}
}

func ingestStream(t *testing.T, srv *kubetest.Server, kubeconfig, name string) {
	occs := streamOccurrences(t, name)
	golden := goldenRecords(t, name)
	cs := srv.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))

	// A reporting controller per stream keeps the streams' Events apart on
	// the shared server (the exporter lists its own at start).
	controller := "k8sevents.io/e2e-" + name
	port := freePort(t)
	c := startCollector(t, t.TempDir(), fmt.Sprintf(`
receivers:
  otlp: {protocols: {grpc: {endpoint: "127.0.0.1:%d"}}}
processors:
  eventseries: {time_source: event}
exporters:
  k8sevents:
    auth_type: kubeConfig
    kubeconfig: %q
    # The processor's series map onto events.k8s.io/v1 (series.count), the
    # API of client-go's series recorder this test compares with.
    api: events.k8s.io/v1
    qps: 1000
    burst: 1000
    reporting_controller: %s
    # Blocking, not refusing: a refused batch would be counted by the
    # processor and then sent again by the client's retry.
    sending_queue: {block_on_overflow: true}
service:
  extensions: [health_check]
  pipelines:
    logs: {receivers: [otlp], processors: [eventseries], exporters: [k8sevents]}
`, port, kubeconfig, controller))

	before := eventRequests(t, cs)
	st, err := stormsend.OTLP(ctx, fmt.Sprintf("127.0.0.1:%d", port), occs, stormsend.Options{MaxDuration: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, int64(len(occs)), st.Writes, "records accepted by the collector")
	require.Zero(t, st.Failures)

	// Before the stop: the processor has counted everything and the exporter
	// has written every record emitted so far; what the stop writes after
	// this is the shutdown flush.
	var m collectorproc.Metrics
	eventually(t, 2*time.Minute, func() (bool, string) {
		m = c.scrape(t)
		p := m.Pipeline()
		occ, out, done := p.Occurrences, p.RecordsOut, p.Done
		return occ == float64(len(occs)) && done == out, fmt.Sprintf("occurrences %v of %d, records out %v, exporter done %v", occ, len(occs), out, done)
	})
	atStop := m.Pipeline()
	require.Zero(t, atStop.PermanentFailures)
	writesBeforeStop, outBeforeStop, stale := atStop.Writes, atStop.RecordsOut, atStop.Stale
	require.NoError(t, c.Stop(time.Minute))
	writes := settledEventRequests(t, cs) - before

	got := eventsByName(t, cs, controller)
	want := map[string]namedEvent{}
	for _, w := range golden {
		want[w.Name] = namedEvent{Object: w.Object, Reason: w.Reason, Count: w.Count}
	}
	assert.Equal(t, want, got, "Events on the API server: the last golden record of each name")
	assert.Equal(t, recordermodel.Truth(occs), countsByPair(got), "final counts per (object, reason)")
	// Every record that changes its object's count made exactly one write,
	// the ones flushed at shutdown included, or none because a later record
	// of its object was written first (stale): the queue's consumers push
	// at once, so an object's records may reach the exporter in either
	// order (docs/design.md, per-object order). The shutdown flush comes
	// after every other record is done, so none of it is stale. A record
	// repeating the count made no write.
	assert.Equal(t, changingRecords(golden), writes+int(stale), "API writes + stale records = golden records that change a count")

	series, legacy := recordermodel.Series(occs), recordermodel.Legacy(occs)
	assert.LessOrEqual(t, writes, series.Writes, "API writes vs client-go's series recorder")
	t.Logf("%s: %d occurrences in %v; %d records (%v flushed at shutdown, %d repeating a written count); API writes %d (%v before the stop, %v records stale); client-go series recorder %d, legacy recorder %d; %d Events",
		name, len(occs), st.Elapsed.Round(time.Millisecond), len(golden), float64(len(golden))-outBeforeStop, len(golden)-changingRecords(golden), writes, writesBeforeStop, stale,
		series.Writes, legacy.Writes, len(got))
}

// namedEvent is an Event object as the test compares it.
type namedEvent struct {
	Object, Reason string
	Count          int64
}

// goldenRecord is one record of testdata/streams/golden/<stream>.series.jsonl.gz.
type goldenRecord struct {
	Name   string `json:"name"`
	Count  int64  `json:"count"`
	Object string `json:"object"`
	Reason string `json:"reason"`
}

func streamOccurrences(t *testing.T, name string) []storm.Occurrence {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(recordedStreamsDir, name+".jsonl*"))
	require.NoError(t, err)
	require.Len(t, paths, 1, "stream %s", name)
	occs, err := storm.ReadFile(paths[0])
	require.NoError(t, err)
	return occs
}

func goldenRecords(t *testing.T, name string) []goldenRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(recordedStreamsDir, "golden", name+".series.jsonl.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var out []goldenRecord
	dec := json.NewDecoder(zr)
	for {
		var g goldenRecord
		if err := dec.Decode(&g); err == io.EOF {
			return out
		} else if err != nil {
			require.NoError(t, err)
		}
		out = append(out, g)
	}
}

// eventsByName reads the Events a reporting controller wrote, by name.
func eventsByName(t *testing.T, cs kubernetes.Interface, controller string) map[string]namedEvent {
	t.Helper()
	out := map[string]namedEvent{}
	visitEvents(t, cs, controller, func(ev *eventsv1.Event) {
		out[ev.Name] = namedEvent{Object: ev.Regarding.Kind + "/" + ev.Regarding.Name, Reason: ev.Reason, Count: k8sevent.EventsV1Occurrences(ev)}
	})
	return out
}

// visitEvents calls visit on every Event of a reporting controller.
func visitEvents(t *testing.T, cs kubernetes.Interface, controller string, visit func(*eventsv1.Event)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := cs.EventsV1().Events("").List(ctx, opts)
		require.NoError(t, err)
		for i := range l.Items {
			if l.Items[i].ReportingController == controller {
				visit(&l.Items[i])
			}
		}
		if l.Continue == "" {
			return
		}
		opts.Continue = l.Continue
	}
}

// countsByPair sums the counts of Events per (object, reason).
func countsByPair(evs map[string]namedEvent) map[recordermodel.Pair]int64 {
	out := map[recordermodel.Pair]int64{}
	for _, ev := range evs {
		out[recordermodel.Pair{Object: ev.Object, Reason: ev.Reason}] += ev.Count
	}
	return out
}

// eventRequests is the API server's count of Event write requests (both
// groups, any response code): the load the pipeline put on it, which the
// collector cannot report for its own shutdown.
func eventRequests(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := eventWrites(ctx, cs)
	require.NoError(t, err)
	return int(n)
}

// settledEventRequests is eventRequests once it stops changing: the server
// counts a request when its handler returns, just after the response.
func settledEventRequests(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	last := eventRequests(t, cs)
	eventually(t, 10*time.Second, func() (bool, string) {
		time.Sleep(300 * time.Millisecond)
		n := eventRequests(t, cs)
		ok := n == last
		last = n
		return ok, fmt.Sprintf("event writes still changing: %d", n)
	})
	return last
}

// changingRecords is how many golden records carry a count their name has
// not had before: the ones the exporter writes.
func changingRecords(golden []goldenRecord) int {
	last, n := map[string]int64{}, 0
	for _, g := range golden {
		if c, ok := last[g.Name]; !ok || g.Count > c {
			n++
		}
		last[g.Name] = max(last[g.Name], g.Count)
	}
	return n
}
