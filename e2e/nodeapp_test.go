package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Both apps report as one controller and instance, as the same app would;
// the collectors write as ingestController (the ready configuration
// overrides what apps claim).
const (
	appController    = "example.com/crashloop-controller"
	appInstance      = "app-0"
	ingestController = "k8sevents.io/e2e-node-app"
	appRunsMax       = 2 * time.Minute
)

// TestNodeAppWritesTheGoRecordersEvents: the Node.js example
// (examples/node: the OpenTelemetry JS logs SDK and its OTLP/HTTP exporter)
// and the Go recorder's example (recorder/example) report the same
// occurrences, each to its own built collector running the ready
// otlp-ingestion.yaml in front of its own API server, each with a real
// ServiceAccount token read from a file. The Node app is sent half the
// occurrences, flushes, has its token file replaced by a new token of its
// ServiceAccount (as kubelet rotates it), and gets the rest. Asserted: on
// both servers every (object, reason) has exactly its occurrences in one
// object per series; the records the receivers passed on are the same
// (EventName, severity, body, every attribute), those the Node app sent
// after the rotation under the new token (a second TokenReview); the Events written are the same
// field by field, but for what is the moment or the server's own.
func TestNodeAppWritesTheGoRecordersEvents(t *testing.T) {
	parallel(t)
	binary(t)
	node, dir := nodeExample(t)
	built := make(chan string, 1)
	go func() { built <- buildExample(t) }()
	occs := nodeAppOccurrences(t)
	input := filepath.Join(t.TempDir(), "occurrences.jsonl")
	require.NoError(t, storm.WriteFile(input, occs))

	nodeSide, goSide := startIngestSide(t), startIngestSide(t)
	goExample := <-built // before the bound: from empty caches the build takes minutes
	require.NotEmpty(t, goExample, "recorder/example did not build")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var goRun exampleSummary
	var goErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		goRun, goErr = runExample(ctx, goExample, goSide.httpPort, len(occs), "-input", input, "-speed", "0",
			"-protocol", "http/protobuf", "-token-file", goSide.tokenFile, "-controller", appController, "-instance", appInstance)
	}()
	half := len(occs) / 2
	// A new token of the same ServiceAccount, as kubelet rotates it: another
	// ServiceAccount would be another client, whose records open series of
	// their own.
	rotated := nodeSide.rig.srv.ServiceAccountToken(t, "shop", "app", time.Hour, authAudience)
	flushed, done := runNodeApp(ctx, t, node, dir, nodeSide.url(), nodeSide.tokenFile, occs, half,
		func() { writeToken(t, nodeSide.tokenFile, rotated) })
	wg.Wait()
	require.NoError(t, goErr, "recorder/example")

	assert.Equal(t, nodeCounts{Recorded: half, Sent: half}, flushed, "the Node app's counts after the first half and a flush")
	assert.Equal(t, nodeCounts{Recorded: len(occs), Sent: len(occs)}, done, "the Node app's counts at its end")
	assert.Equal(t, int64(len(occs)), goRun.Stats.Sent, "the Go recorder sent every occurrence")
	assert.Zero(t, goRun.Stats.Dropped+goRun.Stats.Lost+goRun.Stats.Invalid)
	reviews := nodeSide.c.scrape(t).Sum("otelcol_extension_k8stokenauth_token_reviews", "outcome=authenticated")
	assert.Equal(t, 2.0, reviews, "one TokenReview per token: the Node app read the rotated file")

	// SIGTERM: the processor flushes its open series into the exporter's
	// queue on disk; the next start writes them.
	truth := truthTally(occs)
	for i, side := range []*ingestSide{nodeSide, goSide} {
		side.c.stopAndWrite(t, time.Minute, func() (bool, string) {
			evs, err := listEvents(ctx, side.rig.srv.Clientset(), byController(ingestController))
			require.NoError(t, err)
			lines, missing, extra := diffTallies(truth, tallyEvents(evs), 3)
			return len(lines) == 0, fmt.Sprintf("%s: missing %d, extra %d: %v", side.name(i), missing, extra, lines)
		})
	}

	nodeRecs, nodeClients := receivedRecords(t, nodeSide.received)
	goRecs, goClients := receivedRecords(t, goSide.received)
	assert.Equal(t, map[string]int{"system:serviceaccount:shop:app": len(occs)}, nodeClients, "the Node app's records by their client")
	assert.Equal(t, map[string]int{"system:serviceaccount:shop:app": len(occs)}, goClients)
	require.Len(t, nodeRecs, len(occs))
	assert.Equal(t, goRecs, nodeRecs, "the records the receivers passed on, Go recorder's and Node app's")

	var written [2][]corev1.Event
	for i, side := range []*ingestSide{nodeSide, goSide} {
		evs, err := listEvents(ctx, side.rig.srv.Clientset(), byController(ingestController))
		require.NoError(t, err)
		lines, missing, extra := diffTallies(truth, tallyEvents(evs), 10)
		assert.Empty(t, lines, "%s: per (object, reason) the occurrences sent (missing %d, extra %d)", side.name(i), missing, extra)
		for k, objs := range seriesObjects(evs) {
			assert.Len(t, objs, 1, "%s: objects of series %+v", side.name(i), k)
		}
		written[i] = evs
	}
	nodeEvs, goEvs := comparableEvents(written[0]), comparableEvents(written[1])
	assert.Len(t, nodeEvs, len(goEvs), "series written")
	for k, want := range goEvs {
		assert.Equal(t, want, nodeEvs[k], "the Event of series %+v, Go recorder's and Node app's", k)
	}
	t.Logf("%d occurrences over %d (object, reason) pairs: %d Events on each server", len(occs), len(truth.Pairs), len(written[0]))
}

// nodeExample is node and examples/node with its packages (make test runs
// npm ci there); missing, the test skips, or fails under CI=true.
func nodeExample(t *testing.T) (node, dir string) {
	t.Helper()
	dir = filepath.Join("..", "examples", "node")
	node, err := exec.LookPath("node")
	var missing string
	switch {
	case err != nil:
		missing = "node is not on PATH: the Node.js example needs Node.js 18.19, or 20.6 or later"
	default:
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@opentelemetry", "sdk-logs", "package.json")); err != nil {
			missing = "examples/node has no node_modules: run npm ci there (make test does)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node, dir
}

// nodeAppOccurrences are the first 5 minutes of the crashloop storm, and
// what it lacks: actions of their own with a related object (a Node, and
// one with a namespace), and a cluster-scoped regarding object (its Event
// in default, its record's namespace attribute empty).
func nodeAppOccurrences(t *testing.T) []storm.Occurrence {
	t.Helper()
	occs := stormWindow(t, "crashloop", 5*time.Minute)
	pod := occs[0].Regarding
	node := storm.Ref{Kind: "Node", Name: "node-1", UID: "uid-node-1", APIVersion: "v1"}
	pvc := &storm.Ref{Kind: "PersistentVolumeClaim", Namespace: pod.Namespace, Name: "data", UID: "uid-pvc-data", APIVersion: "v1"}
	at := occs[len(occs)-1].Time
	add := func(n int, typ, reason, action, note string, regarding storm.Ref, related *storm.Ref) {
		for range n {
			at = at.Add(time.Second)
			occs = append(occs, storm.Occurrence{Time: at, Type: typ, Reason: reason, Action: action, Note: note,
				Regarding: regarding, Related: related, Controller: appController, Instance: appInstance})
		}
	}
	add(2, corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned shop/"+pod.Name+" to node-1", pod, &node)
	add(3, corev1.EventTypeWarning, "FailedAttachVolume", "Attach", "AttachVolume.Attach failed for volume data", pod, pvc)
	add(4, corev1.EventTypeWarning, "NodeNotReady", "Heartbeat", "Node node-1 status is now: NodeNotReady", node, nil)
	return occs
}

// ingestSide is one API server with namespace shop, and the built
// collector on the ready otlp-ingestion.yaml writing to it; the records
// its receiver passes on also go to a file.
type ingestSide struct {
	rig       *authRig
	c         *collector
	httpPort  int
	received  string
	tokenFile string // ServiceAccount shop/app's token, allowed in shop and default
}

func startIngestSide(t *testing.T) *ingestSide {
	t.Helper()
	dir := t.TempDir()
	s := &ingestSide{rig: newAuthRig(t, "shop"), httpPort: freePort(t),
		received: filepath.Join(dir, "received.jsonl"), tokenFile: filepath.Join(dir, "token")}
	writeToken(t, s.tokenFile, s.rig.serviceAccount(t, "shop", "app", "shop", "default"))
	received := fmt.Sprintf(`
exporters:
  file/received: {path: %q, append: true}
  k8sevents: {qps: 100, burst: 200}
service:
  pipelines:
    logs/received: {receivers: [k8seventsotlp], exporters: [file/received]}
`, s.received)
	s.c = startCollectorEnv(t, dir, readyConfig(t, "otlp-ingestion.yaml"), append(s.rig.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+loopback(t), fmt.Sprintf("OTLP_HTTP_ENDPOINT=127.0.0.1:%d", s.httpPort),
		"REPORTING_CONTROLLER="+ingestController, "CLIENT_RECORDS_PER_SECOND=100000", "CLIENT_BURST=100000"), received)
	return s
}

// url is the collector's OTLP/HTTP logs URL.
func (s *ingestSide) url() string { return fmt.Sprintf("http://127.0.0.1:%d/v1/logs", s.httpPort) }

func (s *ingestSide) name(i int) string { return [...]string{"Node app", "Go recorder"}[i] }

// writeToken replaces the token file as kubelet does: a new file renamed
// over the old one, so a reader sees one token or the other.
func writeToken(t *testing.T, path, token string) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte(token), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// nodeCounts are what the Node example prints (EventRecorder.stats).
type nodeCounts struct {
	Recorded, Invalid, Sent, Failed int
}

// TestNodeAppCountsWhatItCouldNotSend: with nothing listening where the
// Node app sends, the SDK's exporter gives up, and the app's counts say
// every record failed and none was sent (the limit examples/node's README
// states: delivery is the SDK's, with no buffer beyond its retries).
func TestNodeAppCountsWhatItCouldNotSend(t *testing.T) {
	parallel(t)
	node, dir := nodeExample(t)
	occs := stormWindow(t, "crashloop", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), appRunsMax)
	defer cancel()
	nobody := fmt.Sprintf("http://127.0.0.1:%d/v1/logs", freePort(t))
	flushed, done := runNodeApp(ctx, t, node, dir, nobody, "-", occs, len(occs), func() {})
	assert.Equal(t, nodeCounts{Recorded: len(occs), Failed: len(occs)}, flushed)
	assert.Equal(t, flushed, done)
}

// runNodeApp runs the Node example sending to url with the token of
// tokenFile ("-": none): it writes the first half occurrences to its
// input, and an empty line (flush); once the app says it flushed, calls
// rotate, writes the rest and closes the input. It answers the counts the
// app printed after the flush and at its end.
func runNodeApp(ctx context.Context, t *testing.T, node, dir, url, tokenFile string, occs []storm.Occurrence, half int, rotate func()) (flushed, done nodeCounts) {
	t.Helper()
	return runNode(ctx, t, node, dir, []string{"--url", url, "--token-file", tokenFile}, nil, occs, half, rotate)
}

// runNode is runNodeApp with main.js's arguments and environment given:
// the test's environment without any variable that names a collector,
// and env.
func runNode(ctx context.Context, t *testing.T, node, dir string, args, env []string, occs []storm.Occurrence, half int, rotate func()) (flushed, done nodeCounts) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{"main.js", "--controller", appController, "--instance", appInstance,
		"--max-seconds", fmt.Sprint(int(appRunsMax.Seconds()))}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(nodeEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	report := func(what string) nodeCounts {
		t.Helper()
		line, ok := <-lines // the app's --max-seconds and ctx bound the wait
		if !ok {
			err := cmd.Wait()
			t.Fatalf("the Node app ended before it reported %q: %v\n%s", what, err, stderr.String())
		}
		var got map[string]nodeCounts
		require.NoError(t, json.Unmarshal([]byte(line), &got), line)
		require.Contains(t, got, what, line)
		return got[what]
	}
	require.NoError(t, writeOccurrences(stdin, occs[:half]))
	_, err = io.WriteString(stdin, "\n")
	require.NoError(t, err)
	flushed = report("flushed")
	rotate()
	require.NoError(t, writeOccurrences(stdin, occs[half:]))
	require.NoError(t, stdin.Close())
	done = report("done")
	require.NoError(t, cmd.Wait(), stderr.String())
	if stderr.Len() > 0 {
		t.Logf("Node app's stderr:\n%s", stderr.String())
	}
	return flushed, done
}

// nodeEnv is the test's environment without the variables that name a
// collector, so that only what a test gives reaches the app.
func nodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "K8SEVENTS_OTLP_") && !strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") {
			env = append(env, kv)
		}
	}
	return env
}

func writeOccurrences(w io.Writer, occs []storm.Occurrence) error {
	var b bytes.Buffer
	if err := storm.Write(&b, occs); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// receivedRecords reads what a receiver passed on: each record as it
// compares between apps (EventName, severity, body, attributes but its
// client; sorted), and the records per client.
func receivedRecords(t *testing.T, file string) ([]string, map[string]int) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var recs []string
	clients := map[string]int{}
	var un plog.JSONUnmarshaler
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ld, err := un.UnmarshalLogs([]byte(line))
		require.NoError(t, err)
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					attrs := lr.Attributes().AsRaw()
					client, _ := attrs["k8s.event.client"].(string)
					clients[client]++
					delete(attrs, "k8s.event.client")
					// The receiver makes the reporter its client's, "<client>@<namespace>".
					instance, _ := attrs[k8sevent.AttrReportingInstance].(string)
					require.True(t, strings.HasPrefix(instance, client+"@"), "reporting instance %q of client %q", instance, client)
					delete(attrs, k8sevent.AttrReportingInstance)
					b, err := json.Marshal(map[string]any{"event_name": lr.EventName(), "severity": lr.SeverityText(),
						"severity_number": lr.SeverityNumber(), "body": lr.Body().AsRaw(), "attributes": attrs})
					require.NoError(t, err)
					recs = append(recs, string(b))
				}
			}
		}
	}
	slices.Sort(recs)
	return recs, clients
}

// comparableEvents are evs without what differs between two servers
// writing the same occurrences at different moments: object metadata (the
// name, made of the series and its first moment; uid, resourceVersion,
// creation time, managed fields) and the times of the occurrences. Keyed
// by series.
func comparableEvents(evs []corev1.Event) map[eventSeriesKey]corev1.Event {
	out := map[eventSeriesKey]corev1.Event{}
	for _, ev := range evs {
		ev.ObjectMeta = metav1.ObjectMeta{Namespace: ev.Namespace, Labels: ev.Labels, Annotations: ev.Annotations}
		ev.FirstTimestamp, ev.LastTimestamp, ev.EventTime = metav1.Time{}, metav1.Time{}, metav1.MicroTime{}
		if ev.Series != nil {
			s := *ev.Series
			s.LastObservedTime = metav1.MicroTime{}
			ev.Series = &s
		}
		out[seriesKeyOf(&ev)] = ev
	}
	return out
}
