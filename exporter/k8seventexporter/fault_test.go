package k8seventexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// faultKind is a kind of record as the eventseries processor emits it; the
// last record of each sequence is the one that meets the fault.
type faultKind struct {
	name string
	// flush: the last record is a shutdown flush, and the exporter stops
	// while its write fails. queued: through a persistent queue, which
	// keeps it; else the push answers an error and its caller sends it
	// again after the restart, as the processor does from its saved outbox.
	flush, queued bool
	recs          func(name string) []k8sevent.Event
}

// legacyRecord is what the processor emits in mode: legacy (a cumulative
// count, first and last seen, no series).
func legacyRecord(name string, count int64, at time.Time) k8sevent.Event {
	ev := record(name, k8sevent.StateSingleton, 1, at)
	ev.SeriesState, ev.EventTime = "", time.Time{}
	ev.Count, ev.FirstTimestamp, ev.LastTimestamp = count, t0, at
	return ev
}

var faultKinds = []faultKind{
	{name: "singleton", recs: func(n string) []k8sevent.Event {
		return []k8sevent.Event{record(n, k8sevent.StateSingleton, 1, t0)}
	}},
	{name: "started", recs: func(n string) []k8sevent.Event {
		return []k8sevent.Event{record(n, k8sevent.StateSingleton, 1, t0), record(n, k8sevent.StateStarted, 2, t0.Add(time.Second))}
	}},
	{name: "ongoing", recs: func(n string) []k8sevent.Event {
		return []k8sevent.Event{record(n, k8sevent.StateSingleton, 1, t0), record(n, k8sevent.StateStarted, 2, t0.Add(time.Second)),
			record(n, k8sevent.StateOngoing, 5, t0.Add(time.Minute))}
	}},
	{name: "finished", recs: func(n string) []k8sevent.Event {
		return []k8sevent.Event{record(n, k8sevent.StateSingleton, 1, t0), record(n, k8sevent.StateStarted, 2, t0.Add(time.Second)),
			record(n, k8sevent.StateOngoing, 5, t0.Add(time.Minute)), record(n, k8sevent.StateFinished, 7, t0.Add(2*time.Minute))}
	}},
	{name: "legacy", recs: func(n string) []k8sevent.Event {
		return []k8sevent.Event{legacyRecord(n, 1, t0), legacyRecord(n, 3, t0.Add(time.Second)), legacyRecord(n, 6, t0.Add(time.Minute))}
	}},
	{name: "flush", flush: true, queued: true, recs: flushRecords},
	{name: "flush-unqueued", flush: true, recs: flushRecords},
}

func flushRecords(n string) []k8sevent.Event {
	return []k8sevent.Event{record(n, k8sevent.StateSingleton, 1, t0), record(n, k8sevent.StateStarted, 2, t0.Add(time.Second)),
		record(n, k8sevent.StateOngoing, 4, t0.Add(time.Minute))}
}

// fault is injected on every write of the last record: once, or for a
// while (until the exporter tried it three times).
type fault struct {
	name      string
	rule      faultproxy.Rule
	forAWhile bool
	readyz    *faultproxy.Rule // also on the API server's /readyz until the fault ends, when set
}

var faults = []fault{
	{name: "500-once", rule: faultproxy.Rule{Action: faultproxy.Fail, Code: 500, Times: 1}},
	{name: "503-for-a-while", rule: faultproxy.Rule{Action: faultproxy.Fail, Code: 503}, forAWhile: true},
	{name: "429-retry-after-once", rule: faultproxy.Rule{Action: faultproxy.Fail, Code: 429, RetryAfter: time.Second, Times: 1}},
	{name: "429-for-a-while", rule: faultproxy.Rule{Action: faultproxy.Fail, Code: 429}, forAWhile: true},
	{name: "hold-once", rule: faultproxy.Rule{Action: faultproxy.Hold, Times: 1}},
	{name: "reset-once", rule: faultproxy.Rule{Action: faultproxy.Reset, Times: 1}},
	{name: "answer-lost-once", rule: faultproxy.Rule{Action: faultproxy.ApplyDropAnswer, Times: 1}},
	{name: "answer-lost-for-a-while", rule: faultproxy.Rule{Action: faultproxy.ApplyDropAnswer}, forAWhile: true},
}

// faultRig is a proxy in front of the rig's API server, and an exporter
// config that talks through it.
type faultRig struct {
	*rig
	proxy *faultproxy.Proxy
}

func (r *rig) withProxy(t *testing.T) *faultRig {
	t.Helper()
	p, err := faultproxy.NewForREST(r.srv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, p.WriteKubeconfig(path))
	return &faultRig{rig: &rig{srv: r.srv, kubeconfig: path}, proxy: p}
}

// faultExporter starts an exporter through the proxy with a 1 s attempt
// timeout (a held request fails fast) and, on a host with a file_storage,
// a persistent queue.
func (fr *faultRig) faultExporter(t *testing.T, api string, h component.Host, mutate ...func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	return fr.outageExporter(t, h, func(c *Config) {
		for _, m := range mutate {
			m(c)
		}
		c.API = api
		c.TimeoutConfig.Timeout = time.Second
		c.BackOff.InitialInterval, c.BackOff.MaxInterval = 50*time.Millisecond, 500*time.Millisecond
		if _, persistent := h.(outageHost); persistent {
			persistentQueue(c)
		}
	})
}

// occurrences reads the object's count through both APIs, as kubectl get
// events (core/v1) and kubectl events (events.k8s.io/v1) show it.
func (r *rig) occurrences(t *testing.T, name string) (core, events int64, err error) {
	ctx := context.Background()
	c, err := r.srv.Clientset().CoreV1().Events("shop").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	e, err := r.srv.Clientset().EventsV1().Events("shop").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	ce, ee := k8sevent.FromCoreV1(c), k8sevent.FromEventsV1(e)
	return ce.Occurrences(), ee.Occurrences(), nil
}

// objectsAbout counts the Event objects regarding the pod.
func (r *rig) objectsAbout(t *testing.T, pod string) int {
	l, err := r.srv.Clientset().CoreV1().Events("shop").List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	require.NoError(t, err)
	return len(l.Items)
}

// TestFaultOnTheLastRecord: for every record kind and both APIs, the writes
// of an object's last record fail (5xx, 429, a held request, a reset, an
// answer lost after the server applied the write), once or for a while.
// Without a queue its push is not answered while the write fails for a
// while. The object ends with the exact count through both APIs, and it is
// the only object about its pod. The records are of type Error and state their
// cluster: the object is a Warning annotated with
// its cluster, whichever attempt wrote it.
func TestFaultOnTheLastRecord(t *testing.T) { runFaults(t, faults) }

// runFaults runs each fault on the last record of every kind, through both
// APIs, against one API server.
func runFaults(t *testing.T, fs []fault) {
	r := newRig(t)
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		short := map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		for _, kind := range faultKinds {
			for _, f := range fs {
				t.Run(short+"/"+kind.name+"/"+f.name, func(t *testing.T) {
					runFault(t, r, api, kind, f, fmt.Sprintf("%s-%s-%s", short, kind.name, f.name))
				})
			}
		}
	}
}

func runFault(t *testing.T, r *rig, api string, kind faultKind, f fault, id string) {
	fr := r.withProxy(t)
	pod, name := "pod-"+id, "pod-"+id+".fault"
	recs := kind.recs(name)
	for i := range recs {
		recs[i].Regarding.Name, recs[i].Regarding.UID = pod, "uid-"+id
		recs[i].Type, recs[i].Cluster = k8sevent.TypeError, k8sevent.Cluster{Name: "east", UID: "uid-east"}
	}
	last := recs[len(recs)-1]
	want := max(last.Count, last.SeriesCount, 1)

	var host component.Host = componenttest.NewNopHost()
	var ext extension.Extension
	dir := t.TempDir()
	if kind.queued {
		ext = outageFileStorage(t, dir)
		host = outageHost{outageStorageID: ext}
	}
	exp, tel := fr.faultExporter(t, api, host)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			require.NoError(t, exp.Shutdown(context.Background()))
		}
		if ext != nil {
			_ = ext.Shutdown(context.Background())
		}
	})
	if len(recs) > 1 {
		send(t, exp, recs[:len(recs)-1]...)
		before := recs[len(recs)-2]
		require.Eventually(t, func() bool {
			c, e, err := r.occurrences(t, name)
			return err == nil && c == max(before.Count, before.SeriesCount, 1) && e == c
		}, 30*time.Second, 10*time.Millisecond, "the records before the last are written")
	}

	rule := f.rule
	rule.Verb, rule.Path = "PATCH", apiPath(api)+"/namespaces/shop/events/"+name
	if len(recs) == 1 {
		rule.Verb, rule.Path = "POST", apiPath(api)+"/namespaces/shop/events"
	}
	h := fr.proxy.Add(rule)
	end := h.Remove
	if f.readyz != nil {
		rr := *f.readyz
		rr.Path = "/readyz"
		hr := fr.proxy.Add(rr)
		end = func() { h.Remove(); hr.Remove() }
	}
	pushed := make(chan error, 1)
	go func() { pushed <- exp.ConsumeLogs(context.Background(), encodeLogs(last)) }()
	hits := 1
	if f.forAWhile {
		hits = 3
	}
	require.Eventually(t, func() bool { return h.Acted() >= hits }, 30*time.Second, 10*time.Millisecond, "the fault was injected")
	switch {
	case kind.queued:
		require.NoError(t, <-pushed, "answered once in the persistent queue")
	case f.forAWhile:
		select {
		case err := <-pushed:
			t.Fatalf("the push was answered (%v) while its record's write still fails", err)
		default:
		}
	}
	if kind.flush {
		// The collector stops while the flush is failing: the persistent
		// queue keeps it, or the push answers an error and its caller (the
		// processor, from its saved outbox) sends it to the next start.
		require.NoError(t, exp.Shutdown(context.Background()))
		if ext != nil {
			require.NoError(t, ext.Shutdown(context.Background()))
		}
		end()
		if kind.queued {
			ext = outageFileStorage(t, dir)
			host = outageHost{outageStorageID: ext}
		}
		exp, tel = fr.faultExporter(t, api, host)
		if !kind.queued {
			err := <-pushed
			if f.forAWhile {
				require.Error(t, err, "not written: the push may not be answered as done")
			}
			if err != nil {
				require.False(t, consumererror.IsPermanent(err), "handed back to be sent again: %v", err)
				send(t, exp, last)
			}
		}
	} else {
		end()
		if !kind.queued {
			require.NoError(t, <-pushed, "answered once written")
		}
	}

	var core, events int64
	ok := assert.Eventually(t, func() bool {
		var err error
		core, events, err = r.occurrences(t, name)
		return err == nil && core == want && events == want
	}, 30*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("%s: count %d (core/v1), %d (events.k8s.io/v1), want %d; fault acted %d times",
			name, core, events, want, h.Acted())
	}
	require.NoError(t, exp.Shutdown(context.Background()))
	stopped = true
	core, events, err := r.occurrences(t, name)
	require.NoError(t, err)
	assert.Equal(t, []int64{want, want}, []int64{core, events}, "still exact once every retry is done")
	assert.Equal(t, 1, r.objectsAbout(t, pod), "one object per series")
	obj, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, k8sevent.TypeWarning, obj.Type, "Error is written as Warning")
	assert.Equal(t, "east", obj.Annotations[k8sevent.AnnotationSourceCluster])
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "stale"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "forbidden"))
}

func apiPath(api string) string {
	if api == k8sevent.APICoreV1 {
		return "/api/v1"
	}
	return "/apis/" + strings.TrimSuffix(api, "/v1") + "/v1"
}
