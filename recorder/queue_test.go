package recorder

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	crrecorder "sigs.k8s.io/controller-runtime/pkg/recorder"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// The Recorder is a controller-runtime recorder.Provider (v0.24.1).
var _ crrecorder.Provider = (*Recorder)(nil)

// TestCallsNeverWaitForTheCollector: with the exporter stuck (a collector
// that does not answer), 1,000 calls all return, the queue holds at most
// QueueSize, every other call is dropped and counted, and no goroutine is
// started by a call. Released, everything accepted is sent, in order.
func TestCallsNeverWaitForTheCollector(t *testing.T) {
	exp := &memExporter{gate: make(chan struct{})}
	r := newTestRecorder(t, exp, func(o *Options) { o.QueueSize, o.MaxBatch = 10, 5 })
	rec := r.EventsRecorder(nil, "")
	// The worker holds its first batch inside the stuck export.
	rec.Eventf(testPod("p"), nil, corev1.EventTypeNormal, "Started", "Start", "occurrence %d", 0)
	waitFor(t, func() bool { return exp.exportCalls() == 1 })
	goroutines := runtime.NumGoroutine()
	for i := 1; i < 1000; i++ {
		rec.Eventf(testPod("p"), nil, corev1.EventTypeNormal, "Started", "Start", "occurrence %d", i)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("goroutines %d after the calls, %d before", n, goroutines)
	}
	s := r.Stats()
	if s.Accepted != 1+10 || s.Dropped != 1000-11 || r.Dropped() != s.Dropped || s.MaxQueue != 10 {
		t.Errorf("stats %+v: want 11 accepted (1 in the export, 10 queued), 989 dropped", s)
	}
	checkAccounting(t, s)

	close(exp.gate)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := exp.got()
	if len(recs) != 11 {
		t.Fatalf("%d records sent, want 11", len(recs))
	}
	for i := range recs {
		if want := fmt.Sprintf("occurrence %d", i); recs[i].Body().Emit() != want {
			t.Errorf("record %d: %q, want %q (queue order)", i, recs[i].Body().Emit(), want)
		}
	}
	s = r.Stats()
	checkAccounting(t, s)
	if s.Sent != 11 || s.Pending != 0 || s.Lost != 0 {
		t.Errorf("after shutdown %+v", s)
	}
}

// TestShutdownFlushesEverything: what was accepted before Shutdown is
// exported by it, and calls after it are dropped, counted.
func TestShutdownFlushesEverything(t *testing.T) {
	exp := &memExporter{}
	r := newTestRecorder(t, exp, func(o *Options) { o.MaxBatch = 7 })
	rec := r.LegacyRecorder(nil, "")
	for i := range 100 {
		rec.Eventf(testPod(fmt.Sprintf("p%d", i%3)), corev1.EventTypeWarning, "BackOff", "n=%d", i)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.Event(testPod("late"), corev1.EventTypeNormal, "Late", "after shutdown")
	s := r.Stats()
	if len(exp.got()) != 100 || s.Sent != 100 || s.Dropped != 1 {
		t.Errorf("%d records, stats %+v: want 100 sent, the late call dropped", len(exp.got()), s)
	}
	checkAccounting(t, s)
}

// TestOutageBuffersRetriesAndDelivers: while the collector fails, the
// Recorder keeps retrying the batch in hand and buffers up to the bound;
// when it answers again, every accepted event arrives once, in order.
func TestOutageBuffersRetriesAndDelivers(t *testing.T) {
	exp := &memExporter{fail: true}
	r := newTestRecorder(t, exp, func(o *Options) { o.QueueSize, o.MaxBatch = 50, 10 })
	rec := r.EventsRecorder(nil, "")
	for i := range 40 {
		rec.Eventf(testPod("p"), nil, corev1.EventTypeNormal, "Pulled", "Pull", "%d", i)
	}
	waitFor(t, func() bool { return r.Stats().Failures >= 2 })
	exp.mu.Lock()
	exp.fail = false
	exp.mu.Unlock()
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := exp.got()
	if len(recs) != 40 {
		t.Fatalf("%d records, want 40", len(recs))
	}
	for i := range recs {
		if recs[i].Body().Emit() != fmt.Sprint(i) {
			t.Fatalf("record %d is %q: order lost", i, recs[i].Body().Emit())
		}
	}
	checkAccounting(t, r.Stats())
}

// TestShutdownDeadlineCountsLost: a collector down past Shutdown's context
// leaves the queued events lost, counted and reported; Shutdown returns
// although the worker was in the middle of retrying.
func TestShutdownDeadlineCountsLost(t *testing.T) {
	exp := &memExporter{fail: true}
	r := newTestRecorder(t, exp, nil)
	for i := range 25 {
		r.LegacyRecorder(nil, "").Eventf(testPod("p"), corev1.EventTypeNormal, "Pulled", "%d", i)
	}
	waitFor(t, func() bool { return r.Stats().Failures >= 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "25 events not exported") {
		t.Errorf("shutdown error %v", err)
	}
	if s := r.Stats(); s.Lost != 25 || s.Sent != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestFallbackTakesOverWhileDown: with a fallback recorder, what the
// collector cannot take after FallbackAfter goes to it, in order, from the
// Recorder's goroutine.
func TestFallbackTakesOverWhileDown(t *testing.T) {
	exp := &memExporter{fail: true}
	fake := record.NewFakeRecorder(100)
	r := newTestRecorder(t, exp, func(o *Options) { o.Fallback, o.FallbackAfter = fake, 1 })
	for i := range 30 {
		r.LegacyRecorder(nil, "").Eventf(testPod("p"), corev1.EventTypeWarning, "BackOff", "n=%d", i)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.FellBack != 30 || s.Sent != 0 || len(fake.Events) != 30 {
		t.Fatalf("stats %+v, fallback got %d", s, len(fake.Events))
	}
	for i := range 30 {
		if got, want := <-fake.Events, fmt.Sprintf("Warning BackOff n=%d", i); got != want {
			t.Errorf("fallback event %d: %q, want %q", i, got, want)
		}
	}
}

// waitFor polls cond (a condition, not a duration) for at most a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached")
		case <-time.After(time.Millisecond):
		}
	}
}
