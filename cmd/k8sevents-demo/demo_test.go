package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

func TestTuningScalesDefaultsBySpeed(t *testing.T) {
	assert.Equal(t, tuning{FinishAfter: 6 * time.Minute, Heartbeat: 30 * time.Minute, SpamQPS: 1.0 / 300}, tuningFor(1))
	assert.Equal(t, tuning{FinishAfter: 9 * time.Second, Heartbeat: 45 * time.Second, SpamQPS: 40.0 / 300}, tuningFor(40))
	// Floors: a loaded machine's jitter must not end series.
	assert.Equal(t, tuning{FinishAfter: minFinishAfter, Heartbeat: minHeartbeat, SpamQPS: 1000.0 / 300}, tuningFor(1000))
	// Slower than real time keeps the defaults.
	assert.Equal(t, tuningFor(1), tuningFor(0.5))
}

// merged is the configuration the collector runs: the base with the
// overlay merged over it, as the collector merges its --config files.
func merged(t *testing.T, c collectorConfig) map[string]any {
	t.Helper()
	base, overlay, err := c.files("../..")
	require.NoError(t, err)
	conf := confmap.New()
	for _, doc := range []string{base, overlay} {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m), doc)
		require.NoError(t, conf.Merge(confmap.NewFromStringMap(m)))
	}
	return conf.ToStringMap()
}

func TestCollectorConfigIsTheMirrorWithAnOverlay(t *testing.T) {
	c := collectorConfig{
		SourceKubeconfig: `/tmp/a "b"/kubeconfig`, Namespaces: []string{"storm-crashloop", "storm-cronjob"},
		InitialAll: true, OutputKubeconfig: "/tmp/out", HealthPort: 1, MetricsPort: 2,
		Tuning: tuningFor(40), ExporterQPS: 500, ExporterBurst: 1000, ReportingInstance: "demo",
	}
	got := merged(t, c)
	recv := got["receivers"].(map[string]any)["k8sevents"].(map[string]any)
	assert.Equal(t, `/tmp/a "b"/kubeconfig`, recv["kubeconfig"])
	assert.Equal(t, "kubeConfig", recv["auth_type"])
	assert.Equal(t, "reportingComponent!=k8sevents.io/demo", recv["field_selector"])
	assert.Equal(t, "all", recv["initial"])
	assert.Equal(t, []any{"storm-crashloop", "storm-cronjob"}, recv["namespaces"])
	assert.NotContains(t, recv, "context")
	// The mirror's leader election and storage are taken out.
	assert.Nil(t, recv["storage"])
	assert.Nil(t, recv["k8s_leader_elector"])
	proc := got["processors"].(map[string]any)["eventseries"].(map[string]any)
	assert.Equal(t, "9s", proc["series"].(map[string]any)["finish_after"])
	assert.Nil(t, proc["storage"])
	exp := got["exporters"].(map[string]any)["k8sevents"].(map[string]any)
	assert.Equal(t, controller, exp["reporting_controller"])
	assert.Equal(t, "/tmp/out", exp["kubeconfig"])
	assert.Nil(t, exp["sending_queue"].(map[string]any)["storage"])
	svc := got["service"].(map[string]any)
	assert.Equal(t, []any{"health_check"}, svc["extensions"])
	assert.Equal(t, []any{"eventseries"}, svc["pipelines"].(map[string]any)["logs"].(map[string]any)["processors"])

	c.InitialAll, c.Namespaces, c.SourceKubeconfig, c.SourceContext = false, nil, "", "prod"
	got = merged(t, c)
	recv = got["receivers"].(map[string]any)["k8sevents"].(map[string]any)
	assert.Equal(t, "none", recv["initial"])
	assert.Equal(t, "prod", recv["context"])
	assert.NotContains(t, recv, "namespaces")
	assert.NotContains(t, recv, "kubeconfig")
}

func TestLoadScenariosCutsAndMoves(t *testing.T) {
	full, err := storm.Scenario("crashloop")
	require.NoError(t, err)
	scs, err := loadScenarios([]string{"crashloop", "crashloop", "replicaset"}, 10*time.Minute, 0, perScenario)
	require.NoError(t, err)
	require.Len(t, scs, 2, "a repeated name is replayed once")
	cl := scs[0].Occs
	require.NotEmpty(t, cl)
	assert.Less(t, len(cl), len(full))
	for _, o := range cl {
		assert.Less(t, o.Time.Sub(full[0].Time), 10*time.Minute)
		assert.Equal(t, "storm-crashloop", o.Regarding.Namespace)
		if o.Reason == "BackOff" {
			assert.Contains(t, o.Note, "_storm-crashloop(")
		}
	}
	assert.Equal(t, "storm-replicaset", scs[1].Occs[0].Regarding.Namespace)
	assert.Equal(t, []string{"storm-crashloop", "storm-replicaset"}, stormNamespaces(scs))

	scs, err = loadScenarios([]string{"mixed"}, 0, 50, perScenario)
	require.NoError(t, err)
	assert.Len(t, scs[0].Occs, 50)
	assert.True(t, strings.HasPrefix(scs[0].Occs[0].Regarding.Namespace, "mixed-"), "mixed keeps its own namespaces")

	scs, err = loadScenarios([]string{"crashloop", "imagepull"}, time.Minute, 0, into(demoNamespace))
	require.NoError(t, err)
	assert.Equal(t, []string{demoNamespace}, stormNamespaces(scs))

	_, err = loadScenarios([]string{"nope"}, 0, 0, perScenario)
	assert.ErrorContains(t, err, "nope")
	_, err = loadScenarios(nil, 0, 0, perScenario)
	assert.Error(t, err)
}

func TestScenarioIndexSharedObjects(t *testing.T) {
	pod := storm.Ref{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u"}
	other := storm.Ref{Kind: "Pod", Namespace: "ns", Name: "q", UID: "v"}
	idx := scenarioIndex([]scenario{
		{Name: "a", Occs: []storm.Occurrence{{Regarding: pod}, {Regarding: pod}}},
		{Name: "b", Occs: []storm.Occurrence{{Regarding: pod}, {Regarding: other}}},
		{Name: "c", Occs: []storm.Occurrence{{Regarding: pod}}},
	})
	assert.Equal(t, "a+b+c", idx[keyOf(pod)])
	assert.Equal(t, "b", idx[keyOf(other)])
}

func outputOf(ns, name, kind, obj, uid string, count int32, series int32, last time.Time) corev1.Event {
	ev := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: obj, UID: types.UID("uid-" + uid)},
		Type:           "Warning", Reason: "BackOff", Message: "Back-off restarting failed container",
		Count: count, LastTimestamp: metav1.NewTime(last),
	}
	if series > 0 {
		ev.Series = &corev1.EventSeries{Count: series, LastObservedTime: metav1.NewMicroTime(last)}
	}
	return ev
}

func TestBuildRowsAndExactCheck(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	idx := map[objectKey]string{
		{"Pod", "storm-a", "p1", "uid-1"}: "a",
		{"Pod", "storm-a", "p2", "uid-2"}: "a",
		{"Pod", "storm-b", "p3", "uid-3"}: "b",
	}
	in := []corev1.Event{
		outputOf("storm-a", "e1", "Pod", "p1", "1", 0, 70, now),        // a series of 70
		outputOf("storm-a", "e2", "Pod", "p2", "2", 0, 0, now),         // a singleton
		outputOf("storm-b", "e3", "Pod", "p3", "3", 5, 0, now),         // a legacy count
		outputOf("kube-system", "e4", "Pod", "x", "9", 0, 3, now),      // not the storm's
		outputOf("storm-b", "e5", "Pod", "p3", "wrong-uid", 0, 0, now), // another object of the same name
	}
	writes := map[string]int64{"storm-a/e1": 3, "storm-a/e2": 1, "storm-b/e3": 2, "kube-system/e4": 2, "storm-b/e5": 1}
	var outs []outputEvent
	for i := range in {
		outs = append(outs, toOutput(&in[i], idx, writes))
	}
	assert.Equal(t, "pod/p1", outs[0].Object)
	assert.Equal(t, int64(70), outs[0].Count)
	assert.Equal(t, int64(1), outs[1].Count)
	assert.Equal(t, int64(5), outs[2].Count)
	assert.Equal(t, "ns/kube-system", outs[3].Group)
	assert.Equal(t, "ns/storm-b", outs[4].Group)

	pair := func(pod string) recordermodel.Pair {
		return recordermodel.Pair{Object: "Pod/" + pod, Reason: "BackOff"}
	}
	assert.Equal(t, pair("p1"), outs[0].Pair)
	base := map[string]baseline{
		"a": {Truth: map[recordermodel.Pair]int64{pair("p1"): 70, pair("p2"): 1},
			Record: recorderCost{Writes: 50, CountErr: 20}, Events: recorderCost{Writes: 10}},
		"b": {Truth: map[recordermodel.Pair]int64{pair("p3"): 6},
			Record: recorderCost{Writes: 6, CountErr: 6, Unseen: 1}, Events: recorderCost{Writes: 2}},
	}
	rows := buildRows([]string{"a", "b", "c"}, map[string]sent{"a": {71, 71}, "b": {6, 6}, "c": {4, 4}}, base, outs)
	require.Len(t, rows, 5)
	assert.Equal(t, row{Group: "a", Storm: true, Occurrences: 71, RawWrites: 71, Writes: 4, Objects: 2, Counted: 71,
		Truth: 71, Record: base["a"].Record, Events: base["a"].Events}, rows[0])
	// e5 is another object's: p3's BackOff is 1 short.
	assert.Equal(t, row{Group: "b", Storm: true, Occurrences: 6, RawWrites: 6, Writes: 2, Objects: 1, Counted: 5,
		Truth: 6, Record: base["b"].Record, Events: base["b"].Events, CountErr: 1}, rows[1])
	assert.Equal(t, row{Group: "c", Storm: true, Occurrences: 4, RawWrites: 4}, rows[2], "a scenario with no output still has its row")
	assert.Equal(t, row{Group: "ns/kube-system", Occurrences: 3, RawWrites: 3, Writes: 2, Objects: 1, Counted: 3}, rows[3])
	assert.Equal(t, "ns/storm-b", rows[4].Group)
	assert.True(t, rows[0].exact())
	assert.False(t, rows[1].exact())
	assert.False(t, (&result{Rows: rows}).exact())
	assert.True(t, (&result{Rows: rows[:1]}).exact())
	assert.Equal(t, int64(9), totalWrites(rows))
	// The sums agree, the pairs do not: not exact.
	moved := row{Storm: true, Occurrences: 6, Counted: 6, CountErr: 2}
	assert.False(t, moved.exact())
	assert.Contains(t, countCheck(moved), "2 are on the wrong (object, reason)")

	var b bytes.Buffer
	formatTable(&b, rows)
	s := b.String()
	t.Log("\n" + s)
	assert.Regexp(t, `(?m)^\s+RAW\s+TOOLS/RECORD\s+TOOLS/EVENTS\s+PIPELINE\s*$`, s)
	assert.Regexp(t, `(?m)^\s+SCENARIO/NAMESPACE\s+OCCURRENCES\s+WRITES\s+WRITES\s+COUNT ERROR\s+WRITES\s+COUNT ERROR\s+WRITES\s+COUNT ERROR\s+FEWER\s+EVENT OBJECTS\s*$`, s)
	assert.Regexp(t, `(?m)^\s+a\s+71\s+71\s+50\s+20\s+10\s+0\s+4\s+0\s+17\.8x\s+2\s*$`, s) // 71 / 4
	assert.Regexp(t, `(?m)^\s+b\s+6\s+6\s+6\s+6 \(1 unseen\)\s+2\s+0\s+2\s+1\s+3\.0x\s+1\s*$`, s)
	assert.Regexp(t, `(?m)^\s+c\s+4\s+4\s+0\s+0\s+0\s+0\s+0\s+0\s+all saved\s+0\s*$`, s)
	assert.Regexp(t, `(?m)^\s+ns/kube-system\s+3\s+3\s+-\s+-\s+-\s+-\s+2\s+-\s+1\.5x\s+1\s*$`, s, "no baseline for what the demo did not send")
	// 71+6+4 sent, 3+1 found; the errors add up.
	assert.Regexp(t, `(?m)^\s+total\s+85\s+85\s+56\s+26 \(1 unseen\)\s+12\s+0\s+9\s+1\s+9\.4x\s+5\s*$`, s)
	assert.Contains(t, s, "ok (71 = 71)")
	assert.Contains(t, s, "MISMATCH (counts sum to 5, 6 sent)")
	assert.Contains(t, s, "n/a")
	b.Reset()
	formatTable(&b, rows[:3])
	assert.Regexp(t, `(?m)^\s+SCENARIO\s+OCCURRENCES`, b.String())
}

func TestListingTopByCount(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	evs := []outputEvent{
		{Namespace: "b", Name: "x", Count: 5, LastSeen: now.Add(-time.Minute), Type: "Normal", Reason: "Pulled", Object: "pod/p", Message: strings.Repeat("é", 80)},
		{Namespace: "a", Name: "y", Count: 9, LastSeen: now.Add(-90 * time.Second), Type: "Warning", Reason: "BackOff", Object: "pod/q", Message: "short\nmessage"},
		{Namespace: "a", Name: "z", Count: 5, LastSeen: now.Add(-2 * time.Hour), Type: "Normal", Reason: "Created", Object: "pod/r"},
		{Namespace: "a", Name: "w", Count: 1, Object: "pod/s"},
	}
	top := topByCount(evs, 3)
	require.Len(t, top, 3)
	assert.Equal(t, []string{"y", "x", "z"}, []string{top[0].Name, top[1].Name, top[2].Name})

	var b bytes.Buffer
	formatListing(&b, evs, now, 20)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5)
	assert.Regexp(t, `^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+COUNT\s+MESSAGE$`, lines[0])
	assert.Regexp(t, `^a\s+90s\s+Warning\s+BackOff\s+pod/q\s+9\s+short message$`, lines[1])
	assert.Contains(t, lines[2], strings.Repeat("é", maxMessage-3)+"...")
	assert.Regexp(t, `^a\s+120m\s+Normal\s+Created`, lines[3])
	assert.Contains(t, lines[4], "<unknown>")
}

func TestLiveView(t *testing.T) {
	// collectorproc.TestPipelineReadsTheBinarysNames reads the metrics.
	v := pipelineView{Received: 100, Occurrences: 100, RecordsOut: 10, Compressed: 90, Suppressed: 2, Finished: 1, Open: 9,
		Writes: 10, Done: 16, PermanentFailures: 1, RetryableFailures: 3}
	line := liveLine(12*time.Second, &stormsend.Stats{Occurrences: 1234, Writes: 1234}, v)
	assert.Equal(t, "  12s storm 1,234 occ (1,234 writes) | seen 100 occ | out 10 records (90 folded, 2 suppressed, 1 finished, 9 open) | writes 10 (4 failed)", line)
	assert.NotContains(t, liveLine(time.Second, nil, pipelineView{}), "storm")
	assert.Equal(t, "1,234,567", num(1234567))
	assert.Equal(t, "-1,000", num(-1000))
	assert.Equal(t, "999", num(999.9))
}

func TestParseFlags(t *testing.T) {
	t.Setenv("KUBETEST_BIN_DIR", "/opt/bin")
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, strings.Split(defaultScenarios, ","), o.scenarios)
	assert.Equal(t, "/opt/bin/otelcol-k8sevents", o.collector)
	assert.Equal(t, "local", o.cluster)
	assert.Equal(t, 5*time.Minute, o.maxDuration)

	o, err = parseFlags([]string{"-cluster", "existing", "-scenarios", ""}, io.Discard)
	require.NoError(t, err, "read-only on an existing cluster needs no scenario")
	assert.Empty(t, o.scenarios)

	for _, bad := range [][]string{
		{"-cluster", "kind"},
		{"-write"},
		{"-kubeconfig", "x"},
		{"-speed", "0"},
		{"-max-duration", "0s"},
		{"-scenarios", " , "},
		{"-cluster", "existing", "-write", "-scenarios", ""},
		{"extra"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%q", bad)
	}
}
