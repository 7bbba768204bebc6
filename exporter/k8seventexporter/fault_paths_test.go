package k8seventexporter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestFaultAlreadyExistsNeverLowersACount: an exporter that does not know
// an object sends an older, lower count. It has the same reporting
// controller (only that one may take an object over) and was started
// before the object existed, so its listing did not find it. The create is
// answered AlreadyExists; the stored count stays (stored 9, record 3 -> 9),
// and a higher one is patched.
func TestFaultAlreadyExistsNeverLowersACount(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const name = "web-1.lower"
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	exp2, tel2 := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	send(t, exp, record(name, k8sevent.StateStarted, 9, t0.Add(time.Minute)))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 10*time.Millisecond)

	send(t, exp2, record(name, k8sevent.StateStarted, 3, t0.Add(time.Second)))
	require.Eventually(t, func() bool { return counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "stale") == 1 },
		30*time.Second, 10*time.Millisecond)
	core, events, err := r.occurrences(t, name)
	require.NoError(t, err)
	assert.Equal(t, []int64{9, 9}, []int64{core, events}, "a count never goes down")

	send(t, exp2, record(name, k8sevent.StateOngoing, 12, t0.Add(2*time.Minute)))
	require.Eventually(t, func() bool {
		core, events, err = r.occurrences(t, name)
		return err == nil && core == 12 && events == 12
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, r.objectsAbout(t, "web-1"))
}

// TestFaultPatchAfterAlreadyExistsAnswers404: the object expires between
// the create's AlreadyExists and the patch (a 404 injected on the patch):
// the record is retried, not dropped, and ends written.
func TestFaultPatchAfterAlreadyExistsAnswers404(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const name = "web-1.gone-between"
	exp, tel := r.start(t, func(c *Config) { c.API = k8sevent.APIEventsV1 })
	fr := r.withProxy(t)
	// The same reporting controller (only that one may take an object
	// over), started before the object exists: its listing misses it.
	exp2, tel2 := fr.faultExporter(t, k8sevent.APIEventsV1, componenttest.NewNopHost())
	t.Cleanup(func() { require.NoError(t, exp2.Shutdown(context.Background())) })
	send(t, exp, record(name, k8sevent.StateStarted, 2, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 10*time.Millisecond)

	h := fr.proxy.Add(faultproxy.Rule{Verb: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/shop/events/" + name,
		Action: faultproxy.Fail, Code: 404, Times: 1})
	send(t, exp2, record(name, k8sevent.StateOngoing, 5, t0.Add(time.Minute)))
	require.Eventually(t, func() bool {
		core, events, err := r.occurrences(t, name)
		return err == nil && core == 5 && events == 5
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, h.Acted())
	assert.Zero(t, counter(t, tel2, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"), "a 404 after AlreadyExists is not permanent")
	assert.Positive(t, counter(t, tel2, "otelcol_exporter_k8sevents_retryable_failures", "reason", "error"))
}

// TestFaultCreateAfterPatch404IsACreate: the object expired (the patch
// answers a real 404), and the create that follows answers 404 too (the
// namespace is gone): that is permanent, dropped and counted, and the queue
// moves on to the next record.
func TestFaultCreateAfterPatch404IsACreate(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fr := r.withProxy(t)
	const name = "web-1.ns-gone"
	exp, tel := fr.faultExporter(t, k8sevent.APIEventsV1, componenttest.NewNopHost())
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	send(t, exp, record(name, k8sevent.StateStarted, 2, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, r.srv.Clientset().EventsV1().Events("shop").Delete(context.Background(), name, metav1.DeleteOptions{}))

	fr.proxy.Add(faultproxy.Rule{Verb: "POST", Path: "/apis/events.k8s.io/v1/namespaces/shop/events", Action: faultproxy.Fail, Code: 404, Times: 1})
	send(t, exp, record(name, k8sevent.StateOngoing, 5, t0.Add(time.Minute)), record("web-1.after", k8sevent.StateSingleton, 1, t0))
	require.Eventually(t, func() bool {
		_, err := r.srv.Clientset().EventsV1().Events("shop").Get(context.Background(), "web-1.after", metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the queue moves on")
	assert.EqualValues(t, 1, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_retryable_failures", "reason", "error"), "not retried")
}

// TestFaultConcurrentWritesOfOneObject: without a queue, several
// goroutines write records of one object at once. The check of what was
// written and the write are atomic per object: one object, its count never
// goes down (watched), and it ends at the highest count sent.
func TestFaultConcurrentWritesOfOneObject(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const name, writers, each = "web-1.contended", 4, 10
	w, err := r.srv.WatchClientset(t).EventsV1().Events("shop").Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	defer w.Stop()
	exp, _ := r.start(t, func(c *Config) {
		c.API = k8sevent.APIEventsV1
	})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c := int64(2 + i*writers + g) // every count once, ascending per writer
				send(t, exp, record(name, k8sevent.StateOngoing, c, t0.Add(time.Duration(c)*time.Second)))
			}
		}()
	}
	wg.Wait()
	const top = 2 + (each-1)*writers + writers - 1
	var seen []int32
	timeout := time.After(30 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1] != top {
		select {
		case ev := <-w.ResultChan():
			if e, ok := ev.Object.(*eventsv1.Event); ok && ev.Type != watch.Deleted && e.Series != nil {
				seen = append(seen, e.Series.Count)
			}
		case <-timeout:
			t.Fatalf("the object never reached %d: %v", top, seen)
		}
	}
	for i := 1; i < len(seen); i++ {
		require.GreaterOrEqual(t, seen[i], seen[i-1], "the count went down: %v", seen)
	}
	assert.Equal(t, 1, r.objectsAbout(t, "web-1"))
	t.Logf("%d writes seen: %v", len(seen), fmt.Sprint(seen))
}

// TestHostileOversizedEventsNeverReachTheAPIServer: a record whose open
// fields make a huge object (a 100 KB regarding kind) is dropped before any
// request; a create answered 413, or etcd's "request is too large" 500, is
// dropped as permanent instead of retried; the good record behind them is
// written at once.
func TestHostileOversizedEventsNeverReachTheAPIServer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fr := r.withProxy(t)
	exp, tel := fr.faultExporter(t, k8sevent.APIEventsV1, componenttest.NewNopHost())
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })

	huge := record("web-1.huge-kind", k8sevent.StateSingleton, 1, t0)
	huge.Regarding.Kind = strings.Repeat("K", 100<<10)
	send(t, exp, huge)
	require.Eventually(t, func() bool {
		return counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "invalid") == 1
	}, 30*time.Second, 10*time.Millisecond)
	assert.Zero(t, fr.proxy.Seen("POST"), "never sent")

	collection := "/apis/events.k8s.io/v1/namespaces/shop/events"
	fr.proxy.Add(faultproxy.Rule{Verb: "POST", Path: collection, Action: faultproxy.Fail, Code: 413, Times: 1})
	fr.proxy.Add(faultproxy.Rule{Verb: "POST", Path: collection, Action: faultproxy.Fail, Code: 500, From: 2, Times: 1,
		Message: "etcdserver: request is too large"})
	send(t, exp, record("web-1.refused-413", k8sevent.StateSingleton, 1, t0),
		record("web-1.refused-etcd", k8sevent.StateSingleton, 1, t0), record("web-1.good", k8sevent.StateSingleton, 1, t0))
	require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 10*time.Millisecond)
	assert.EqualValues(t, 2, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_retryable_failures", "reason", "error"), "neither was retried")
	assert.Equal(t, 3, fr.proxy.Seen("POST"), "one request each")
}
