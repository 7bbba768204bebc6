package main

import (
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
)

// fallback is client-go's own tools/record recorder writing to an API
// server: what the app used before the pipeline, and what takes over when
// the collector stays unreachable.
type fallback struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	sink        *watchedSink
}

// newFallback builds the fallback recorder; qps > 0 lifts client-go's
// client-side rate limit (default 5 QPS, burst 10) to qps with a burst of
// 2*qps, 0 keeps client-go's default.
func newFallback(kubeconfig, controller string, qps float64) (*fallback, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("fallback kubeconfig: %w", err)
	}
	if qps > 0 {
		cfg.QPS, cfg.Burst = float32(qps), int(2*qps)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("fallback client: %w", err)
	}
	f := &fallback{broadcaster: record.NewBroadcaster(), sink: &watchedSink{inner: &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}}}
	f.broadcaster.StartRecordingToSink(f.sink)
	f.recorder = f.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller})
	return f, nil
}

// settleMarker is the Event settle hands to client-go's recorder after
// the app's last one. The recorder's sink takes the events of its watcher
// one at a time, in order, each write with its retries done before the
// next; so the marker reaches the sink only once every earlier event was
// written or given up. The sink swallows it: it is never written.
var settleMarker = &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "fallback-settle-marker", UID: "fallback-settle-marker"}

const settleReason = "FallbackSettled"

// settle waits, at most bound, until client-go's recorder is done with
// every event handed to it: its writes are asynchronous, its Shutdown does
// not wait for them (it drops what is still queued), and after a failed
// write it sleeps 10 s before the retry. Then it shuts the broadcaster
// down. An idle sink is no sign of that: the events may not have reached
// it yet (they did not, on a loaded CI machine, and Shutdown dropped them
// all).
func (f *fallback) settle(bound time.Duration) {
	f.recorder.Event(settleMarker, corev1.EventTypeNormal, settleReason, "every earlier event was handled")
	deadline := time.Now().Add(bound)
	for !f.sink.settled.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	f.broadcaster.Shutdown()
}

// watchedSink is client-go's event sink, watching for settle's marker,
// which it swallows.
type watchedSink struct {
	inner   record.EventSink
	settled atomic.Bool // the marker arrived
}

// marker reports whether e is settle's marker, and notes its arrival.
func (s *watchedSink) marker(e *corev1.Event) bool {
	if e.Reason != settleReason || e.InvolvedObject.UID != settleMarker.UID {
		return false
	}
	s.settled.Store(true)
	return true
}

func (s *watchedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if s.marker(e) {
		return e, nil
	}
	return s.inner.Create(e)
}

func (s *watchedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	if s.marker(e) {
		return e, nil
	}
	return s.inner.Update(e)
}

func (s *watchedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if s.marker(e) {
		return e, nil
	}
	return s.inner.Patch(e, data)
}
