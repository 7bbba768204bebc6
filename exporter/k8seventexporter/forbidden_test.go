package k8seventexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// forbidden403 is what an API server whose authorizer does not allow the
// request answers (times 0: every time).
func forbidden403(times int) faultproxy.Rule {
	return faultproxy.Rule{Action: faultproxy.Fail, Code: 403, Times: times,
		Message: `events.events.k8s.io is forbidden: User "exporter" cannot write resource "events" in API group "events.k8s.io" in the namespace "shop"`}
}

// notReady is /readyz of an API server whose informers have not synced.
func notReady(times int) *faultproxy.Rule {
	return &faultproxy.Rule{Action: faultproxy.Fail, Code: 500, Times: times,
		Message: "[-]informer-sync failed: 2 informers not started yet\nreadyz check failed"}
}

// startingFaults are what an API server that is starting answers the last
// record's write: 403 until its authorizer's informers have synced, while
// its /readyz fails (the informer-sync check) or answers 403 itself (the
// probe's own permission is not in place yet either); or one 403 just
// before it got ready, /readyz ready when the exporter asks.
var startingFaults = []fault{
	{name: "403-not-ready-once", rule: forbidden403(1), readyz: notReady(1)},
	{name: "403-not-ready-for-a-while", rule: forbidden403(0), forAWhile: true, readyz: notReady(0)},
	{name: "403-readyz-forbidden-for-a-while", rule: forbidden403(0), forAWhile: true, readyz: new(forbidden403(0))},
	{name: "403-once-ready-at-probe", rule: forbidden403(1)},
}

// TestExactStartingAPIServer403OnTheLastRecord: for every record kind the
// processor emits and both APIs, the writes of an object's last record (its
// final count) meet an API server that is starting: 403 while its /readyz
// says it is not ready, once or for a while, or one 403 answered just
// before it got ready. The object ends with the exact count through both
// APIs, it is the only object about its pod, and nothing is counted as
// forbidden (runFault).
func TestExactStartingAPIServer403OnTheLastRecord(t *testing.T) { runFaults(t, startingFaults) }

// gapRecord is record i of a pod in namespace ns, where the exporter's
// user has no Role.
func gapRecord(ns string, i int) k8sevent.Event {
	pod := fmt.Sprintf("api-%d", i)
	ev := record(pod+".gap", k8sevent.StateSingleton, 1, t0)
	ev.Regarding.Namespace, ev.Regarding.Name, ev.Regarding.UID = ns, pod, "uid-"+pod
	return ev
}

// TestExactRBACGapIsReportedAndHoldsNoOtherNamespace: the exporter's user
// has deploy/rbac-exporter.yaml's rules as a Role in namespace shop only;
// its records for namespaces other (a flood) and third are refused by the
// real API server's RBAC. It writes through a persistent queue. Each of
// those is tried twice around one /readyz (ready), then one
// SelfSubjectAccessReview says RBAC denies it, and it is dropped: counted as permanent_failures{reason=forbidden},
// never as a retry (its lane waits for no backoff), and logged once per
// namespace, third's line not silenced by other's. Meanwhile shop's series
// are written at their lane's turn, each round behind a handful of refused
// records only, and end exact: the sum of the final counts is the
// occurrences sent, one object per series, no count ever went down.
func TestExactRBACGapIsReportedAndHoldsNoOtherNamespace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	user, token := r.srv.NewUser(t, "exporter")
	ctx := context.Background()
	_, err := r.srv.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "third"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r.srv.GrantRole(t, "../../deploy/rbac-exporter.yaml", user, "shop")

	// The proxy forwards every request as the user, and counts them.
	p, err := faultproxy.NewForREST(r.srv.RESTConfigFor(token))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, p.WriteKubeconfig(kubeconfig))
	creates := map[string]*faultproxy.Handle{}
	for _, ns := range []string{"other", "third"} {
		creates[ns] = p.Add(faultproxy.Rule{Verb: "POST", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events", Action: faultproxy.Forward})
	}
	probes := p.Add(faultproxy.Rule{Path: "/readyz", Action: faultproxy.Forward})
	reviews := p.Add(faultproxy.Rule{Path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", Action: faultproxy.Forward})

	writes := r.watchWrites(t)
	core, logs := observer.New(zap.InfoLevel)
	asUser := &rig{srv: r.srv, kubeconfig: kubeconfig}
	// A persistent queue: its lookahead lets shop's rounds pass the flood.
	exp, tel := asUser.startOn(t, storageHost(t), zap.New(core), func(c *Config) {
		persistentQueue(c)
		c.API = k8sevent.APIEventsV1
	})
	refused := func() int64 {
		return counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "forbidden")
	}

	const flood = 90 // four requests each at the QPS cap of 20: about 18 s
	for start := 0; start < flood; start += 10 {
		var evs []k8sevent.Event
		for i := start; i < start+10; i++ {
			evs = append(evs, gapRecord("other", i))
		}
		send(t, exp, evs...)
	}
	send(t, exp, gapRecord("third", 0), gapRecord("third", 1))
	require.Eventually(t, func() bool { return refused() >= 20 }, 60*time.Second, 10*time.Millisecond,
		"the refused records are dropped as forbidden, past the burst")

	// Three series in shop, one round of records at a time, each round sent
	// once the one before is on the API server.
	counts := []int64{1, 2, 5, 7}
	pods := []string{"web-1", "web-2", "web-3"}
	want := map[string]int32{}
	for step, c := range counts {
		state := []string{k8sevent.StateSingleton, k8sevent.StateStarted, k8sevent.StateOngoing, k8sevent.StateFinished}[step]
		var evs []k8sevent.Event
		for _, pod := range pods {
			ev := record(pod+".gapless", state, c, t0.Add(time.Duration(c)*time.Second))
			ev.Regarding.Name, ev.Regarding.UID = pod, "uid-"+pod
			evs = append(evs, ev)
			want[ev.Name] = int32(c)
		}
		before := refused()
		send(t, exp, evs...)
		require.Eventually(t, func() bool { return writtenAt(writes, want) }, 60*time.Second, 10*time.Millisecond, "round %d of shop", step)
		// Once in its lane, each record waits at most the write in flight
		// and one turn of each refused namespace (four requests each, one
		// drop); before that the batcher holds the round for up to 200 ms:
		// allowed one second of requests at the QPS cap (seven drops, with
		// room).
		// First in first out, the rest of the flood would come first.
		bound := int64(len(pods)*2 + 1 + 7)
		ahead := refused() - before
		assert.LessOrEqual(t, ahead, bound, "refused records dropped while round %d of shop waited", step)
		t.Logf("round %d of shop: %d refused records dropped while it waited", step, ahead)
	}
	assert.Less(t, refused(), int64(flood), "shop was written while the flood was refused")

	require.Eventually(t, func() bool { return refused() == flood+2 }, 60*time.Second, 10*time.Millisecond, "every refused record is counted")
	assert.Equal(t, 2*flood, creates["other"].Matched(), "each refused record is tried twice")
	assert.Equal(t, 4, creates["third"].Matched(), "each refused record is tried twice")
	assert.Equal(t, flood+2, probes.Matched(), "one /readyz per refused record")
	assert.Equal(t, flood+2, reviews.Matched(), "one review per refused record: create is denied, patch not asked")
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_retryable_failures", "reason", "forbidden"), "a refused record never waits for a backoff")
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))

	logged := map[string]int{}
	for _, e := range logs.FilterMessageSnippet("may not write Events in this namespace").All() {
		assert.Equal(t, zap.ErrorLevel, e.Level)
		logged[e.ContextMap()["namespace"].(string)]++
	}
	assert.Equal(t, map[string]int{"other": 1, "third": 1}, logged, "one line per namespace within the minute")

	for _, ns := range []string{"other", "third"} {
		l, err := r.srv.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, l.Items, "nothing written in %s", ns)
	}
	r.waitForCounts(t, want)
	final, _, err := r.eventCounts(t)
	require.NoError(t, err)
	var sum int64
	for _, c := range final {
		sum += int64(c)
	}
	assert.Equal(t, int64(len(pods))*counts[len(counts)-1], sum, "the sum of the final counts is the occurrences sent")
	for _, pod := range pods {
		assert.Equal(t, 1, r.objectsAbout(t, pod), "one object per series (%s)", pod)
	}
	writes.neverDown(t)
}

// writtenAt reports whether the watch saw every object of want in shop at
// its count.
func writtenAt(l *writeLog, want map[string]int32) bool {
	seen := map[string]int32{}
	for _, w := range l.snapshot() {
		if w.ns == "shop" {
			seen[w.name] = max(seen[w.name], w.count)
		}
	}
	for name, c := range want {
		if seen[name] != c {
			return false
		}
	}
	return true
}
