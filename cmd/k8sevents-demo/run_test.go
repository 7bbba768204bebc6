package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
)

// binaries finds etcd, kube-apiserver and the collector: the test is
// skipped without them, or fails under CI=true.
func binaries(t *testing.T) (binDir, collector string) {
	t.Helper()
	binDir, err := kubelocal.FindBinDir()
	if err == nil {
		_, _, err = kubelocal.FindBinaries(binDir)
	}
	if err == nil {
		collector, err = collectorproc.FindBinary()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return binDir, collector
}

// tiny is a short demo: two scenarios, a few hundred occurrences each.
func tiny(binDir, collector string) options {
	return options{
		binDir: binDir, collector: collector,
		scenarios:   []string{"crashloop", "imagepull"},
		window:      30 * time.Minute,
		maxEvents:   300,
		speed:       40,
		maxDuration: 4 * time.Minute,
		cluster:     "local",
		watchFor:    time.Minute,
		top:         5,
		live:        liveOff,
	}
}

// checkResult asserts what the demo promises: exact counts per scenario and
// fewer writes than the raw storm.
func checkResult(t *testing.T, res *result, out string) {
	t.Helper()
	require.NotNil(t, res, out)
	require.Len(t, res.Rows, 2, out)
	for _, r := range res.Rows {
		assert.True(t, r.Storm, r.Group)
		assert.Equal(t, int64(300), r.Occurrences, "%s: occurrences sent", r.Group)
		assert.Equal(t, r.Occurrences, r.RawWrites, "%s: the raw storm writes once per occurrence", r.Group)
		assert.True(t, r.exact(), "%s: output counts sum to %d, %d sent", r.Group, r.Counted, r.Occurrences)
		assert.Positive(t, r.Writes, r.Group)
		assert.Less(t, r.Writes, r.RawWrites, "%s: the pipeline must write less than the raw storm", r.Group)
		// The recorders' columns are for the same occurrences as were sent,
		// and the pipeline's count error is 0 pair by pair.
		assert.Equal(t, r.Occurrences, r.Truth, "%s: the baseline's occurrences", r.Group)
		assert.Zero(t, r.CountErr, "%s: the pipeline's count error", r.Group)
		assert.Zero(t, r.Unseen, "%s: pairs with no Event", r.Group)
		assert.Positive(t, r.Record.Writes, "%s: tools/record's writes", r.Group)
		assert.Positive(t, r.Events.Writes, "%s: tools/events' writes", r.Group)
	}
	assert.True(t, res.exact())
	assert.Regexp(t, `RAW\s+TOOLS/RECORD\s+TOOLS/EVENTS\s+PIPELINE`, out)
	assert.Contains(t, out, "ok (300 = 300)")
	assert.Regexp(t, `NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+COUNT\s+MESSAGE`, out)
}

func TestDemoLocal(t *testing.T) {
	binDir, collector := binaries(t)
	var out bytes.Buffer
	res, err := run(context.Background(), tiny(binDir, collector), &out)
	require.NoError(t, err, out.String())
	t.Log("\n" + out.String())
	checkResult(t, res, out.String())
	// Everything the pipeline wrote is in the storm's namespaces, one per
	// scenario.
	groups := map[string]string{}
	for _, e := range res.Events {
		groups[e.Namespace] = e.Group
	}
	assert.Equal(t, map[string]string{"storm-crashloop": "crashloop", "storm-imagepull": "imagepull"}, groups)
	// The temp directory is gone.
	dir := strings.TrimSuffix(strings.TrimPrefix(firstMatch(out.String(), "(data in ", ")"), "(data in "), ")")
	require.NotEmpty(t, dir, out.String())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "%s still exists: %v", dir, err)
}

// TestDemoExistingWrite plays the user's cluster with a second local API
// server: the receiver watches it, the storm goes into its namespace
// k8sevents-demo (-write), and the output into the demo's own server only.
func TestDemoExistingWrite(t *testing.T) {
	binDir, collector := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	user, err := kubelocal.Start(ctx, kubelocal.Options{BinDir: binDir})
	require.NoError(t, err)
	defer func() { assert.NoError(t, user.Stop()) }()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, user.WriteKubeconfig(kubeconfig))

	o := tiny(binDir, collector)
	o.cluster, o.write, o.kubeconfig = "existing", true, kubeconfig
	var out bytes.Buffer
	res, err := run(ctx, o, &out)
	require.NoError(t, err, out.String())
	t.Log("\n" + out.String())
	checkResult(t, res, out.String())

	cs, err := user.Clientset()
	require.NoError(t, err)
	mine, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: outputSelector})
	require.NoError(t, err)
	assert.Empty(t, mine.Items, "the pipeline wrote into the watched cluster")
	storm, err := cs.CoreV1().Events(demoNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, storm.Items, "the storm is not in %s", demoNamespace)
}

// TestRenderedConfigValidates checks the configuration (the mirror and the
// demo's overlay) against the components built into the collector.
func TestRenderedConfigValidates(t *testing.T) {
	_, collector := binaries(t)
	dir := t.TempDir()
	for i, c := range []collectorConfig{
		{SourceKubeconfig: "/nonexistent/kubeconfig", Namespaces: []string{"storm-crashloop"}, InitialAll: true},
		{SourceContext: "prod"},
	} {
		c.OutputKubeconfig, c.HealthPort, c.MetricsPort = "/nonexistent/out", 13133, 8888
		c.Tuning, c.ExporterQPS, c.ExporterBurst, c.ReportingInstance = tuningFor(40), 500, 1000, "demo"
		base, overlay, err := c.files("../..")
		require.NoError(t, err)
		basePath, overlayPath := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "overlay.yaml")
		require.NoError(t, os.WriteFile(basePath, []byte(base), 0o600))
		require.NoError(t, os.WriteFile(overlayPath, []byte(overlay), 0o600))
		cmd := exec.Command(collector, "validate", "--config", basePath, "--config", overlayPath)
		b, err := cmd.CombinedOutput()
		assert.NoError(t, err, "config %d:\n%s\n%s", i, overlay, b)
	}
}

// firstMatch returns the first substring of s from start to the next end.
func firstMatch(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return ""
	}
	return s[i : i+j+len(end)]
}
