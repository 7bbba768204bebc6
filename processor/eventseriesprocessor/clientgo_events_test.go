package eventseriesprocessor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// recordingSink is the API side of client-go's events broadcaster: it keeps
// the writes the broadcaster decides to make. The decisions are under test
// here, not the API server.
type recordingSink struct {
	mu    sync.Mutex
	calls []string
}

func (s *recordingSink) add(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *recordingSink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func seriesCallKey(ev *eventsv1.Event) string {
	rel := ""
	if ev.Related != nil {
		rel = ev.Related.Name
	}
	return fmt.Sprintf("%s/%s/%s/%s/%s", ev.Regarding.Name, ev.Type, ev.Reason, ev.Action, rel)
}

func (s *recordingSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.add("create " + seriesCallKey(ev))
	return ev, nil
}

func (s *recordingSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.add("update " + seriesCallKey(ev))
	return ev, nil
}

func (s *recordingSink) Patch(_ context.Context, ev *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	count := int32(0)
	if ev.Series != nil {
		count = ev.Series.Count
	}
	s.add(fmt.Sprintf("patch %s series=%d", seriesCallKey(ev), count))
	return ev, nil
}

type seriesStep struct {
	pod, typ, reason, action, note, related string
}

// TestSeriesModeAgreesWithEventsBroadcaster emits one sequence through
// client-go's tools/events recorder and broadcaster and through the
// processor, and compares the writes: create at the first occurrence, a
// patch with series count 2 at the second, nothing after (within
// finish_after). Keys differ by type, reason, action and related object;
// notes differ within a series.
func TestSeriesModeAgreesWithEventsBroadcaster(t *testing.T) {
	steps := []seriesStep{
		{"web-1", "Warning", "BackOff", "Restart", "back-off 10s", ""},
		{"web-1", "Warning", "BackOff", "Restart", "back-off 20s", ""},
		{"web-1", "Warning", "BackOff", "Restart", "back-off 40s", ""},
		{"web-1", "Normal", "BackOff", "Restart", "back-off", ""},
		{"web-2", "Warning", "BackOff", "Restart", "back-off", ""},
		{"web-1", "Warning", "Unhealthy", "Probe", "probe failed", ""},
		{"web-1", "Warning", "Unhealthy", "Probe", "probe failed", "node-1"},
		{"web-1", "Warning", "Unhealthy", "Probe", "probe failed", ""},
		{"web-1", "Warning", "Unhealthy", "Probe", "probe failed", ""},
		{"web-1", "Warning", "BackOff", "Restart", "back-off 80s", ""},
		{"web-2", "Warning", "BackOff", "Restart", "back-off", ""},
		{"web-1", "Warning", "Unhealthy", "Probe", "probe failed", "node-1"},
		{"web-1", "Warning", "BackOff", "Pull", "back-off", ""},
		{"web-1", "Normal", "BackOff", "Restart", "back-off", ""},
		{"web-1", "Warning", "BackOff", "Restart", "back-off 160s", ""},
	}
	const controller = "test-controller"
	host, _ := os.Hostname()
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"web-1", "web-2"} {
		pods[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}}

	// Ours.
	h := newHarness(t, eventTime)
	var want []string
	perStep := make([]int, len(steps))
	for i, s := range steps {
		ev := k8sevent.Event{
			Type: s.typ, Reason: s.reason, Action: s.action, Note: s.note,
			Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: "ns", Name: s.pod, UID: "uid-" + s.pod, APIVersion: "v1"},
			ReportingController: controller, ReportingInstance: controller + "-" + host,
			Time: t0.Add(time.Duration(i) * time.Second),
		}
		if s.related != "" {
			ev.Related = k8sevent.ObjectRef{Kind: "Node", Name: s.related, UID: "uid-" + s.related, APIVersion: "v1"}
		}
		before := len(h.records())
		h.consume(logsOf(ev))
		var calls []string
		for _, r := range h.records()[before:] {
			got := r.event(t)
			key := fmt.Sprintf("%s/%s/%s/%s/%s", got.Regarding.Name, got.Type, got.Reason, got.Action, got.Related.Name)
			switch got.SeriesState {
			case k8sevent.StateSingleton:
				calls = append(calls, "create "+key)
			case k8sevent.StateStarted:
				calls = append(calls, fmt.Sprintf("patch %s series=%d", key, got.SeriesCount))
			default:
				t.Fatalf("step %d: unexpected %s record", i, got.SeriesState)
			}
		}
		want = append(want, calls...)
		perStep[i] = len(calls)
	}

	// client-go's, one step at a time: the recorder hands each event to its
	// own goroutine, so wait for the write the step makes, or for silence.
	sink := &recordingSink{}
	broadcaster := events.NewBroadcaster(sink)
	stop := make(chan struct{})
	defer func() { close(stop); broadcaster.Shutdown() }()
	broadcaster.StartRecordingToSink(stop)
	recorder := broadcaster.NewRecorder(scheme.Scheme, controller)
	// StartRecordingToSink runs client-go's series refresh (its heartbeat,
	// every 30 minutes) once at once, in a goroutine of its own: on a
	// loaded machine that first run came after a series had started and
	// patched it again. The comparison is of the writes the steps make.
	writes := func() []string { return withoutRefreshes(sink.snapshot()) }
	for i, s := range steps {
		var related *corev1.Node
		if s.related != "" {
			related = node
		}
		before := len(writes())
		if related != nil {
			recorder.Eventf(pods[s.pod], related, s.typ, s.reason, s.action, "%s", s.note)
		} else {
			recorder.Eventf(pods[s.pod], nil, s.typ, s.reason, s.action, "%s", s.note)
		}
		// Wait long for a write we expect, briefly for silence; the final
		// comparison catches a write made where we expected none.
		bound := 50 * time.Millisecond
		if perStep[i] > 0 {
			bound = 5 * time.Second
		}
		if waitFor(func() bool { return len(writes()) > before }, bound) {
			require.Less(t, len(writes())-before, 2, "step %d: at most one write", i)
		}
	}
	waitFor(func() bool { return false }, 200*time.Millisecond) // let a late write show
	assert.Equal(t, want, writes())
	assert.Len(t, want, 11, "6 creates and 5 series starts in the sequence")
}

// withoutRefreshes drops each patch of a key already patched: client-go's
// refresh of an open series. Within the steps, a series is patched once,
// when it starts; later occurrences only count in client-go's cache.
func withoutRefreshes(calls []string) []string {
	patched := map[string]bool{}
	var out []string
	for _, c := range calls {
		if rest, ok := strings.CutPrefix(c, "patch "); ok {
			key, _, _ := strings.Cut(rest, " series=")
			if patched[key] {
				continue
			}
			patched[key] = true
		}
		out = append(out, c)
	}
	return out
}

// waitFor polls cond until it holds or the bound passes.
func waitFor(cond func() bool, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}
