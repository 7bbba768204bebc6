package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// outputSelector selects what the pipeline wrote (core/v1 spelling).
const outputSelector = "reportingComponent=" + controller

// writeCounter counts the pipeline's API writes per Event object by
// watching them: every create and every patch that changes the object is
// one ADDED or MODIFIED. The exporter's own metric counts writes too, but
// not per scenario.
type writeCounter struct {
	mu       sync.Mutex
	byObject map[string]int64 // "namespace/name"
	total    int64
	last     time.Time // when the last write was seen
	err      error     // why the watch ended early, if it did
	cancel   context.CancelFunc
	done     chan struct{}
}

// watchWrites starts counting the writes made from now on, until stop or
// the end of ctx.
func watchWrites(ctx context.Context, cs kubernetes.Interface) (*writeCounter, error) {
	list, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: outputSelector, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("list output events: %w", err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = outputSelector
		return cs.CoreV1().Events("").Watch(ctx, opts)
	}}
	ctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch output events: %w", err)
	}
	w := &writeCounter{byObject: map[string]int64{}, last: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer func() { rw.Stop(); <-rw.Done() }()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					w.fail(fmt.Errorf("output watch closed"))
					return
				}
				w.observe(ev)
			}
		}
	}()
	return w, nil
}

func (w *writeCounter) observe(ev watch.Event) {
	switch ev.Type {
	case watch.Added, watch.Modified:
		e, ok := ev.Object.(*corev1.Event)
		if !ok {
			return
		}
		w.mu.Lock()
		w.byObject[e.Namespace+"/"+e.Name]++
		w.total++
		w.last = time.Now()
		w.mu.Unlock()
	case watch.Error:
		w.fail(fmt.Errorf("output watch: %v", ev.Object))
	}
}

func (w *writeCounter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// snapshot returns the writes per object and in total, and the watch's error.
func (w *writeCounter) snapshot() (map[string]int64, int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]int64, len(w.byObject))
	for k, v := range w.byObject {
		m[k] = v
	}
	return m, w.total, w.err
}

// waitQuiet waits until no write has been seen for quiet, at most bound.
func (w *writeCounter) waitQuiet(ctx context.Context, quiet, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		idle := time.Since(w.last)
		w.mu.Unlock()
		if idle >= quiet {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the watch; it must come before the API server stops, or the
// watch logs its failed reconnections.
func (w *writeCounter) stop() {
	w.cancel()
	<-w.done
}
