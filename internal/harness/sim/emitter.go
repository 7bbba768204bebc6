package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// EmitStyle is how a component of the cluster records a series of
// occurrences as Event objects.
type EmitStyle int

const (
	// StyleCount: one core/v1 Event whose count grows (client-go's
	// tools/record after its correlator).
	StyleCount EmitStyle = iota
	// StyleSeries: one events.k8s.io/v1 Event whose series grows
	// (client-go's tools/events).
	StyleSeries
	// StyleEach: every occurrence an Event object of its own.
	StyleEach
)

func (s EmitStyle) String() string {
	return [...]string{"count", "series", "each"}[s]
}

// SourceSeries is what one component of the cluster keeps recording about
// one object: the same reason, controller and note.
type SourceSeries struct {
	Namespace, Pod, Reason, Controller string
	Style                              EmitStyle
}

func (s SourceSeries) key() seriesKey {
	return seriesKey{Namespace: s.Namespace, Kind: "Pod", Name: s.Pod, Reason: s.Reason, Controller: s.Controller}
}

// emitters are the cluster's own components, writing their Events straight
// to the API server (no faults: the faults are the collectors').
type emitters struct {
	w      *World
	series []SourceSeries
	state  []emitState
	stamps int64 // occurrences stamped so far
}

type emitState struct {
	name  string // the current object (StyleCount, StyleSeries)
	count int32  // its count so far
	made  int    // objects made (StyleEach)
}

func newEmitters(w *World) *emitters { return &emitters{w: w} }

func (e *emitters) add(s SourceSeries) int {
	e.series = append(e.series, s)
	e.state = append(e.state, emitState{})
	return len(e.series) - 1
}

// emit records n occurrences of series i now (a component recording n
// occurrences between two writes folds them into one, as client-go's
// correlator does).
func (e *emitters) emit(ctx context.Context, i, n int) error {
	s, st := e.series[i], &e.state[i]
	now := time.Now()
	if e.w.shape != ShapeMirror {
		evs := make([]k8sevent.Event, n)
		for j := range evs {
			e.stamps++ // an app stamps each occurrence with the nanosecond it happened: never two alike
			evs[j] = appEvent(s, now.Add(time.Duration(e.stamps)))
		}
		e.w.app(s.Controller).send(evs)
		return nil
	}
	var err error
	switch s.Style {
	case StyleCount:
		err = e.emitCount(ctx, s, st, i, n, now)
	case StyleSeries:
		err = e.emitSeries(ctx, s, st, i, n, now)
	case StyleEach:
		for range n {
			st.made++
			name := fmt.Sprintf("%s.each-%d-%d", s.Pod, i, st.made)
			ev := coreEvent(s, name, 1, now)
			if _, err = e.w.admin.CoreV1().Events(s.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("emit %d occurrences of %s/%s %s: %w", n, s.Namespace, s.Pod, s.Reason, err)
	}
	e.w.ledger.made(s.key(), n, now)
	return nil
}

// send is one app's request with one occurrence of each of series.
func (e *emitters) send(series []int) error {
	if e.w.shape == ShapeMirror || len(series) == 0 {
		return errors.New("send: only apps send requests, of at least one series")
	}
	var evs []k8sevent.Event
	app := ""
	for _, i := range series {
		if i >= len(e.series) {
			return fmt.Errorf("send: no series %d", i)
		}
		s := e.series[i]
		if app != "" && s.Controller != app {
			return fmt.Errorf("send: series %d is %s's, not %s's", i, s.Controller, app)
		}
		app = s.Controller
		e.stamps++
		evs = append(evs, appEvent(s, time.Now().Add(time.Duration(e.stamps))))
	}
	e.w.app(app).send(evs)
	return nil
}

func (e *emitters) emitCount(ctx context.Context, s SourceSeries, st *emitState, i, n int, now time.Time) error {
	events := e.w.admin.CoreV1().Events(s.Namespace)
	if st.name == "" {
		st.name = fmt.Sprintf("%s.%s-%d", s.Pod, strings.ToLower(s.Reason), i)
		st.count = int32(n)
		_, err := events.Create(ctx, coreEvent(s, st.name, st.count, now), metav1.CreateOptions{})
		return err
	}
	ev, err := events.Get(ctx, st.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	st.count += int32(n)
	ev.Count, ev.LastTimestamp = st.count, metav1.NewTime(now)
	_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
	return err
}

func (e *emitters) emitSeries(ctx context.Context, s SourceSeries, st *emitState, i, n int, now time.Time) error {
	events := e.w.admin.EventsV1().Events(s.Namespace)
	if st.name == "" {
		st.name = fmt.Sprintf("%s.%s-%d", s.Pod, strings.ToLower(s.Reason), i)
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: st.name, Namespace: s.Namespace},
			EventTime:  metav1.NewMicroTime(now), Type: corev1.EventTypeNormal, Reason: s.Reason, Action: "Observed",
			Note: "sim: " + s.Reason, ReportingController: s.Controller, ReportingInstance: s.Controller + "-node-1",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: s.Namespace, Name: s.Pod, UID: types.UID(podUID(s)), APIVersion: "v1"},
		}
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			return err
		}
		st.count, n = 1, n-1
		if n == 0 {
			return nil
		}
	}
	ev, err := events.Get(ctx, st.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	st.count += int32(n)
	ev.Series = &eventsv1.EventSeries{Count: st.count, LastObservedTime: metav1.NewMicroTime(now)}
	_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
	return err
}

func coreEvent(s SourceSeries, name string, count int32, now time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: s.Namespace, Name: s.Pod, UID: types.UID(podUID(s)), APIVersion: "v1"},
		Reason:         s.Reason, Message: "sim: " + s.Reason, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: s.Controller, Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: count,
		ReportingController: s.Controller, ReportingInstance: s.Controller + "-node-1",
	}
}

// appEvent is one occurrence as an app records it: an Event of its own,
// stamped with the time it happened.
func appEvent(s SourceSeries, at time.Time) k8sevent.Event {
	return k8sevent.Event{Type: k8sevent.TypeNormal, Reason: s.Reason, Action: "Observed", Note: "sim: " + s.Reason,
		Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: s.Namespace, Name: s.Pod, UID: podUID(s), APIVersion: "v1"},
		ReportingController: "example.com/" + s.Controller, ReportingInstance: s.Controller + "-0", Time: at}
}

func podUID(s SourceSeries) string { return "uid-" + s.Namespace + "-" + s.Pod }
