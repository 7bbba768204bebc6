package k8seventexporter

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

var t0 = time.Now().UTC().Truncate(time.Second)

type rig struct {
	srv        *kubetest.Server
	kubeconfig string
}

func newRig(t *testing.T, opts ...kubetest.Option) *rig {
	srv := kubetest.Start(t, opts...)
	r := &rig{srv: srv, kubeconfig: srv.Kubeconfig(t)}
	for _, ns := range []string{"shop", "other"} {
		_, err := srv.Clientset().CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return r
}

// start runs an exporter built by the factory until the test ends.
func (r *rig) start(t *testing.T, mutate func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	return r.startLogged(t, zap.NewNop(), mutate)
}

// startLogged is start with the exporter's logger.
func (r *rig) startLogged(t *testing.T, logger *zap.Logger, mutate func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	return r.startOn(t, componenttest.NewNopHost(), logger, mutate)
}

func (r *rig) startOn(t *testing.T, host component.Host, logger *zap.Logger, mutate func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: r.kubeconfig}
	cfg.ReportingController = "k8sevents.io/exporter"
	cfg.BackOff.InitialInterval, cfg.BackOff.MaxInterval = 100*time.Millisecond, time.Second
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = logger
	set.ID = component.NewID(metadata.Type)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), host))
	t.Cleanup(func() {
		require.NoError(t, exp.Shutdown(context.Background()))
		_ = tel.Shutdown(context.Background())
	})
	return exp, tel
}

// record is what the eventseries processor emits for one object.
func record(name string, state string, count int64, at time.Time) k8sevent.Event {
	ev := k8sevent.Event{
		Name: name, Type: k8sevent.TypeWarning, Reason: "BackOff", Note: "Back-off restarting failed container",
		Regarding:       k8sevent.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "uid-web-1", APIVersion: "v1"},
		SourceComponent: "kubelet", SourceHost: "node-1", ReportingController: "kubelet", ReportingInstance: "node-1",
		Time: at, EventTime: t0, SeriesState: state,
	}
	if state != k8sevent.StateSingleton {
		ev.SeriesCount, ev.SeriesLastObservedTime = count, at
	}
	return ev
}

func send(t *testing.T, exp exporter.Logs, evs ...k8sevent.Event) {
	t.Helper()
	ld := plog.NewLogs()
	for i := range evs {
		k8sevent.Encode(&evs[i], ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	}
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
}

func counter(t *testing.T, tel *componenttest.Telemetry, metric, attr, value string) int64 {
	m, err := tel.GetMetric(metric)
	if err != nil {
		return 0
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key(attr)); ok && v.AsString() == value {
			return dp.Value
		}
	}
	return 0
}

// createdOrAdopted counts the objects an exporter created, including a
// create whose answer was lost (a timeout under load): retried, it is
// answered AlreadyExists and adopted (patched when it holds less).
func createdOrAdopted(t *testing.T, tel *componenttest.Telemetry) int64 {
	return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created") +
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409") +
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "adopted")
}

// apiserverRequests sums apiserver_request_total for events requests of
// one verb whose HTTP code starts with codePrefix.
func (r *rig) apiserverRequests(t *testing.T, verb, codePrefix string) int {
	raw, err := r.srv.Clientset().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	total := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="events"`) ||
			!strings.Contains(line, `code="`+codePrefix) || !strings.Contains(line, `verb="`+verb+`"`) {
			continue
		}
		var v float64
		_, _ = fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
		total += int(v)
	}
	return total
}

// apiserverCount sums apiserver_request_total for events writes whose
// HTTP code starts with codePrefix (e.g. "4").
func (r *rig) apiserverCount(t *testing.T, codePrefix string) int {
	raw, err := r.srv.Clientset().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="events"`) ||
			!strings.Contains(line, `code="`+codePrefix) || strings.Contains(line, `verb="LIST"`) || strings.Contains(line, `verb="GET"`) {
			continue
		}
		var n float64
		_, _ = fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &n)
		total += int(n)
	}
	return total
}

func TestWritesReadBackInBothAPIs(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cs := r.srv.Clientset()
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			exp, tel := r.start(t, func(c *Config) { c.API = api })
			name := "web-1.series-" + strings.ReplaceAll(api, "/", "-")
			name = strings.ReplaceAll(name, ".k8s.io", "")
			send(t, exp, record(name, k8sevent.StateSingleton, 1, t0))
			send(t, exp, record(name, k8sevent.StateStarted, 2, t0.Add(10*time.Second)))
			send(t, exp, record(name, k8sevent.StateOngoing, 5, t0.Add(time.Minute)))
			require.Eventually(t, func() bool { return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 2 },
				30*time.Second, 20*time.Millisecond)
			assert.Equal(t, int64(1), createdOrAdopted(t, tel))

			if api == k8sevent.APIEventsV1 {
				got, err := cs.EventsV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
				require.NoError(t, err)
				require.NotNil(t, got.Series)
				assert.Equal(t, int32(5), got.Series.Count)
				assert.True(t, got.Series.LastObservedTime.Time.Equal(t0.Add(time.Minute)))
				assert.True(t, got.EventTime.Time.Equal(t0))
				assert.Equal(t, "Back-off restarting failed container", got.Note)
				assert.Equal(t, "web-1", got.Regarding.Name)
				assert.Equal(t, "k8sevents.io/exporter", got.ReportingController)
				assert.Equal(t, "BackOff", got.Action, "events.k8s.io requires an action: the reason fills it")
			}
			// As kubectl get events shows it: count, first and last seen, message.
			got, err := cs.CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "Back-off restarting failed container", got.Message)
			if api == k8sevent.APICoreV1 {
				assert.Equal(t, int32(5), got.Count)
				assert.True(t, got.FirstTimestamp.Time.Equal(t0), "first seen %v", got.FirstTimestamp)
				assert.True(t, got.LastTimestamp.Time.Equal(t0.Add(time.Minute)), "last seen %v", got.LastTimestamp)
			} else {
				require.NotNil(t, got.Series)
				assert.Equal(t, int32(5), got.Series.Count)
			}
		})
	}
}

func TestIdempotentWrites(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cs := r.srv.Clientset()
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	// An exporter of the same reporting controller that does not know the
	// object: started before it exists, its listing at start misses it (as
	// a create retried after a timeout does). Only the same controller may
	// take an object over (an app must not rewrite another controller's
	// Events by naming them: TestHostileNamingAnotherEvent...).
	exp2, tel2 := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	const name = "web-1.idempotent"
	send(t, exp, record(name, k8sevent.StateSingleton, 1, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 },
		30*time.Second, 20*time.Millisecond)

	// The object expired (TTL): the next patch answers 404 and the exporter creates it.
	require.NoError(t, cs.EventsV1().Events("shop").Delete(context.Background(), name, metav1.DeleteOptions{}))
	send(t, exp, record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)))
	require.Eventually(t, func() bool {
		return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created_after_404") == 1
	},
		30*time.Second, 20*time.Millisecond)
	got, err := cs.EventsV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Series.Count)

	// The exporter that does not know the object: the create answers
	// AlreadyExists, it reads the object, finds it its own, and patches.
	send(t, exp2, record(name, k8sevent.StateOngoing, 7, t0.Add(time.Minute)))
	require.Eventually(t, func() bool {
		return counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409") == 1
	},
		30*time.Second, 20*time.Millisecond)
	list, err := cs.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "no twin object")
	assert.Equal(t, int32(7), list.Items[0].Series.Count)
}

// TestSameCountMakesNoRequest: a record carrying the count already written
// (a shutdown flush, a finish after a heartbeat, a replayed queue) sends
// nothing. The API server would store nothing for it either: an unchanged
// patch keeps the resourceVersion, so it does not refresh the TTL.
func TestSameCountMakesNoRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cs := r.srv.Clientset()
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	// The API server writes Events of its own as it starts (its IP
	// allocator's repair, about default/kubernetes): count from here.
	before := r.apiserverCount(t, "2")
	const name = "web-1.samecount"
	send(t, exp, record(name, k8sevent.StateStarted, 2, t0))
	send(t, exp, record(name, k8sevent.StateOngoing, 2, t0))
	send(t, exp, record(name, k8sevent.StateFinished, 2, t0))
	send(t, exp, record(name, k8sevent.StateOngoing, 3, t0.Add(time.Second)))
	require.Eventually(t, func() bool {
		return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 1
	}, 30*time.Second, 20*time.Millisecond)
	assert.EqualValues(t, 2, counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "unchanged"))
	assert.Equal(t, 2, r.apiserverCount(t, "2")-before, "one create, one patch")
	got, err := cs.EventsV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), got.Series.Count)

	patch := []byte(fmt.Sprintf(`{"series":{"count":3,"lastObservedTime":%q}}`, got.Series.LastObservedTime.Format(k8sevent.MicroTimeFormat)))
	again, err := cs.EventsV1().Events("shop").Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, got.ResourceVersion, again.ResourceVersion, "an unchanged patch is not stored")
}

func TestBadInputNeverReachesTheAPIServer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1; c.Namespaces = []string{"shop"} })
	before := r.apiserverCount(t, "4")

	noRegarding := record("bad.noregarding", k8sevent.StateSingleton, 1, t0)
	noRegarding.Regarding = k8sevent.ObjectRef{}
	hugeNote := record("web-1.hugenote", k8sevent.StateSingleton, 1, t0)
	hugeNote.Note = strings.Repeat("x", 1<<20)
	badName := record("Not A Valid Name!", k8sevent.StateSingleton, 1, t0)
	elsewhere := record("web-1.elsewhere", k8sevent.StateSingleton, 1, t0)
	elsewhere.Regarding.Namespace = "other"
	badNamespace := record("web-1.badns", k8sevent.StateSingleton, 1, t0)
	badNamespace.Regarding.Namespace = "Bad_Namespace"
	good := record("web-1.good", k8sevent.StateSingleton, 1, t0)
	send(t, exp, noRegarding, hugeNote, badName, elsewhere, badNamespace, good)

	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 3 },
		30*time.Second, 20*time.Millisecond, "the huge note truncated, the bad name replaced, the good one: written; the queue keeps flowing")
	assert.Equal(t, int64(2), counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "invalid"),
		"no regarding object, invalid namespace")
	assert.Equal(t, int64(1), counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "namespace"),
		"outside the allowlist")
	assert.Equal(t, before, r.apiserverCount(t, "4"), "no write answered 4xx")
	got, err := r.srv.Clientset().EventsV1().Events("shop").Get(context.Background(), "web-1.hugenote", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, got.Note, k8sevent.MaxNoteBytes)
	_, err = r.srv.Clientset().EventsV1().Events("other").Get(context.Background(), "web-1.elsewhere", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

// TestBacksOffOnRealThrottling runs against an API server whose
// EventRateLimit admission answers 429 past 1 write/s (burst 2) on core/v1
// creates and patches: the exporter backs off, and in the end every Event
// is written once with its exact count (a patch answered 429 is sent
// again, not skipped as already written).
func TestBacksOffOnRealThrottling(t *testing.T) {
	t.Parallel()
	r := newRig(t, kubetest.WithEventRateLimit(1, 2))
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APICoreV1 })
	const n = 4
	name := func(i int) string { return fmt.Sprintf("web-1.throttled-%d", i) }
	for i := range n {
		send(t, exp, record(name(i), k8sevent.StateSingleton, 1, t0))
	}
	for i := range n {
		send(t, exp, record(name(i), k8sevent.StateStarted, 2, t0.Add(time.Second)))
	}
	for i := range n {
		send(t, exp, record(name(i), k8sevent.StateOngoing, int64(4+i), t0.Add(time.Minute)))
	}
	require.Eventually(t, func() bool {
		l, err := r.srv.Clientset().CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) != n {
			return false
		}
		for _, ev := range l.Items {
			if ev.Name != name(int(ev.Count-4)) {
				return false
			}
		}
		return true
	}, 90*time.Second, 100*time.Millisecond, "every Event written once, with its final count, in the end")
	assert.Positive(t, r.apiserverRequests(t, "PATCH", "429"), "the server throttled a patch")
	assert.Positive(t, counter(t, tel, "otelcol_exporter_k8sevents_retryable_failures", "reason", "throttled"), "the exporter saw it")
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "unchanged"))
	// A create the server did but whose answer was lost (a timeout under
	// load) is retried, answered AlreadyExists, and adopted: still one object.
	assert.Equal(t, int64(n), createdOrAdopted(t, tel))
}

// TestRestartListsWhatItWroteBefore: a new exporter with the same reporting
// controller patches the objects the previous one created, without trying
// to create twins first.
func TestRestartListsWhatItWroteBefore(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	send(t, exp, record("web-1.before-restart", k8sevent.StateSingleton, 1, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 },
		30*time.Second, 20*time.Millisecond)

	exp2, tel2 := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	send(t, exp2, record("web-1.before-restart", k8sevent.StateStarted, 2, t0.Add(time.Second)))
	require.Eventually(t, func() bool { return counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 1 },
		30*time.Second, 20*time.Millisecond)
	assert.Zero(t, counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409"), "no create attempt")
	got, err := r.srv.Clientset().EventsV1().Events("shop").Get(context.Background(), "web-1.before-restart", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Series.Count)
}

// TestAutoChoosesEventsV1WhenServed: api auto asks discovery once.
func TestAutoChoosesEventsV1WhenServed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	exp, tel := r.start(t, nil) // api: auto
	send(t, exp, record("web-1.auto", k8sevent.StateSingleton, 1, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 },
		30*time.Second, 20*time.Millisecond)
	got, err := r.srv.Clientset().EventsV1().Events("shop").Get(context.Background(), "web-1.auto", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, got.EventTime.Time.Equal(t0), "written through events.k8s.io/v1 (eventTime set)")
	assert.Zero(t, got.DeprecatedCount, "no legacy count")
}

// TestConcurrentPushes: without a queue (or with more consumers) the pipeline
// calls the exporter from several goroutines at once.
func TestConcurrentPushes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	exp, tel := r.start(t, func(c *Config) {
		c.API = k8sevent.APIEventsV1
		c.Namespaces = []string{"shop"}
	})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				bad := record(fmt.Sprintf("web-1.elsewhere-%d-%d", g, i), k8sevent.StateSingleton, 1, t0)
				bad.Regarding.Namespace = "other"
				send(t, exp, record(fmt.Sprintf("web-1.concurrent-%d-%d", g, i), k8sevent.StateSingleton, 1, t0), bad)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(40), createdOrAdopted(t, tel))
	assert.Equal(t, int64(40), counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "namespace"))
}

// TestStateLastTimestampIsTheLatestOccurrence: through core/v1 the Event's
// lastTimestamp is the latest occurrence the record states (the processor's
// k8s.event.last_timestamp or series lastObservedTime), not the record's
// own time, which out-of-order input can make older.
func TestStateLastTimestampIsTheLatestOccurrence(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APICoreV1 })
	legacy := legacyRecord("web-1.last-legacy", 3, t0.Add(2*time.Minute))
	legacy.Time = t0.Add(5 * time.Second) // the record that raised the count arrived late
	series := record("web-1.last-series", k8sevent.StateOngoing, 4, t0.Add(3*time.Minute))
	series.Time = t0.Add(7 * time.Second)
	send(t, exp, legacy, series)
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 2 }, 30*time.Second, 10*time.Millisecond)
	for name, want := range map[string]time.Time{"web-1.last-legacy": t0.Add(2 * time.Minute), "web-1.last-series": t0.Add(3 * time.Minute)} {
		got, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, got.LastTimestamp.Time.Equal(want), "%s: lastTimestamp %v, want %v", name, got.LastTimestamp, want)
	}
}
