package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestHostileClaimsThroughTiers: an app allowed in namespace a sends,
// through tier 1 and tier 2 (the ready configurations, tier 2 writing
// core/v1 so that the source field is written), records that claim a
// count of 2,147,483,647, kubelet on node-1 as source and reporter,
// another cluster, and another client. The Event written counts the
// records sent (tier 2 runs input_counts: ignore), shows the collector's
// controller and the app's identity (its ServiceAccount and namespace) as
// its source and reporter (what kubectl describe shows as "From"), names
// the tier-2 pod that wrote it in an annotation, and tier 1's cluster;
// the records tier 2 processed carry the app as their client.
func TestHostileClaimsThroughTiers(t *testing.T) {
	parallel(t)
	binary(t)
	r := newAuthRig(t, "a")
	app := r.serviceAccount(t, "a", "app", "a")
	tr := startTiers(t, r, "exporters:\n  k8sevents:\n    api: v1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const sent = 4
	ld := appendOccurrences(plog.NewLogs(), "a", "web-claims", "BackOff", sent, func(ev *k8sevent.Event) {
		ev.Count, ev.SeriesCount = 2147483647, 2147483647
		ev.SourceComponent, ev.SourceHost = "kubelet", "node-1"
		ev.ReportingController, ev.ReportingInstance = "kubelet", "node-1"
		ev.Cluster = k8sevent.Cluster{Name: "prod-west", UID: "uid-prod-west"}
	})
	for _, rl := range ld.ResourceLogs().All() {
		k8sevent.PutOrigin(rl.Resource().Attributes(), "system:serviceaccount:kube-system:kube-controller-manager", k8sevent.Cluster{Name: "prod-west"})
		k8sevent.PutOrigin(rl.ScopeLogs().At(0).LogRecords().At(0).Attributes(), "system:serviceaccount:kube-system:kube-controller-manager",
			k8sevent.Cluster{Name: "prod-west", UID: "uid-prod-west"})
	}
	resp, err := exportAs(ctx, dial(t, tr.grpc, nil), app, ld)
	require.NoError(t, err)
	require.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	tr.stop(ctx, t, r, map[string]int64{"a/web-claims/BackOff": sent}) // the records sent, not the count claimed

	evs, err := listEvents(ctx, r.srv.Clientset(), inNamespaces("a"))
	require.NoError(t, err)
	require.Len(t, evs, 1, "one Event for the object")
	ev := evs[0]
	assert.Equal(t, int64(sent), k8sevent.CoreV1Occurrences(&ev), "the records sent, not the count claimed")
	const reporter = "system:serviceaccount:a:app@a" // the app's identity, never what it claims
	assert.Equal(t, corev1.EventSource{Component: tiersController, Host: reporter}, ev.Source, "kubectl describe's From")
	assert.Equal(t, tiersController, ev.ReportingController)
	assert.Equal(t, reporter, ev.ReportingInstance)
	assert.Equal(t, "tier2-0", ev.Annotations[k8sevent.AnnotationWrittenBy], "the tier-2 pod that wrote it")
	assert.Equal(t, "east", ev.Annotations[k8sevent.AnnotationSourceCluster], "tier 1's cluster, not the one claimed")
	stamped := 0
	tr.forEachSinkRecord(t, func(_, rec pcommon.Map) {
		if v, ok := rec.Get(k8sevent.AttrClient); ok {
			stamped++
			assert.Equal(t, "system:serviceaccount:a:app", v.Str(), "the client tier 1 authenticated, not the one claimed")
		}
	})
	assert.Positive(t, stamped, "records tier 2 passed on as they came carry their client")
}

// floodReport is what one flood run measured.
type floodReport struct {
	calmDelay      time.Duration // from the calm client's first try to its Event on the API server
	floodBefore    int           // flood Events written in that time
	floodAccepted  int64         // flood records the collector took
	floodThrottled int64         // flood requests refused over the budget
	floodFor       time.Duration
}

// floodRun runs the ready otlp-ingestion.yaml (its per-client budget,
// the exporter's QPS 20) while ServiceAccount flood/app sends requests of
// 50 distinct Events as fast as the collector answers, ignoring the time
// to wait it is told, for floodFor, spreading them over floodNamespaces
// namespaces where it may create Events (1: its own namespace; more: a
// client with rights in many, which gets a lane per namespace in the
// exporter). floodFor/2 in, calm/app sends one record for namespace calm,
// until it is taken. env: more environment for the collector.
func floodRun(t testing.TB, floodNamespaces int, floodFor time.Duration, env ...string) floodReport {
	ctx, cancel := context.WithTimeout(context.Background(), floodFor+3*time.Minute)
	defer cancel()
	var nss []string
	for i := range floodNamespaces {
		nss = append(nss, fmt.Sprintf("flood-%d", i))
	}
	r := newAuthRig(t, append(nss, "calm")...)
	flood := r.serviceAccount(t, nss[0], "app", nss...)
	calm := r.serviceAccount(t, "calm", "app", "calm")
	const controller = "k8sevents.io/e2e-flood"
	addr := loopback(t)
	c := startCollectorEnv(t, t.TempDir(), readyConfig(t, "otlp-ingestion.yaml"), append(append(r.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+addr, "OTLP_HTTP_ENDPOINT="+loopback(t), "REPORTING_CONTROLLER="+controller), env...))
	conn := dial(t, addr, nil)
	watch := watchAdded(ctx, t, r)

	var rep floodReport
	var accepted, throttled atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { floodLoop(ctx, conn, flood, nss, start.Add(floodFor), &accepted, &throttled) })
	time.Sleep(floodFor / 2)
	calmAt := time.Now()
	for taken := false; !taken; {
		_, err := exportAs(ctx, dial(t, addr, nil), calm, appendOccurrences(plog.NewLogs(), "calm", "calm-pod", "Started", 1, nil))
		switch status.Code(err) {
		case codes.OK:
			taken = true
		case codes.Unavailable, codes.DeadlineExceeded: // a full queue
			require.Less(t, time.Since(calmAt), 3*time.Minute, "the calm client's record not taken: %v", err)
		default:
			require.NoError(t, err, "the calm client")
		}
	}
	calmWritten := watch.waitFor(t, "calm", 5*time.Minute)
	wg.Wait()
	rep.calmDelay = calmWritten.Sub(calmAt)
	rep.floodBefore = watch.countBetween(calmAt, calmWritten, func(ns string) bool { return ns != "calm" })
	rep.floodAccepted, rep.floodThrottled, rep.floodFor = accepted.Load(), throttled.Load(), time.Since(start)
	require.Equal(t, float64(rep.floodThrottled), c.scrape(t).Sum("otelcol_receiver_k8seventsotlp_throttled_requests"))
	return rep
}

// floodLoop sends requests of 50 new Events, round robin over nss, until
// end; it does not wait when told to (a hostile client), only 20 ms
// between requests so that the load stays bounded.
func floodLoop(ctx context.Context, conn *grpc.ClientConn, token string, nss []string, end time.Time, accepted, throttled *atomic.Int64) {
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		ld := plog.NewLogs()
		for j := range 50 {
			appendOccurrences(ld, nss[(i*50+j)%len(nss)], fmt.Sprintf("flood-%d-%d", i, j), "Flood", 1, nil)
		}
		_, err := exportAs(ctx, conn, token, ld)
		switch status.Code(err) {
		case codes.OK:
			accepted.Add(50)
		case codes.ResourceExhausted:
			throttled.Add(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addedLog is every Event ADDED on the API server, in its order.
type addedLog struct {
	mu  sync.Mutex
	all []added
}

type added struct {
	ns string
	at time.Time
}

func watchAdded(ctx context.Context, t testing.TB, r *authRig) *addedLog {
	w, err := r.srv.WatchClientset(t).CoreV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	log := &addedLog{}
	go func() {
		for ev := range w.ResultChan() {
			if e, ok := ev.Object.(*corev1.Event); ok && ev.Type == watch.Added {
				log.mu.Lock()
				log.all = append(log.all, added{ns: e.Namespace, at: time.Now()})
				log.mu.Unlock()
			}
		}
	}()
	return log
}

// waitFor answers when the first Event of namespace ns was seen.
func (l *addedLog) waitFor(t testing.TB, ns string, limit time.Duration) time.Time {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, a := range l.all {
			if a.ns == ns {
				l.mu.Unlock()
				return a.at
			}
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no Event in %s within %v", ns, limit)
	return time.Time{}
}

func (l *addedLog) countBetween(from, to time.Time, keep func(ns string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.all {
		if !a.at.Before(from) && !a.at.After(to) && keep(a.ns) {
			n++
		}
	}
	return n
}

// TestHostileClientFlood: one client floods (requests of 50 new Events as
// fast as the collector answers, ignoring the time to wait it is told)
// while another sends one record. The flooder is held to its budget (the
// ready configuration's 20 records/s, burst 200: it gets no more through
// than that, whatever it sends), so it cannot fill the queues everyone
// shares; the calm client is never throttled, and its Event is written
// within at most a second of writes at the exporter's rate, not behind
// the flood (BenchmarkAuthFairness measures the delay).
func TestHostileClientFlood(t *testing.T) {
	parallel(t)
	binary(t)
	const floodFor = 12 * time.Second
	rep := floodRun(t, 1, floodFor)
	t.Logf("flood %v: %d records taken, %d requests throttled; the calm client's Event %v after its first try, %d flood Events written meanwhile",
		rep.floodFor.Round(time.Millisecond), rep.floodAccepted, rep.floodThrottled, rep.calmDelay.Round(time.Millisecond), rep.floodBefore)
	assert.Positive(t, rep.floodThrottled, "the flood was held back")
	budget := 200 + 20*rep.floodFor.Seconds() + 50 // burst, rate, and one request on credit
	assert.LessOrEqual(t, float64(rep.floodAccepted), budget, "the flood got no more than its budget through")
	assert.LessOrEqual(t, rep.floodBefore, 25, "flood writes before the calm client's Event: the exporter's turns (one per busy namespace), its 200 ms batch, one second of its rate")
}

// BenchmarkAuthFairness measures the calm client's first-Event delay
// (from its first try to its Event on the API server) while another
// client floods the ready otlp-ingestion.yaml (floodRun) for 20 s: in its
// own namespace, and spread over 50 and 200 namespaces where it may
// create Events (each a lane of its own in the exporter); and, for
// comparison, over 50 namespaces without the per-client budget.
//
//	go test -run XXX -bench BenchmarkAuthFairness -benchtime 1x ./e2e/
func BenchmarkAuthFairness(b *testing.B) {
	binary(b)
	for _, run := range []struct {
		nss    int
		budget bool
	}{{1, true}, {50, true}, {200, true}, {50, false}} {
		name := fmt.Sprintf("flood-in-%d-namespaces", run.nss)
		var env []string
		if !run.budget {
			name, env = name+"-no-budget", []string{"CLIENT_RECORDS_PER_SECOND=1000000", "CLIENT_BURST=1000000"}
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				rep := floodRun(b, run.nss, 20*time.Second, env...)
				b.ReportMetric(rep.calmDelay.Seconds(), "calm-delay-s")
				b.ReportMetric(float64(rep.floodBefore), "flood-writes-before")
				b.ReportMetric(float64(rep.floodAccepted)/rep.floodFor.Seconds(), "flood-records-taken/s")
			}
		})
	}
}
