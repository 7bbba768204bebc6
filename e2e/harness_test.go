// Package e2e runs the collector distribution (bin/otelcol-k8sevents, built by
// make otelcol) against real kube-apiservers on loopback.
//
// Most tests call parallel (slots_test.go): each starts its own API
// servers, collectors, ports and directories, and spends most of its time
// waiting on a paced storm or a fault (the package used about 0.35 of a
// core run one by one).
// The tests whose bound is what the storm sent within a window of wall time
// before a SIGKILL (crashWindow: records a sink gets again, which the
// processor's 5 s save must bound on time) stay serial, so they run alone,
// before the parallel ones: TestHandOverMirrorCrash and
// TestHandOverTier2Crash. The other crash tests assert exact totals, which
// hold however late a save comes, and run in parallel. TestExactMetrics
// runs in parallel too: its records-out bound is computed from the wall
// time it took (seriesRecordsBound), not from an expected pace of its storm.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
)

// TestMain removes what the package's tests share once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if exampleBuild.dir != "" {
		_ = os.RemoveAll(exampleBuild.dir)
	}
	os.Exit(code)
}

// collector is one collector process of a test, with its loopback ports.
type collector struct {
	*collectorproc.Collector
	health, metrics int
	again           func() *collector // the same collector started again: its directory, configuration, environment
}

// stopAndWrite stops c (SIGTERM: its processor flushes its open series
// into the exporter's persistent queue, which keeps on disk what is not
// written yet) and runs it once more, until written says the API server
// holds everything or limit has passed, then stops it: a ready
// configuration writes what a stop left in its queue at its next start.
func (c *collector) stopAndWrite(t *testing.T, limit time.Duration, written func() (bool, string)) {
	t.Helper()
	require.NoError(t, c.Stop(time.Minute))
	next := c.again()
	eventually(t, limit, written)
	require.NoError(t, next.Stop(time.Minute))
}

// binary is the collector under test; missing, it skips the test (fails under CI=true).
func binary(t testing.TB) string {
	t.Helper()
	bin, err := collectorproc.FindBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	p, err := childproc.FreePort()
	require.NoError(t, err)
	return p
}

// startCollector runs the collector with cfg, merged with an overlay that
// adds a health_check extension and a Prometheus telemetry endpoint on free
// loopback ports. cfg lists health_check in service.extensions (lists are not
// merged). dir keeps its configs and log across restarts.
func startCollector(t testing.TB, dir, cfg string) *collector {
	t.Helper()
	return startCollectorEnv(t, dir, cfg, nil)
}

// startCollectorEnv is startCollector with environment variables (NAME=value)
// for the ${env:NAME} references of a ready configuration, and more overlays
// merged over cfg (a ready configuration run with a test's settings).
func startCollectorEnv(t testing.TB, dir, cfg string, env []string, overlays ...string) *collector {
	t.Helper()
	return startCollectorAt(t, "detailed", dir, cfg, env, overlays...)
}

// startCollectorAt is startCollectorEnv with the collector's own metrics at
// level (normal, a collector's default, or detailed: every metric).
func startCollectorAt(t testing.TB, level, dir, cfg string, env []string, overlays ...string) *collector {
	t.Helper()
	var c *collector
	var proc *collectorproc.Collector
	var err error
	for attempt := 1; ; attempt++ {
		c = &collector{health: freePort(t), metrics: freePort(t)}
		proc, err = startWithPorts(t, c, level, dir, cfg, env, overlays)
		// These two ports are found free, then bound by the child: a test
		// of another package may take one in between. Only a clash on
		// them is retried, with new ones; a clash on a port the test chose
		// for the configuration is the test's failure.
		if err == nil || attempt == 3 || !portTaken(err, c.health, c.metrics) {
			break
		}
		t.Logf("collector start %d: its health or metrics port was taken meanwhile; again with others", attempt)
	}
	require.NoError(t, err, "config:\n%s", cfg)
	c.Collector = proc
	c.again = func() *collector { return startCollectorAt(t, level, dir, cfg, env, overlays...) }
	t.Cleanup(func() {
		if exited, _ := proc.Exited(); !exited {
			_ = proc.Stop(30 * time.Second)
		}
		if t.Failed() {
			t.Logf("collector log (%s):\n%s", proc.LogPath(), proc.LogTail(8192))
		}
	})
	return c
}

// startWithPorts starts the collector with c's health and metrics ports.
func startWithPorts(t testing.TB, c *collector, level, dir, cfg string, env, overlays []string) (*collectorproc.Collector, error) {
	// The ready configurations keep their state under STORAGE_DIR: in the
	// collector's directory unless the test says where.
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "STORAGE_DIR=") }) {
		env = append(slices.Clone(env), "STORAGE_DIR="+filepath.Join(dir, "storage"))
	}
	overlay := fmt.Sprintf(`
extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
service:
  telemetry:
    metrics:
      level: %s
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
`, c.health, level, c.metrics)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return collectorproc.Start(ctx, collectorproc.Options{
		Binary: binary(t), Config: cfg, Overlays: append(append([]string(nil), overlays...), overlay), Dir: dir, Env: env,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", c.health),
	})
}

// portTaken: the collector could not bind one of the ports.
func portTaken(err error, ports ...int) bool {
	msg := err.Error()
	if !strings.Contains(msg, "address already in use") {
		return false
	}
	return slices.ContainsFunc(ports, func(p int) bool { return strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d:", p)) })
}

// scrape reads the collector's own metrics.
func (c *collector) scrape(t testing.TB) collectorproc.Metrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Metrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metrics))
	require.NoError(t, err)
	return m
}

// awaitWatchOpen waits until the collector's receiver has its watch open
// (the watches_open gauge is 1). With initial: none the receiver begins at
// the resourceVersion of its first list, which comes a moment after the
// collector reports healthy, longer on a loaded machine: an Event written
// before it counts as existing and is never emitted. One written once the
// watch is open always is.
func (c *collector) awaitWatchOpen(t testing.TB) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := c.scrape(t).Sum("otelcol_receiver_k8sevents_watches_open")
		return n == 1, fmt.Sprintf("receiver watches open: %v", n)
	})
}

// eventually polls cond every 200 ms until it holds or timeout passes; the
// last message cond returned explains a failure.
func eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
