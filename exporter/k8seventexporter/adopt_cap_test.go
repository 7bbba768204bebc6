package k8seventexporter

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	corev1 "k8s.io/api/core/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// adopt_max_series: one object collects at most that many series' slots;
// a series that would add one more writes an object of its own.

// capped is adopter with adopt_max_series n.
func capped(api, instance string, n int) func(*Config) {
	return func(c *Config) {
		adopter(api, instance)(c)
		c.AdoptMaxSeries = n
	}
}

// handedOver is one series of the hand-over chain: who writes it, under
// which name, with which final count.
type handedOver struct {
	writer int
	name   string
	final  int64
}

// requireCapHolds checks the cap's properties on the pod's objects: the
// counts sum to the occurrences of every series, each object counts
// exactly its slots, holds at most maxSeries of them (and annotations far
// under the API server's 256 KiB), and each series counts on exactly one
// object. It returns the objects.
func requireCapHolds(t *testing.T, r *rig, pod string, series []handedOver, instances []string, maxSeries int) []corev1.Event {
	t.Helper()
	objs := r.aboutPod(t, pod)
	var total, want int64
	home := map[string]string{} // slot -> object
	for _, o := range objs {
		core, events, err := r.occurrences(t, o.Name)
		require.NoError(t, err)
		require.Equal(t, core, events, "%s: the same count through both APIs", o.Name)
		total += core
		var inSlots int64
		bytes := 0
		for k, v := range slots(&o) {
			var n int64
			_, err := fmt.Sscan(v, &n)
			require.NoError(t, err)
			inSlots += n
			bytes += len(k) + len(v)
			require.Empty(t, home[k], "slot %s on %s and %s", k, home[k], o.Name)
			home[k] = o.Name
		}
		assert.Equal(t, inSlots, core, "%s: its count is the sum of its slots %v", o.Name, o.Annotations)
		assert.LessOrEqual(t, len(slots(&o)), maxSeries, "%s: at most adopt_max_series slots", o.Name)
		assert.LessOrEqual(t, bytes, maxSeries*66, "%s: slot annotations", o.Name)
	}
	for _, s := range series {
		want += s.final
		assert.NotEmpty(t, home[slotKey(instances[s.writer], s.name)], "series %s counts on one object", s.name)
	}
	assert.Equal(t, want, total, "the objects' counts sum to every series' occurrences")
	return objs
}

// TestAdoptCapOpensAnotherObjectWhenFull: eight series of one pod, each
// started by the other of two writers while the one before is still open
// (a ring that keeps moving the pod), with adopt_max_series 3: the first
// object takes three, the next series writes an object of its own, which
// the next two adopt, and so on (3 objects). Every count exact, no slot on
// two objects, no count going down. The code before put all eight slots
// on one object (~5,000 of them reach the API server's annotation limit,
// and every write of the object is refused).
func TestAdoptCapOpensAnotherObjectWhenFull(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	instances := []string{"tier2-0", "tier2-3"}
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			pod := "cap-" + strings.NewReplacer(".", "-", "/", "-").Replace(api)
			cw := watchCounts(t, r, pod)
			var exps [2]exporter.Logs
			for i, instance := range instances {
				exps[i], _ = r.start(t, capped(api, instance, 3))
			}
			var chain []handedOver
			var recs [][]k8sevent.Event
			for k := range 8 {
				s := handedOver{writer: k % 2, name: fmt.Sprintf("%s.s%d", pod, k), final: 3}
				chain = append(chain, s)
				recs = append(recs, seriesOf(pod, s.name, t0.Add(time.Duration(k)*10*time.Second), 1, 2, 3))
			}
			// Series k's first record comes after series k-1's second and
			// before its last: it is open when k starts.
			for k := range chain {
				send(t, exps[chain[k].writer], recs[k][0])
				if k > 0 {
					send(t, exps[chain[k-1].writer], recs[k-1][2])
				}
				send(t, exps[chain[k].writer], recs[k][1])
			}
			send(t, exps[chain[7].writer], recs[7][2])

			objs := requireCapHolds(t, r, pod, chain, instances, 3)
			assert.Equal(t, 3, len(objs), "objects: a new one each time the open one is full: 3 + 3 + 2 series")
			for _, o := range objs {
				got := k8sevent.FromCoreV1(&o)
				cw.awaitLast(t, o.Name, got.Occurrences())
			}
			cw.assertNeverDown(t)
		})
	}
}

// TestAdoptCapFaultOnTheWriteThatMeetsIt: the object of series a holds
// one slot of adopt_max_series 2, and two writers start a one-occurrence
// series each at once (singletons: the first record is the last, the
// worst moment). One takes the last slot; the other finds the object full
// (in its listing, or after a 409 when the other won the race) and creates
// its own object, and that create fails: 503 once, 503 for a while, the
// answer lost after the server applied it (once, for a while). Every
// series counts once, on one object, no object exceeds the cap, no count
// goes down. The code before added both slots to the one object (3 > 2)
// and made no create for the fault to meet.
func TestAdoptCapFaultOnTheWriteThatMeetsIt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	eachAdoptFault(t, func(t *testing.T, api string, f fault, id string) {
		runCapFault(t, r, api, f, "full-"+id)
	})
}

func runCapFault(t *testing.T, r *rig, api string, f fault, pod string) {
	fr := r.withProxy(t)
	cw := watchCounts(t, r, pod)
	instances := []string{"tier2-0", "tier2-3", "tier2-5"}
	var exps []exporter.Logs
	for _, instance := range instances {
		exp, _ := fr.faultExporter(t, api, componenttest.NewNopHost(), capped(api, instance, 2))
		exps = append(exps, exp)
		t.Cleanup(func() { _ = exp.Shutdown(t.Context()) })
	}
	chain := []handedOver{{0, pod + ".a", 2}, {1, pod + ".y", 1}, {2, pod + ".z", 1}}
	send(t, exps[0], seriesOf(pod, chain[0].name, t0, 1, 2)...)

	rule := f.rule
	rule.Verb, rule.Path = "POST", apiPath(api)+"/namespaces/shop/events"
	h := fr.proxy.Add(rule)
	defer h.Remove() // also when the test fails: the sends below end
	var wg sync.WaitGroup
	for _, s := range chain[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(t, exps[s.writer], seriesOf(pod, s.name, t0.Add(30*time.Second), 1)...)
		}()
	}
	hits := 1
	if f.forAWhile && f.rule.Action != faultproxy.ApplyDropAnswer {
		hits = 3
	}
	acted, remove := h.Acted, h.Remove
	if f.forAWhile && f.rule.Action == faultproxy.ApplyDropAnswer {
		// A create applied is found by the retry's listing (its own name):
		// no second create. For a while, then, is the create's answer and
		// the next two listings lost: those of its retries, counted from
		// the create's fault whatever the writers listed before it.
		lists := fr.proxy.Add(faultproxy.Rule{Verb: "GET", Path: "/api/v1/namespaces/shop/events", Query: "fieldSelector",
			After: h, Times: 2, Action: faultproxy.ApplyDropAnswer})
		defer lists.Remove()
		acted = func() int { return min(h.Acted(), lists.Acted()/2) }
		remove = func() { h.Remove(); lists.Remove() }
	}
	require.Eventually(t, func() bool { return acted() >= hits }, 2*time.Minute, 10*time.Millisecond, "the fault met the create")
	remove()
	wg.Wait()

	objs := requireCapHolds(t, r, pod, chain, instances, 2)
	assert.Equal(t, 2, len(objs), "objects: a's with one of the two, the other's own")
	cw.assertNeverDown(t)
	t.Logf("%s: the create's fault acted %d times; counts seen %v", pod, h.Acted(), cw.seen)
}
