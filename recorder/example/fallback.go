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

// settle waits, at most bound, until client-go's recorder is done
// writing: its writes are asynchronous, its Shutdown does not wait for
// them, and after a failed write it sleeps 10 s before the retry. Then it
// shuts the broadcaster down.
func (f *fallback) settle(bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		idle := f.sink.inflight.Load() == 0 && time.Since(time.Unix(0, f.sink.lastCall.Load())) >= 2*time.Second
		if idle && time.Since(time.Unix(0, f.sink.lastFailure.Load())) >= 13*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.broadcaster.Shutdown()
}

// watchedSink is client-go's event sink, watched: writes under way, the
// time of the last one and of the last failure.
type watchedSink struct {
	inner                 record.EventSink
	inflight              atomic.Int64
	lastCall, lastFailure atomic.Int64 // Unix ns
}

func (s *watchedSink) track(ev *corev1.Event, err error) (*corev1.Event, error) {
	now := time.Now().UnixNano()
	s.lastCall.Store(now)
	if err != nil {
		s.lastFailure.Store(now)
	}
	s.inflight.Add(-1)
	return ev, err
}

func (s *watchedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.inflight.Add(1)
	return s.track(s.inner.Create(e))
}

func (s *watchedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.inflight.Add(1)
	return s.track(s.inner.Update(e))
}

func (s *watchedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.inflight.Add(1)
	return s.track(s.inner.Patch(e, data))
}
