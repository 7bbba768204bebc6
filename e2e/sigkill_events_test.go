package e2e

// The Events TestExactSigkillLosesAndRepeatsNothing writes, and its watch
// on what the exporter wrote.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// sigkillSource writes the Events: series of core/v1 Events whose count is
// updated at each occurrence (tools/record's way), and new Events never
// changed again (a CronJob's Jobs created and completed).
type sigkillSource struct {
	cs      kubernetes.Interface
	counts  map[string]int32 // count written of each series' Event
	jobs    int
	written int64 // occurrences written, markers included
}

// occur writes one more occurrence of the series about pod.
func (s *sigkillSource) occur(ctx context.Context, t *testing.T, pod string) {
	t.Helper()
	name := pod + ".backoff"
	s.counts[name]++
	now := metav1.NewTime(time.Now())
	events := s.cs.CoreV1().Events(sigkillNS)
	var err error
	if n := s.counts[name]; n == 1 {
		_, err = events.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: sigkillNS},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: sigkillNS, Name: pod, UID: types.UID("uid-" + pod)},
			Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
	} else {
		patch := fmt.Sprintf(`{"count":%d,"lastTimestamp":%q}`, n, now.UTC().Format(time.RFC3339))
		_, err = events.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	require.NoError(t, err)
	s.written++
}

// job writes a new Event that is never changed again, for a Job of the
// CronJob nightly: the CronJob's SuccessfulCreate (one series of the
// CronJob's, as client-go's series key leaves the note out), or the Job's
// Completed (a series of one).
func (s *sigkillSource) job(ctx context.Context, t *testing.T) {
	t.Helper()
	s.jobs++
	job := fmt.Sprintf("nightly-%d", s.jobs)
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "nightly." + job, Namespace: sigkillNS},
		InvolvedObject: corev1.ObjectReference{Kind: "CronJob", APIVersion: "batch/v1", Namespace: sigkillNS, Name: "nightly", UID: "uid-nightly"},
		Reason:         "SuccessfulCreate", Message: "Created job " + job, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "cronjob-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if s.jobs%2 == 0 {
		ev.Name = job + ".completed"
		ev.InvolvedObject = corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: sigkillNS, Name: job, UID: types.UID("uid-" + job)}
		ev.Reason, ev.Message, ev.Source.Component = "Completed", "Job completed", "job-controller"
	}
	_, err := s.cs.CoreV1().Events(sigkillNS).Create(ctx, ev, metav1.CreateOptions{})
	require.NoError(t, err)
	s.written++
}

// paced writes n occurrences, one every 100 ms (so the receiver saves its
// checkpoint during them): every third a new Event, the others in the
// series of three pods that go on through the whole test; then, unless
// last is "", the series about pod last, three occurrences of which the
// final one is the last write. It returns the occurrences written.
func (s *sigkillSource) paced(ctx context.Context, t *testing.T, n int, last string) int64 {
	t.Helper()
	before := s.written
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		if i%3 == 2 {
			s.job(ctx, t)
		} else {
			s.occur(ctx, t, fmt.Sprintf("crashloop-%d", i/3%3))
		}
		<-tick.C
	}
	if last != "" {
		for range 3 {
			s.occur(ctx, t, last)
		}
	}
	return s.written - before
}

// burst writes n new Events at once, more than the exporter's burst of
// writes, then the three occurrences of the series about pod last.
func (s *sigkillSource) burst(ctx context.Context, t *testing.T, n int, last string) int64 {
	t.Helper()
	before := s.written
	for range n {
		s.job(ctx, t)
	}
	for range 3 {
		s.occur(ctx, t, last)
	}
	return s.written - before
}

// whileDown writes while the collector is down: the long series go on
// and a new Event comes.
func (s *sigkillSource) whileDown(ctx context.Context, t *testing.T) {
	t.Helper()
	s.occur(ctx, t, "crashloop-0")
	s.occur(ctx, t, "crashloop-1")
	s.job(ctx, t)
}

// awaitMirrored writes a marker Event and waits until the exporter wrote
// its object: the receiver emits in the API server's order and the
// exporter writes one namespace's records in order, so everything written
// before it went through the pipeline.
func (s *sigkillSource) awaitMirrored(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	pod := "e2e-marker-" + id
	require.NoError(t, writeMarker(ctx, s.cs, sigkillNS, pod))
	s.written++
	eventually(t, 2*time.Minute, func() (bool, string) {
		l, err := s.cs.CoreV1().Events(sigkillNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if l.Items[i].ReportingController == sigkillController {
				return true, ""
			}
		}
		return false, "marker " + pod + " not mirrored yet"
	})
}

// watchDrops watches the exporter's objects from now on and returns a
// function that lists every object whose count went down from one version
// to the next. A watch that ends is opened again where it stopped.
func watchDrops(ctx context.Context, t *testing.T, cs kubernetes.Interface) func() []string {
	t.Helper()
	events := cs.CoreV1().Events(sigkillNS)
	l, err := events.List(ctx, metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	var mu sync.Mutex
	var drops []string
	last := map[string]int64{}
	rv := l.ResourceVersion
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	seen := func(ev *corev1.Event) {
		if ev.ReportingController != sigkillController {
			return
		}
		n := k8sevent.CoreV1Occurrences(ev)
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := last[ev.Name]; ok && n < prev {
			drops = append(drops, fmt.Sprintf("%s: %d then %d", ev.Name, prev, n))
		}
		last[ev.Name] = n
	}
	retry := func() { // after a failed request, before the next one
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if rv == "" { // after a watch error: go on from a list
				l, err := events.List(ctx, metav1.ListOptions{})
				if err != nil {
					retry()
					continue
				}
				for i := range l.Items {
					seen(&l.Items[i])
				}
				rv = l.ResourceVersion
			}
			w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				rv = ""
				retry()
				continue
			}
			for e := range w.ResultChan() {
				ev, ok := e.Object.(*corev1.Event)
				if !ok {
					rv = "" // a watch error (410 Gone)
					break
				}
				rv = ev.ResourceVersion
				if e.Type != watch.Deleted {
					seen(ev)
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), drops...)
	}
}
