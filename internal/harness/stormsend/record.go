package stormsend

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// Recorders Record drives.
const (
	RecorderLegacy = "record" // k8s.io/client-go/tools/record, core/v1
	RecorderEvents = "events" // k8s.io/client-go/tools/events, events.k8s.io/v1 series
)

const (
	// maxBacklog bounds what a legacy recorder holds but has not correlated
	// yet. Its broadcaster drops events beyond 1000 queued ones; a replay
	// far faster than a real component would otherwise measure the queue,
	// not the correlator.
	maxBacklog = 500
	// The recorders write asynchronously; Record waits until no write has
	// been made for quietWindow and, once a write failed in a way client-go
	// retries after a sleep of 10 s (±25% in tools/events), until that
	// sleep is surely over: at most maxSettle.
	quietWindow = 2 * time.Second
	retrySleep  = 13 * time.Second
	maxSettle   = 60 * time.Second
)

// source is one emitting component: a broadcaster and its recorder.
type source interface {
	emit(ctx context.Context, o *storm.Occurrence) error
	idle() bool // everything emitted has been taken by the recorder's sink side
	shutdown()
}

// Record hands the occurrences to client-go's own recorders, one
// broadcaster and recorder per (controller, instance) as each component
// has its own, and counts the API writes they make. recorder "record" is
// tools/record (core/v1, with its EventCorrelator: aggregation, spam
// filter, count patches); "events" is tools/events (events.k8s.io/v1
// series). The recorders stamp events with the wall time when they are
// handed over, so Restamp changes nothing here. Record waits (at most a
// minute, after the replay) until the recorders have written what they
// were given, then shuts them down.
func Record(ctx context.Context, cfg *rest.Config, occs []storm.Occurrence, opts Options, recorder string) (Stats, error) {
	if recorder != RecorderLegacy && recorder != RecorderEvents {
		return Stats{}, fmt.Errorf("recorder %q: want %q or %q", recorder, RecorderLegacy, RecorderEvents)
	}
	r, err := newReplay(occs, opts)
	if err != nil {
		return Stats{}, err
	}
	cs, err := clientFor(cfg, &r.c)
	if err != nil {
		return r.finish(ctx, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sources := map[[2]string]source{}
	var loopErr error
	for i := range r.occs {
		if loopErr = r.wait(ctx, i); loopErr != nil {
			break
		}
		o := &r.occs[i]
		k := [2]string{o.Controller, o.Instance}
		s := sources[k]
		if s == nil {
			if s, loopErr = newSource(sctx, cs, recorder, o.Controller, o.Instance); loopErr != nil {
				break
			}
			sources[k] = s
		}
		if o.Type != corev1.EventTypeNormal && o.Type != corev1.EventTypeWarning {
			r.c.failures.Add(1) // both recorders drop it with a log line
			continue
		}
		if loopErr = s.emit(ctx, o); loopErr != nil {
			break
		}
		r.c.occurrences.Add(1)
	}
	r.settle(ctx, sources)
	for _, s := range sources {
		s.shutdown()
	}
	return r.finish(ctx, loopErr)
}

func newSource(ctx context.Context, cs kubernetes.Interface, recorder, controller, instance string) (source, error) {
	if recorder == RecorderLegacy {
		return newLegacySource(ctx, cs, controller, instance), nil
	}
	return newEventsSource(ctx, cs, controller)
}

// settle waits until the recorders are done: every legacy recorder has
// correlated all it was given, no event write has been under way or made
// for the quiet window, and no retry is pending. Bounded by maxSettle and ctx.
func (r *replay) settle(ctx context.Context, sources map[[2]string]source) {
	deadline := time.Now().Add(maxSettle)
	last, quietSince := int64(-1), time.Now()
	for time.Now().Before(deadline) {
		busy := r.c.inflight.Load() > 0
		for _, s := range sources {
			busy = busy || !s.idle()
		}
		if n := r.c.writes.Load() + r.c.failures.Load(); n != last || busy {
			last, quietSince = n, time.Now()
		}
		quiet := time.Since(quietSince) >= quietWindow && time.Since(time.Unix(0, r.c.lastRetried.Load())) >= retrySleep
		if quiet || ctxwait.Sleep(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
}

func objectRef(r storm.Ref) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: types.UID(r.UID), APIVersion: r.APIVersion, FieldPath: r.FieldPath}
}

// legacySource is a tools/record broadcaster writing to core/v1 Events.
type legacySource struct {
	b      record.EventBroadcaster
	rec    record.EventRecorder
	handed int64        // by the replay loop only
	taken  atomic.Int64 // by the correlator
}

func newLegacySource(ctx context.Context, cs kubernetes.Interface, controller, instance string) *legacySource {
	s := &legacySource{}
	s.b = record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		// The default aggregation key, counted: the correlator computes it
		// once for every event it takes off the queue.
		KeyFunc: func(ev *corev1.Event) (string, string) {
			s.taken.Add(1)
			return record.EventAggregatorByReasonFunc(ev)
		},
	}))
	s.b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	s.rec = s.b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller, Host: instance})
	return s
}

func (s *legacySource) emit(ctx context.Context, o *storm.Occurrence) error {
	for s.handed-s.taken.Load() >= maxBacklog {
		if err := ctxwait.Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	s.rec.Event(objectRef(o.Regarding), o.Type, o.Reason, o.Note) // Event, not Eventf: a note may hold '%'
	s.handed++
	return nil
}

func (s *legacySource) idle() bool { return s.taken.Load() >= s.handed }

func (s *legacySource) shutdown() { s.b.Shutdown() }

// eventsSource is a tools/events broadcaster writing events.k8s.io/v1
// series. Its reporting instance is "<controller>-<hostname>": tools/events
// does not let a caller choose it.
type eventsSource struct {
	b   events.EventBroadcaster
	rec events.EventRecorder
}

func newEventsSource(ctx context.Context, cs kubernetes.Interface, controller string) (*eventsSource, error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("events recorder for %s: %w", controller, err)
	}
	return &eventsSource{b: b, rec: b.NewRecorder(scheme.Scheme, controller)}, nil
}

func (s *eventsSource) emit(_ context.Context, o *storm.Occurrence) error {
	action := o.Action
	if action == "" {
		action = o.Reason // events.k8s.io requires one; the exporter makes the same choice
	}
	var related runtime.Object // a nil *ObjectReference would not be a nil interface
	if o.Related != nil {
		related = objectRef(*o.Related)
	}
	s.rec.Eventf(objectRef(o.Regarding), related, o.Type, o.Reason, action, "%s", o.Note)
	return nil
}

// idle: tools/events hands every event to a goroutine of its own; only the
// writes they make tell when they are done.
func (s *eventsSource) idle() bool { return true }

func (s *eventsSource) shutdown() { s.b.Shutdown() }
