package k8seventsreceiver

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

// rig is a real API server and what the tests need around it.
type rig struct {
	srv        *kubetest.Server
	cs         *kubernetes.Clientset
	kubeconfig string
	tel        *componenttest.Telemetry // of the receiver started last
}

func newRig(t *testing.T, opts ...kubetest.Option) *rig {
	srv := kubetest.Start(t, opts...)
	return &rig{srv: srv, cs: srv.Clientset(), kubeconfig: srv.Kubeconfig(t)}
}

// host hands extensions to a receiver.
type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// start runs a receiver built by the factory into a sink until the test ends.
func (r *rig) start(t *testing.T, h host, mutate func(*Config)) (*k8seventsReceiver, *consumertest.LogsSink) {
	t.Helper()
	sink := new(consumertest.LogsSink)
	return r.startInto(t, h, r.kubeconfig, sink, mutate), sink
}

// startWith runs a receiver on another kubeconfig (another user, a proxy).
func (r *rig) startWith(t *testing.T, kubeconfig string, mutate func(*Config)) (*k8seventsReceiver, *consumertest.LogsSink) {
	t.Helper()
	sink := new(consumertest.LogsSink)
	return r.startInto(t, host{}, kubeconfig, sink, mutate), sink
}

// startInto runs a receiver on kubeconfig that emits into next.
func (r *rig) startInto(t *testing.T, h host, kubeconfig string, next consumer.Logs, mutate func(*Config)) *k8seventsReceiver {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	r.tel = componenttest.NewTelemetry()
	t.Cleanup(func() { _ = r.tel.Shutdown(context.Background()) })
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	set.ID = component.NewID(metadata.Type) // stable, as in a collector: the storage client is per ID
	rcv, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), h))
	t.Cleanup(func() { require.NoError(t, rcv.Shutdown(context.Background())) })
	return rcv.(*k8seventsReceiver)
}

// watching waits until the receiver's watches are established, so that what
// the test does next happens after its start (initial: none).
func watching(t *testing.T, rcv *k8seventsReceiver) {
	t.Helper()
	require.Eventually(t, rcv.watching, 30*time.Second, 10*time.Millisecond, "receiver watching")
}

// watching reports whether the receiver watches: every watch open, as its
// watches_open gauge shows.
func (r *k8seventsReceiver) watching() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancel != nil && r.openWatches.Load() == int64(len(r.watchers))
}

func (r *rig) namespace(t *testing.T, name string) {
	t.Helper()
	_, err := r.cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
}

// coreRecorder is client-go's tools/record recorder writing to the API server.
func (r *rig) coreRecorder(t *testing.T, component string) record.EventRecorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component, Host: "node-1"})
}

// eventsRecorder is client-go's tools/events recorder writing to the API server.
func (r *rig) eventsRecorder(t *testing.T, controller string) events.EventRecorder {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: r.cs.EventsV1()})
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); b.Shutdown() })
	return b.NewRecorder(scheme.Scheme, controller)
}

// createEvents writes n core/v1 Events in ns directly, one object each.
func (r *rig) createEvents(t *testing.T, ns, prefix string, n int) {
	t.Helper()
	for i := range n {
		now := metav1.Now()
		_, err := r.cs.CoreV1().Events(ns).Create(context.Background(), &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i), APIVersion: "v1"},
			Reason:         "Scheduled", Message: "assigned", Type: corev1.EventTypeNormal, Count: 1,
			Source:         corev1.EventSource{Component: "default-scheduler"},
			FirstTimestamp: now, LastTimestamp: now,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// received decodes every record the sink holds; each must carry an Event.
func received(t *testing.T, sink *consumertest.LogsSink) []k8sevent.Event {
	evs, others := decodeAll(sink)
	require.Zero(t, others, "records that carry no Event")
	return evs
}

// decodeAll decodes every record the sink holds, from any goroutine, and
// counts those that carry no Event.
func decodeAll(sink *consumertest.LogsSink) (evs []k8sevent.Event, others int) {
	for _, ld := range sink.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			for j := range rl.ScopeLogs().Len() {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := range lrs.Len() {
					ev, _, found := k8sevent.Decode(rl.Resource(), lrs.At(k), k8sevent.DecodeOptions{})
					if !found {
						others++
						continue
					}
					evs = append(evs, ev)
				}
			}
		}
	}
	return evs, others
}

// waitReceived waits (bounded) until the sink holds at least n records.
func waitReceived(t *testing.T, sink *consumertest.LogsSink, n int) []k8sevent.Event {
	t.Helper()
	require.Eventually(t, func() bool { return sink.LogRecordCount() >= n }, 60*time.Second, 20*time.Millisecond,
		"waiting for %d records, have %d", n, sink.LogRecordCount())
	return received(t, sink)
}

// settle waits a little for records that should not come, then returns all.
func settle(t *testing.T, sink *consumertest.LogsSink) []k8sevent.Event {
	time.Sleep(time.Second)
	return received(t, sink)
}

func names(evs []k8sevent.Event) []string {
	out := make([]string, len(evs))
	for i := range evs {
		out[i] = evs[i].Name
	}
	sort.Strings(out)
	return out
}
