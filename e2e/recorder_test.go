package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// The storm of TestRecorderStorm: the first 10 minutes of the crashloop
// scenario (1,491 occurrences over 80 (pod, reason) pairs) at 12x, about
// 50 s; the collector of the outage run is stopped from 10 s to 40 s.
const (
	recorderWindow  = 10 * time.Minute
	recorderSpeed   = 12
	outageAfter     = 10 * time.Second
	outageFor       = 30 * time.Second
	recorderRunsMax = 3 * time.Minute
)

// exampleSummary is the JSON line recorder/example prints at its end.
type exampleSummary struct {
	Emitted        int    `json:"emitted"`
	Elapsed        string `json:"elapsed"`
	StartGoroutine int    `json:"start_goroutines"`
	PeakGoroutines int    `json:"peak_goroutines"`
	ShutdownError  string `json:"shutdown_error"`
	Stats          struct {
		Calls, Accepted, Dropped, Invalid, Sent, FellBack, Lost, Pending, Failures, MaxQueue int64
	} `json:"stats"`
}

// TestRecorderStorm: recorder/example, built with
// go build from its own module (no module dependency either way), reports
// the crashloop storm through the recorder to the built collector (otlp →
// eventseries → k8sevents) writing to API server A; the same storm goes
// through client-go's tools/record and tools/events straight into API
// server B. A second run of the example goes through a collector writing
// to B that is stopped for 30 s mid-storm. Asserted: through ours, every
// (object, reason) pair is on the server with exactly its number of
// occurrences, with and without the outage; during the outage the app
// dropped nothing, lost nothing, started no goroutine per call, and its
// recorder retried. client-go's results and every run's API writes are
// logged (make bench writes them to bench/e2e-runs.txt).
func TestRecorderStorm(t *testing.T) {
	parallel(t)
	binary(t)
	built := make(chan string, 1)
	go func() { built <- buildExample(t) }()
	srvA, srvB := kubetest.Start(t), kubetest.Start(t)
	a, b := srvA.Clientset(), srvB.Clientset()
	// The bound below is the storm's, not the build's: from empty caches
	// the example compiles its module's dependencies, minutes on a busy
	// machine.
	example := <-built
	require.NotEmpty(t, example, "recorder/example did not build")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	occs := stormWindow(t, "crashloop", recorderWindow)
	for _, cs := range []kubernetes.Interface{a, b} {
		require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))
	}
	requireSameStorm(t, example, occs)

	const clean, outage = "k8sevents.io/e2e-recorder", "k8sevents.io/e2e-recorder-outage"
	portA, portB := freePort(t), freePort(t)
	cfgA, cfgB := recorderCollectorConfig(portA, srvA.Kubeconfig(t), clean), recorderCollectorConfig(portB, srvB.Kubeconfig(t), outage)
	dirA, dirB := t.TempDir(), t.TempDir()
	cA, cB := startCollector(t, dirA, cfgA), startCollector(t, dirB, cfgB)
	writesBefore := eventWritesOf(ctx, t, a, b)

	var wg sync.WaitGroup
	var ours, oursOutage exampleSummary
	var legacy, series stormsend.Stats
	var errs [4]error
	run := func(i int, f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	run(0, func() (err error) { ours, err = runExample(ctx, example, portA, len(occs)); return err })
	run(1, func() (err error) { oursOutage, err = runExample(ctx, example, portB, len(occs)); return err })
	opts := stormsend.Options{Speed: recorderSpeed, MaxDuration: 2 * time.Minute}
	run(2, func() (err error) {
		legacy, err = stormsend.Record(ctx, srvB.RESTConfig(), reportedBy(occs, "example.com/crashloop-record"), opts, stormsend.RecorderLegacy)
		return err
	})
	run(3, func() (err error) {
		series, err = stormsend.Record(ctx, srvB.RESTConfig(), reportedBy(occs, "example.com/crashloop-events"), opts, stormsend.RecorderEvents)
		return err
	})
	time.Sleep(outageAfter)
	require.NoError(t, cB.Stop(time.Minute), "collector B stopped mid-storm")
	time.Sleep(outageFor)
	cB = startCollector(t, dirB, cfgB)
	wg.Wait()
	for i, name := range []string{"example to collector A", "example to collector B (outage)", "tools/record", "tools/events"} {
		require.NoError(t, errs[i], name)
	}
	require.NoError(t, cA.Stop(time.Minute), "SIGTERM: the processor flushes its open series")
	require.NoError(t, cB.Stop(time.Minute))
	writesAfter := eventWritesOf(ctx, t, a, b)

	truth := truthTally(occs)
	rows := []recorderRow{
		{"ours: recorder → collector → A", tallyOf(ctx, t, a, clean), writesAfter[0] - writesBefore[0]},
		{"ours, collector down 30 s → B", tallyOf(ctx, t, b, outage),
			writesAfter[1] - writesBefore[1] - legacy.Writes - series.Writes},
		{"client-go tools/record → B", tallyOf(ctx, t, b, "example.com/crashloop-record"), legacy.Writes},
		{"client-go tools/events → B", tallyOf(ctx, t, b, "example.com/crashloop-events"), series.Writes},
	}
	logRecorderTable(t, truth, rows)
	for _, r := range rows[:2] {
		lines, missing, extra := diffTallies(truth, r.tally, 10)
		assert.Empty(t, lines, "%s: per (object, reason) the occurrences sent (missing %d, extra %d)", r.name, missing, extra)
	}
	assertNeverHurt(t, len(occs), ours, oursOutage)
	t.Logf("outage run: %d export failures retried, at most %d events queued, goroutines %d at start, %d at most; clean run: goroutines %d/%d",
		oursOutage.Stats.Failures, oursOutage.Stats.MaxQueue, oursOutage.StartGoroutine, oursOutage.PeakGoroutines, ours.StartGoroutine, ours.PeakGoroutines)
}

// TestRecorderFallback is the recorder's fallback, for operators who want no
// Event lost while the collector is down: with nothing listening on the
// OTLP port and a fallback to client-go's own tools/record recorder after
// 1 s, the example's storm (the first 2 minutes of crashloop, at full
// speed) goes straight to the API server (its client at 100 QPS, not
// client-go's default 5, so the test does not wait a minute on the
// client's rate limiter); every (object, reason) pair is
// there, and the recorder counts every event as handed over.
func TestRecorderFallback(t *testing.T) {
	parallel(t)
	example := buildExample(t)
	require.NotEmpty(t, example, "recorder/example did not build")
	srv := kubetest.Start(t)
	cs := srv.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	occs := stormWindow(t, "crashloop", 2*time.Minute)
	require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))
	const controller = "example.com/crashloop-fallback"
	s, err := runExample(ctx, example, freePort(t), len(occs), "-speed", "0", "-controller", controller,
		"-fallback-kubeconfig", srv.Kubeconfig(t), "-fallback-after", "1s", "-fallback-settle", "60s",
		"-fallback-qps", "100") // client-go's default 5 QPS made the test wait ~60 s on its rate limiter
	require.NoError(t, err)
	assert.Equal(t, int64(len(occs)), s.Stats.FellBack, "every event handed to client-go's recorder")
	assert.Zero(t, s.Stats.Sent+s.Stats.Dropped+s.Stats.Lost, "none sent to the absent collector, dropped or lost")
	assert.Positive(t, s.Stats.Failures)

	// The example waits for client-go's recorder to have handled every
	// event (a marker behind them) before it exits: no waiting here. (It
	// once waited for an idle sink, which the events had not reached yet
	// on a loaded machine; its Shutdown then dropped them all.)
	truth := truthTally(occs)
	got := tallyOf(ctx, t, cs, controller)
	require.Len(t, got.Pairs, len(truth.Pairs), "(object, reason) pairs on the server when the example exited")
	for p := range truth.Pairs {
		assert.Positive(t, got.Pairs[p], "pair %v on the server", p)
	}
	logRecorderTable(t, truth, []recorderRow{{"ours → fallback tools/record (no collector)", got, -1}})
}

// assertNeverHurt checks what the recorder promises the app: the whole
// storm emitted and sent, nothing dropped, lost or refused, no goroutine
// per call; and that the outage run did meet the outage (failed exports
// retried, events buffered meanwhile).
func assertNeverHurt(t *testing.T, n int, ours, oursOutage exampleSummary) {
	t.Helper()
	for _, s := range []exampleSummary{ours, oursOutage} {
		assert.Equal(t, n, s.Emitted, "the fake controller emitted the whole storm")
		assert.Equal(t, int64(n), s.Stats.Sent, "every event sent")
		assert.Zero(t, s.Stats.Dropped+s.Stats.Lost+s.Stats.Invalid, "nothing dropped, lost or refused")
		assert.Empty(t, s.ShutdownError)
		// The gRPC connection's own few goroutines come and go with (re)connects.
		assert.LessOrEqual(t, s.PeakGoroutines, s.StartGoroutine+20, "no goroutine per call")
	}
	assert.Positive(t, oursOutage.Stats.Failures, "the outage run's exports failed while the collector was down")
	assert.Positive(t, oursOutage.Stats.MaxQueue, "and the recorder buffered meanwhile")
}

// recorderCollectorConfig is otlp → eventseries → k8sevent, with the spam
// filter keyed by reason too, as otlp-ingestion.yaml sets it.
func recorderCollectorConfig(port int, kubeconfig, controller string) string {
	return fmt.Sprintf(`
receivers:
  otlp: {protocols: {grpc: {endpoint: "127.0.0.1:%d"}}}
processors:
  eventseries: {spam_filter: {key: [source, object, type, reason]}}
exporters:
  k8sevents: {auth_type: kubeConfig, kubeconfig: %q, reporting_controller: %s, qps: 100, burst: 200}
service:
  extensions: [health_check]
  pipelines:
    logs: {receivers: [otlp], processors: [eventseries], exporters: [k8sevents]}
`, port, kubeconfig, controller)
}

// exampleBuild is recorder/example built once for the package: its two
// tests run in parallel and would otherwise compile it twice at once (a
// cold build cache gains nothing from the first). TestMain removes dir.
var exampleBuild struct {
	once      sync.Once
	dir, path string
	failure   string
}

// buildExample builds recorder/example in the recorder module's own
// directory; "" when the build failed (logged).
func buildExample(t *testing.T) string {
	exampleBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-recorder-example-")
		if err != nil {
			exampleBuild.failure = fmt.Sprintf("temp dir for recorder/example: %v", err)
			return
		}
		exampleBuild.dir = dir
		out := filepath.Join(dir, "recorder-example")
		// With the distribution's flags (CGO_ENABLED=0 -trimpath, as
		// test-e2e in the Makefile): the packages the example shares with
		// it (client-go, gRPC, OpenTelemetry) are then compiled once, not
		// again from empty caches.
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./example")
		cmd.Dir = filepath.Join("..", "recorder")
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			exampleBuild.failure = fmt.Sprintf("go build ./example in recorder/: %v\n%s", err, msg)
			return
		}
		exampleBuild.path = out
	})
	if exampleBuild.path == "" {
		t.Log(exampleBuild.failure)
	}
	return exampleBuild.path
}

// requireSameStorm checks that the example's own copy of the crashloop
// storm is the one this module generates.
func requireSameStorm(t *testing.T, example string, occs []storm.Occurrence) {
	t.Helper()
	out, err := exec.Command(example, "-print", "-count", fmt.Sprint(len(occs))).Output()
	require.NoError(t, err)
	got, err := storm.Read(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, occs, got, "recorder/example's storm")
}

// runExample runs the example against a collector's OTLP gRPC port;
// extra flags override the test's defaults.
func runExample(ctx context.Context, example string, port, count int, extra ...string) (exampleSummary, error) {
	var s exampleSummary
	args := append([]string{"-endpoint", fmt.Sprintf("127.0.0.1:%d", port), "-protocol", "grpc", "-insecure",
		"-speed", fmt.Sprint(recorderSpeed), "-count", fmt.Sprint(count), "-duration", recorderRunsMax.String(),
		"-instance", "example-0", "-shutdown-timeout", "60s"}, extra...)
	cmd := exec.CommandContext(ctx, example, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return s, fmt.Errorf("example: %w\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return s, fmt.Errorf("example summary %q: %w", out, err)
	}
	return s, nil
}

// reportedBy is the storm as one controller instance reports it, like the
// example: one reporting controller, instance example-0.
func reportedBy(occs []storm.Occurrence, controller string) []storm.Occurrence {
	out := append([]storm.Occurrence(nil), occs...)
	for i := range out {
		out[i].Controller, out[i].Instance = controller, "example-0"
	}
	return out
}

// truthTally is the storm counted per pair: what exact counts are.
func truthTally(occs []storm.Occurrence) eventTally {
	t := eventTally{Pairs: map[eventPair]int64{}}
	for i := range occs {
		r := occs[i].Regarding
		t.Pairs[eventPair{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID, Reason: occs[i].Reason}]++
		t.Occurrences++
	}
	return t
}

func tallyOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, controller string) eventTally {
	t.Helper()
	evs, err := listEvents(ctx, cs, func(ev *corev1.Event) bool { return ev.ReportingController == controller })
	require.NoError(t, err)
	return tallyEvents(evs)
}

// recorderRow is one line of the comparison table.
type recorderRow struct {
	name   string
	tally  eventTally
	writes int64
}

// logRecorderTable logs the comparison: pairs visible, pairs with the
// exact count, occurrences counted, Event objects and API writes.
func logRecorderTable(t *testing.T, truth eventTally, rows []recorderRow) {
	var b strings.Builder
	fmt.Fprintf(&b, "storm: %d occurrences over %d (object, reason) pairs\n", truth.Occurrences, len(truth.Pairs))
	fmt.Fprintf(&b, "| path | pairs visible | pairs exact | occurrences counted | Event objects | API writes |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		visible, exact := 0, 0
		for p, n := range truth.Pairs {
			if r.tally.Pairs[p] > 0 {
				visible++
			}
			if r.tally.Pairs[p] == n {
				exact++
			}
		}
		writes := "not counted"
		if r.writes >= 0 {
			writes = fmt.Sprint(r.writes)
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %d | %d | %d | %s |\n", r.name, visible, len(truth.Pairs), exact, r.tally.Occurrences, r.tally.Objects, writes)
	}
	t.Log("\n" + b.String())
}
