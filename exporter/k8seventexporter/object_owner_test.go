package k8seventexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// kubeletEvent writes, as kubelet would, a BackOff Event about shop/web-1
// with count 4 straight through the API (core/v1: both APIs read it).
func (r *rig) kubeletEvent(t *testing.T, name string) *corev1.Event {
	t.Helper()
	ev := record(name, k8sevent.StateOngoing, 4, t0.Add(time.Minute))
	ev.ReportingController = "kubelet"
	out := ev.ToCoreV1()
	out.Count, out.FirstTimestamp, out.LastTimestamp = 4, metav1.NewTime(t0), metav1.NewTime(t0.Add(time.Minute))
	out.Series, out.EventTime = nil, metav1.MicroTime{}
	got, err := r.srv.Clientset().CoreV1().Events("shop").Create(context.Background(), out, metav1.CreateOptions{})
	require.NoError(t, err)
	return got
}

// preparedAs is ev as the rig's exporter writes it through api (its
// reporting controller set), for the name it moves to.
func preparedAs(t *testing.T, api string, ev k8sevent.Event) k8sevent.Event {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.ReportingController = "k8sevents.io/exporter"
	require.NoError(t, newWriter(nil, api, cfg, "test").prepare(&ev))
	return ev
}

// TestHostileNamingAnotherEvent: an app's records name kubelet's Event
// (same pod, same reason, its exact name) with a series count of 555 and
// more. The exporter (reporting_controller set) must not touch it: kubelet's
// object keeps its count and resourceVersion. The records land under their
// deterministic other name with the exact final count, although every write
// of the last record fails for a while, and a restarted exporter finds that
// object again instead of making a third one. A record about another pod
// naming the exporter's own object is refused the same way.
func TestHostileNamingAnotherEvent(t *testing.T) {
	t.Parallel()
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			r := newRig(t)
			const victim = "web-1.kubelet-backoff"
			before := r.kubeletEvent(t, victim)
			w, err := r.srv.WatchClientset(t).CoreV1().Events("shop").Watch(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			defer w.Stop()

			alt := renamedFor(t, api, record(victim, k8sevent.StateStarted, 555, t0.Add(time.Hour)), victim)
			fr := r.withProxy(t)
			// The last record's writes fail: 503 on its patch, three times.
			h := fr.proxy.Add(faultproxy.Rule{Verb: "PATCH", Path: apiPath(api) + "/namespaces/shop/events/" + alt,
				Action: faultproxy.Fail, Code: 503, From: 2, Times: 3})
			exp, tel := fr.faultExporter(t, api, componenttest.NewNopHost())
			send(t, exp, record(victim, k8sevent.StateStarted, 555, t0.Add(time.Hour)))
			send(t, exp, record(victim, k8sevent.StateOngoing, 556, t0.Add(2*time.Hour)))
			send(t, exp, record(victim, k8sevent.StateFinished, 560, t0.Add(3*time.Hour)))
			require.Eventually(t, func() bool {
				core, events, err := r.occurrences(t, alt)
				return err == nil && core == 560 && events == 560
			}, 30*time.Second, 10*time.Millisecond)
			assert.Equal(t, 3, h.Acted(), "the last record's writes met the fault")
			require.NoError(t, exp.Shutdown(context.Background()))

			// A restarted exporter: its listing finds the renamed object.
			exp2, tel2 := fr.faultExporter(t, api, componenttest.NewNopHost())
			t.Cleanup(func() { require.NoError(t, exp2.Shutdown(context.Background())) })
			// A record about another pod naming the exporter's own object
			// (same controller, another regarding object) cannot reach it.
			other := record(alt, k8sevent.StateStarted, 900, t0.Add(time.Hour))
			other.Regarding.Name, other.Regarding.UID = "web-2", "uid-web-2"
			otherAlt := renamedFor(t, api, other, alt)
			send(t, exp2, other)
			send(t, exp2, record(victim, k8sevent.StateOngoing, 561, t0.Add(4*time.Hour)))
			require.Eventually(t, func() bool {
				core, events, err := r.occurrences(t, alt)
				return err == nil && core == 561 && events == 561
			}, 30*time.Second, 10*time.Millisecond)
			require.Eventually(t, func() bool {
				core, events, err := r.occurrences(t, otherAlt)
				return err == nil && core == 900 && events == 900
			}, 30*time.Second, 10*time.Millisecond)
			assert.EqualValues(t, 1, createdOrAdopted(t, tel2), "only the web-2 record made an object")
			assert.Equal(t, 1, r.objectsAbout(t, "web-2"))

			after, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), victim, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "kubelet's Event was written to")
			assert.EqualValues(t, 4, after.Count)
			assert.Equal(t, "kubelet", after.ReportingController)
			assert.Equal(t, 2, r.objectsAbout(t, "web-1"), "kubelet's and the renamed one")
			assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "conflict"))
			assertNeverDown(t, w)
		})
	}
}

// TestHostileEveryNameTaken: when the record's name and each name it may
// move to hold another controller's Event, the record is dropped and
// counted (reason conflict), and none of those objects changes.
func TestHostileEveryNameTaken(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const victim = "web-1.taken"
	api := k8sevent.APIEventsV1
	ev := record(victim, k8sevent.StateStarted, 9, t0.Add(time.Hour))
	names := []string{victim}
	for n := 1; n <= maxRenames; n++ {
		names = append(names, renamedFor(t, api, ev, victim, n))
	}
	versions := map[string]string{}
	for _, name := range names {
		versions[name] = r.kubeletEvent(t, name).ResourceVersion
	}
	exp, tel := r.start(t, func(c *Config) { c.API = api })
	send(t, exp, ev)
	require.Eventually(t, func() bool {
		return counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "conflict") == 1
	}, 30*time.Second, 10*time.Millisecond)
	for _, name := range names {
		got, err := r.srv.Clientset().CoreV1().Events("shop").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, versions[name], got.ResourceVersion, name)
	}
	assert.Equal(t, len(names), r.objectsAbout(t, "web-1"))
}

// renamedFor is the n-th (default 1st) name the exporter moves ev to.
func renamedFor(t *testing.T, api string, ev k8sevent.Event, original string, n ...int) string {
	t.Helper()
	p := preparedAs(t, api, ev)
	which := 1
	if len(n) > 0 {
		which = n[0]
	}
	return renamed(&p, ownerOf(&p, false), original, which)
}

// assertNeverDown reads what the watch saw so far: no object's count went
// down.
func assertNeverDown(t *testing.T, w watch.Interface) {
	t.Helper()
	last := map[string]int64{}
	for {
		select {
		case e := <-w.ResultChan():
			ev, ok := e.Object.(*corev1.Event)
			if !ok || e.Type == watch.Deleted {
				continue
			}
			stored := k8sevent.FromCoreV1(ev)
			c := stored.Occurrences()
			require.GreaterOrEqual(t, c, last[ev.Name], fmt.Sprintf("%s went down", ev.Name))
			last[ev.Name] = c
		case <-time.After(time.Second):
			return
		}
	}
}
